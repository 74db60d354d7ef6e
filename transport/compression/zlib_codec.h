#ifndef H2RPC_TRANSPORT_COMPRESSION_ZLIB_CODEC_H_
#define H2RPC_TRANSPORT_COMPRESSION_ZLIB_CODEC_H_

#include <zlib.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/compression_algorithm.h"
#include "base/status.h"
#include "transport/compression/message_codec.h"

namespace h2rpc::transport::compression {

// zlib's default compression level (6).
inline constexpr int kZlibCompressionLevel = Z_DEFAULT_COMPRESSION;

// Owns the blocks zlib allocates for one z_stream (through zalloc/zfree,
// which go through operator new). Freed blocks are kept on a small free-list
// and handed back for a request of the same size, so re-initialising a stream
// costs no allocation; everything is released with the arena.
class ZlibArena {
 public:
  ZlibArena() = default;
  ZlibArena(const ZlibArena&) = delete;
  ZlibArena& operator=(const ZlibArena&) = delete;
  ~ZlibArena();

  // Sets strm->zalloc, zfree and opaque to use this arena.
  void Install(z_stream* strm);

 private:
  static void* Alloc(void* opaque, uInt items, uInt size);
  static void Free(void* opaque, void* address);

  struct Block {
    void* address = nullptr;
    size_t size = 0;
    bool in_use = false;
  };
  // deflate allocates 5 blocks, inflate 2.
  static constexpr int kMaxBlocks = 8;
  std::array<Block, kMaxBlocks> blocks_;
};

// "deflate" (zlib format) or "gzip" compression with one long-lived
// deflate stream, reset (deflateReset) between messages.
class ZlibCompressor final : public MessageCompressor {
 public:
  // `algorithm` is kDeflate or kGzip.
  explicit ZlibCompressor(CompressionAlgorithm algorithm,
                          int level = kZlibCompressionLevel);
  ~ZlibCompressor() override;
  ZlibCompressor(const ZlibCompressor&) = delete;
  ZlibCompressor& operator=(const ZlibCompressor&) = delete;

  CompressionAlgorithm algorithm() const override { return algorithm_; }
  Status Compress(absl::string_view in, std::string* out) override;

 private:
  const CompressionAlgorithm algorithm_;
  ZlibArena arena_;
  z_stream stream_{};
  int init_result_;
};

// "deflate" or "gzip" decompression with one long-lived inflate stream,
// reset (inflateReset) between messages.
class ZlibDecompressor final : public MessageDecompressor {
 public:
  explicit ZlibDecompressor(CompressionAlgorithm algorithm);
  ~ZlibDecompressor() override;
  ZlibDecompressor(const ZlibDecompressor&) = delete;
  ZlibDecompressor& operator=(const ZlibDecompressor&) = delete;

  CompressionAlgorithm algorithm() const override { return algorithm_; }
  Status Decompress(absl::string_view in, size_t max_output,
                    std::string* out) override;

 private:
  // Inflates from the current position of stream_ into [begin, begin + size),
  // adding the bytes written to *written.
  int InflateInto(char* begin, size_t size, absl::string_view* in,
                  size_t* written);
  // Inflates the rest of the message into scratch_, only counting it, while
  // the total stays within `limit`. Adds the count to *produced.
  int CountRest(absl::string_view* in, size_t limit, size_t* produced);

  const CompressionAlgorithm algorithm_;
  ZlibArena arena_;
  z_stream stream_{};
  int init_result_;
  // Output of the counting pass for messages too large to grow into
  // directly; allocated with the codec.
  std::array<char, 16 * 1024> scratch_;
};

// Idle zlib codecs for reuse, at most `max_idle` of each kind (compressor or
// decompressor) and algorithm. Meant to be one per event-loop thread: not
// thread-safe. Acquire and Release make no heap allocation when a codec is
// idle or the pool has room.
class ZlibCodecPool {
 public:
  explicit ZlibCodecPool(size_t max_idle = 8);
  ZlibCodecPool(const ZlibCodecPool&) = delete;
  ZlibCodecPool& operator=(const ZlibCodecPool&) = delete;

  // An idle codec for `algorithm`, or a new one. nullptr for kIdentity (the
  // message is sent as is).
  std::unique_ptr<MessageCompressor> AcquireCompressor(
      CompressionAlgorithm algorithm);
  std::unique_ptr<MessageDecompressor> AcquireDecompressor(
      CompressionAlgorithm algorithm);

  // Returns a codec obtained from Acquire*() (of any ZlibCodecPool); drops it
  // if the pool is full. nullptr is ignored.
  void Release(std::unique_ptr<MessageCompressor> compressor);
  void Release(std::unique_ptr<MessageDecompressor> decompressor);

  size_t idle_compressors(CompressionAlgorithm algorithm) const;
  size_t idle_decompressors(CompressionAlgorithm algorithm) const;

 private:
  const size_t max_idle_;
  std::vector<std::unique_ptr<MessageCompressor>>
      compressors_[kNumCompressionAlgorithms];
  std::vector<std::unique_ptr<MessageDecompressor>>
      decompressors_[kNumCompressionAlgorithms];
};

}  // namespace h2rpc::transport::compression

#endif  // H2RPC_TRANSPORT_COMPRESSION_ZLIB_CODEC_H_
