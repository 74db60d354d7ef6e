#include "transport/compression/thread_codecs.h"

#include <memory>
#include <utility>

#include "transport/compression/zlib_codec.h"
#include "transport/core/message_framer.h"

namespace h2rpc::transport::compression {
namespace {

ZlibCodecPool& ThisThreadPool() {
  // One codec per kind and algorithm is all a thread ever uses at once.
  thread_local ZlibCodecPool pool(/*max_idle=*/1);
  return pool;
}

std::string& ThisThreadScratch() {
  thread_local std::string scratch;
  if (scratch.capacity() > kMaxRetainedScratch) {
    std::string().swap(scratch);
  } else {
    scratch.clear();
  }
  return scratch;
}

}  // namespace

Status AppendCompressedFramedMessage(absl::string_view message,
                                     CompressionAlgorithm algorithm,
                                     size_t max_send_message_size,
                                     std::string* out) {
  if (algorithm == CompressionAlgorithm::kIdentity) {
    return AppendFramedMessage(message, /*compressed=*/false,
                               max_send_message_size, out);
  }
  Status status = CheckSendMessageSize(message.size(), max_send_message_size);
  if (!status.ok()) return status;
  const size_t start = out->size();
  out->resize(start + kMessagePrefixSize);
  ZlibCodecPool& pool = ThisThreadPool();
  std::unique_ptr<MessageCompressor> compressor =
      pool.AcquireCompressor(algorithm);
  status = compressor->Compress(message, out);
  pool.Release(std::move(compressor));
  const size_t compressed_size = out->size() - start - kMessagePrefixSize;
  if (!status.ok() || compressed_size >= message.size()) {
    out->resize(start);
    if (!status.ok()) return status;
    return AppendFramedMessage(message, /*compressed=*/false,
                               max_send_message_size, out);
  }
  EncodeMessagePrefix(/*compressed=*/true,
                      static_cast<uint32_t>(compressed_size),
                      out->data() + start);
  return status;
}

Status DecompressMessage(absl::string_view message,
                         CompressionAlgorithm algorithm, size_t max_output,
                         absl::string_view* out) {
  std::string& scratch = ThisThreadScratch();
  ZlibCodecPool& pool = ThisThreadPool();
  std::unique_ptr<MessageDecompressor> decompressor =
      pool.AcquireDecompressor(algorithm);
  if (decompressor == nullptr) {
    return Status(StatusCode::kInternal,
                  "a compressed message arrived with grpc-encoding identity");
  }
  Status status = decompressor->Decompress(message, max_output, &scratch);
  pool.Release(std::move(decompressor));
  *out = scratch;
  return status;
}

}  // namespace h2rpc::transport::compression
