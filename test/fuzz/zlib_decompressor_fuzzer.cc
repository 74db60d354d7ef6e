// Fuzzes transport/compression's zlib decompressors with arbitrary
// "compressed" messages from a peer: every input yields OK, INTERNAL or
// RESOURCE_EXHAUSTED, the output never exceeds the limit, a failed call
// leaves the output as it was, and the codecs keep working afterwards (the
// same long-lived state decodes a valid message right after).
//
// Input: byte 0 picks the algorithm (bit 0: gzip, else deflate) and the
// limit (bits 1-3: 0 B to 1 MiB); the rest is the message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "transport/compression/zlib_codec.h"

namespace {

using h2rpc::CompressionAlgorithm;
using h2rpc::StatusCode;
using h2rpc::transport::compression::ZlibCompressor;
using h2rpc::transport::compression::ZlibDecompressor;

void Check(bool ok) {
  if (!ok) std::abort();
}

constexpr size_t kLimits[] = {0, 1, 5, 100, 1024, 16384, 65536, 1 << 20};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const CompressionAlgorithm algorithm = (data[0] & 1)
                                             ? CompressionAlgorithm::kGzip
                                             : CompressionAlgorithm::kDeflate;
  const size_t limit = kLimits[(data[0] >> 1) & 7];
  const absl::string_view message(reinterpret_cast<const char*>(data + 1),
                                  size - 1);

  // Long-lived, as on a connection: reused for every input of this run.
  static ZlibDecompressor* deflate =
      new ZlibDecompressor(CompressionAlgorithm::kDeflate);
  static ZlibDecompressor* gzip =
      new ZlibDecompressor(CompressionAlgorithm::kGzip);
  ZlibDecompressor* decompressor =
      algorithm == CompressionAlgorithm::kGzip ? gzip : deflate;

  std::string out = "keep";
  const auto status = decompressor->Decompress(message, limit, &out);
  const StatusCode code = status.code();
  Check(code == StatusCode::kOk || code == StatusCode::kInternal ||
        code == StatusCode::kResourceExhausted);
  if (status.ok()) {
    Check(out.size() - 4 <= limit);
    Check(out.compare(0, 4, "keep") == 0);
  } else {
    Check(out == "keep");
  }

  // The state is reset for the next message: a valid one still decodes.
  static ZlibCompressor* deflate_out =
      new ZlibCompressor(CompressionAlgorithm::kDeflate);
  static ZlibCompressor* gzip_out =
      new ZlibCompressor(CompressionAlgorithm::kGzip);
  ZlibCompressor* compressor =
      algorithm == CompressionAlgorithm::kGzip ? gzip_out : deflate_out;
  std::string compressed;
  Check(compressor->Compress("hello, again", &compressed).ok());
  std::string plain;
  Check(decompressor->Decompress(compressed, 64, &plain).ok());
  Check(plain == "hello, again");
  return 0;
}
