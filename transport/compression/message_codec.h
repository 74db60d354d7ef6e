#ifndef H2RPC_TRANSPORT_COMPRESSION_MESSAGE_CODEC_H_
#define H2RPC_TRANSPORT_COMPRESSION_MESSAGE_CODEC_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "base/compression_algorithm.h"
#include "base/status.h"

namespace h2rpc::transport::compression {

// Compresses whole gRPC messages, one at a time, keeping its state between
// messages. An algorithm is one implementation of this interface and of
// MessageDecompressor. Not thread-safe.
class MessageCompressor {
 public:
  virtual ~MessageCompressor() = default;

  virtual CompressionAlgorithm algorithm() const = 0;

  // Appends the compressed form of `in` to `*out`. Makes no heap allocation
  // when `*out` already has the capacity the output needs (and the codec is
  // warm).
  virtual Status Compress(absl::string_view in, std::string* out) = 0;
};

// Decompresses whole gRPC messages, one at a time. Not thread-safe.
class MessageDecompressor {
 public:
  virtual ~MessageDecompressor() = default;

  virtual CompressionAlgorithm algorithm() const = 0;

  // Appends the decompressed form of `in` to `*out`.
  //
  // If the decompressed message would be longer than `max_output` bytes,
  // stops and returns RESOURCE_EXHAUSTED naming the limit; memory allocated
  // for the output stays at about `max_output` (plus a small constant)
  // whatever `in` claims. Corrupt or truncated input, or bytes after the end
  // of the compressed stream, give INTERNAL. On error `*out` is left as it
  // was.
  virtual Status Decompress(absl::string_view in, size_t max_output,
                            std::string* out) = 0;
};

// "decompressed message exceeds the limit of N bytes
// (max_receive_message_size)".
Status DecompressedSizeExceeded(size_t max_output);

}  // namespace h2rpc::transport::compression

#endif  // H2RPC_TRANSPORT_COMPRESSION_MESSAGE_CODEC_H_
