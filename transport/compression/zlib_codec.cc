#include "transport/compression/zlib_codec.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::transport::compression {
namespace {

// Largest count zlib takes at once (avail_in and avail_out are uInt).
constexpr size_t kMaxZlibChunk = std::numeric_limits<uInt>::max();

// Decompression first inflates straight into the caller's string, doubling
// it from a guess up to this many bytes (or up to a gzip trailer's size
// hint). A longer message is then inflated once into a scratch buffer only to
// learn its size, and again into output of exactly that size, so the output
// never costs more than about the limit however the stream inflates.
constexpr size_t kDirectGrowthBytes = 32 * 1024;
constexpr size_t kMinInitialOutputBytes = 256;

// Not a zlib return code: the counting pass went over the limit.
constexpr int kLimitExceeded = 100;

int WindowBits(CompressionAlgorithm algorithm) {
  // 16 + MAX_WBITS: gzip wrapper; MAX_WBITS alone: zlib wrapper.
  return algorithm == CompressionAlgorithm::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
}

bool IsZlibAlgorithm(CompressionAlgorithm algorithm) {
  return algorithm == CompressionAlgorithm::kDeflate ||
         algorithm == CompressionAlgorithm::kGzip;
}

Status ZlibError(absl::string_view operation, int code, const z_stream& strm) {
  return Status(StatusCode::kInternal,
                absl::StrCat(operation, " failed: ",
                             strm.msg != nullptr ? strm.msg : zError(code)));
}

Status InitError(absl::string_view operation, CompressionAlgorithm algorithm,
                 int code) {
  return Status(
      StatusCode::kInternal,
      absl::StrCat(operation, " for ", CompressionAlgorithmName(algorithm),
                   " failed: ", zError(code)));
}

Bytef* AsBytes(const char* p) {
  return reinterpret_cast<Bytef*>(const_cast<char*>(p));
}

}  // namespace

// ---------------------------------------------------------------------------
// ZlibArena

ZlibArena::~ZlibArena() {
  for (Block& block : blocks_) {
    if (block.address != nullptr) ::operator delete(block.address);
  }
}

void ZlibArena::Install(z_stream* strm) {
  strm->zalloc = &ZlibArena::Alloc;
  strm->zfree = &ZlibArena::Free;
  strm->opaque = this;
}

void* ZlibArena::Alloc(void* opaque, uInt items, uInt size) {
  auto* arena = static_cast<ZlibArena*>(opaque);
  const size_t bytes = static_cast<size_t>(items) * size;
  for (Block& block : arena->blocks_) {
    if (block.address != nullptr && !block.in_use && block.size == bytes) {
      block.in_use = true;
      return block.address;
    }
  }
  void* address = ::operator new(bytes, std::nothrow);
  if (address == nullptr) return Z_NULL;
  for (Block& block : arena->blocks_) {
    if (block.address == nullptr) {
      block = Block{address, bytes, true};
      return address;
    }
  }
  return address;  // Free-list full: Free() deletes it.
}

void ZlibArena::Free(void* opaque, void* address) {
  auto* arena = static_cast<ZlibArena*>(opaque);
  for (Block& block : arena->blocks_) {
    if (block.address == address) {
      block.in_use = false;
      return;
    }
  }
  ::operator delete(address);
}

// ---------------------------------------------------------------------------
// ZlibCompressor

ZlibCompressor::ZlibCompressor(CompressionAlgorithm algorithm, int level)
    : algorithm_(algorithm) {
  arena_.Install(&stream_);
  init_result_ =
      IsZlibAlgorithm(algorithm)
          ? deflateInit2(&stream_, level, Z_DEFLATED, WindowBits(algorithm),
                         /*memLevel=*/8, Z_DEFAULT_STRATEGY)
          : Z_STREAM_ERROR;
}

ZlibCompressor::~ZlibCompressor() {
  if (init_result_ == Z_OK) deflateEnd(&stream_);
}

Status ZlibCompressor::Compress(absl::string_view in, std::string* out) {
  if (init_result_ != Z_OK) {
    return InitError("deflateInit2", algorithm_, init_result_);
  }
  int result = deflateReset(&stream_);
  if (result != Z_OK) return ZlibError("deflateReset", result, stream_);

  const size_t base = out->size();
  // Enough for the whole stream in one deflate() call (grown if not).
  size_t capacity = deflateBound(&stream_, in.size());
  out->resize(base + capacity);
  size_t written = 0;
  size_t in_left = in.size();
  stream_.next_in = AsBytes(in.data());
  stream_.avail_in = 0;
  while (true) {
    if (stream_.avail_in == 0 && in_left != 0) {
      const size_t chunk = std::min(in_left, kMaxZlibChunk);
      stream_.avail_in = static_cast<uInt>(chunk);
      in_left -= chunk;
    }
    if (written == capacity) {
      capacity *= 2;
      out->resize(base + capacity);
    }
    const size_t out_chunk = std::min(capacity - written, kMaxZlibChunk);
    stream_.next_out = AsBytes(out->data() + base + written);
    stream_.avail_out = static_cast<uInt>(out_chunk);
    result = deflate(&stream_, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
    written += out_chunk - stream_.avail_out;
    if (result == Z_STREAM_END) break;
    if (result != Z_OK && result != Z_BUF_ERROR) {
      out->resize(base);
      return ZlibError("deflate", result, stream_);
    }
  }
  out->resize(base + written);
  stream_.next_in = nullptr;
  stream_.next_out = nullptr;
  return Status();
}

// ---------------------------------------------------------------------------
// ZlibDecompressor

ZlibDecompressor::ZlibDecompressor(CompressionAlgorithm algorithm)
    : algorithm_(algorithm) {
  arena_.Install(&stream_);
  init_result_ = IsZlibAlgorithm(algorithm)
                     ? inflateInit2(&stream_, WindowBits(algorithm))
                     : Z_STREAM_ERROR;
}

ZlibDecompressor::~ZlibDecompressor() {
  if (init_result_ == Z_OK) inflateEnd(&stream_);
}

// Returns Z_STREAM_END (done), Z_OK (the output is full), Z_BUF_ERROR (all of
// `in` consumed without reaching the end: truncated) or a zlib error. Adds
// the bytes written to *written.
int ZlibDecompressor::InflateInto(char* begin, size_t size,
                                  absl::string_view* in, size_t* written) {
  size_t done = 0;
  int result = Z_OK;
  while (done < size) {
    const size_t in_chunk = std::min(in->size(), kMaxZlibChunk);
    const size_t out_chunk = std::min(size - done, kMaxZlibChunk);
    stream_.next_in = AsBytes(in->data());
    stream_.avail_in = static_cast<uInt>(in_chunk);
    stream_.next_out = AsBytes(begin + done);
    stream_.avail_out = static_cast<uInt>(out_chunk);
    result = inflate(&stream_, Z_NO_FLUSH);
    in->remove_prefix(in_chunk - stream_.avail_in);
    done += out_chunk - stream_.avail_out;
    if (result == Z_STREAM_END) break;
    if (result != Z_OK && result != Z_BUF_ERROR) break;
    if (done < size && in->empty()) {
      result = Z_BUF_ERROR;
      break;
    }
    result = Z_OK;
  }
  stream_.next_in = nullptr;
  stream_.next_out = nullptr;
  *written += done;
  return result;
}

int ZlibDecompressor::CountRest(absl::string_view* in, size_t limit,
                                size_t* produced) {
  while (true) {
    const int result =
        InflateInto(scratch_.data(), scratch_.size(), in, produced);
    if (*produced > limit) return kLimitExceeded;
    if (result != Z_OK) return result;
  }
}

Status ZlibDecompressor::Decompress(absl::string_view in, size_t max_output,
                                    std::string* out) {
  if (init_result_ != Z_OK) {
    return InitError("inflateInit2", algorithm_, init_result_);
  }
  int result = inflateReset(&stream_);
  if (result != Z_OK) return ZlibError("inflateReset", result, stream_);

  const size_t base = out->size();
  // One byte more than allowed, to see a message go over.
  const size_t limit = max_output == std::numeric_limits<size_t>::max()
                           ? max_output
                           : max_output + 1;
  // How far to grow *out directly: a guess, the spare capacity it already
  // has, or the size a gzip trailer claims if that is within the limit.
  size_t direct = kDirectGrowthBytes;
  size_t target =
      std::max(kMinInitialOutputBytes,
               std::min(kDirectGrowthBytes, in.size() > kDirectGrowthBytes / 4
                                                ? kDirectGrowthBytes
                                                : in.size() * 4));
  const size_t spare = out->capacity() - base;
  direct = std::max(direct, spare);
  target = std::max(target, spare);
  if (algorithm_ == CompressionAlgorithm::kGzip && in.size() >= 18) {
    const auto* p = reinterpret_cast<const uint8_t*>(in.data() + in.size() - 4);
    const size_t isize = static_cast<size_t>(p[0]) | (size_t{p[1]} << 8) |
                         (size_t{p[2]} << 16) | (size_t{p[3]} << 24);
    if (isize < limit) {
      direct = std::max(direct, isize + 1);
      target = std::max(target, isize + 1);
    }
  }
  direct = std::min(direct, limit);
  target = std::min(target, direct);

  absl::string_view rest = in;
  size_t produced = 0;
  while (true) {
    out->resize(base + target);
    result = InflateInto(out->data() + base + produced, target - produced,
                         &rest, &produced);
    // The output is full (or ended just as it filled up).
    if (produced > max_output) {
      out->resize(base);
      return DecompressedSizeExceeded(max_output);
    }
    if (result != Z_OK || target >= direct) break;
    target = std::min(direct, target * 2);
  }

  if (result == Z_OK) {
    // Longer than `direct`: count the rest, then inflate again into output
    // of exactly the right size.
    out->resize(base);
    result = CountRest(&rest, max_output, &produced);
    if (result == kLimitExceeded) return DecompressedSizeExceeded(max_output);
    if (result == Z_STREAM_END && rest.empty()) {
      const size_t total = produced;
      result = inflateReset(&stream_);
      if (result != Z_OK) return ZlibError("inflateReset", result, stream_);
      rest = in;
      produced = 0;
      // One spare byte, so that the end of the stream is seen.
      out->resize(base + total + 1);
      result = InflateInto(out->data() + base, total + 1, &rest, &produced);
      if (result == Z_STREAM_END && produced != total) {
        out->resize(base);
        return Status(StatusCode::kInternal,
                      "inflate failed: inconsistent output size");
      }
    }
  }

  if (result != Z_STREAM_END) {
    out->resize(base);
    if (result == Z_BUF_ERROR) {
      return Status(StatusCode::kInternal,
                    "inflate failed: truncated compressed message");
    }
    if (result == Z_NEED_DICT) {
      return Status(StatusCode::kInternal,
                    "inflate failed: preset dictionary not supported");
    }
    return ZlibError("inflate", result, stream_);
  }
  if (!rest.empty()) {
    out->resize(base);
    return Status(StatusCode::kInternal,
                  absl::StrCat("inflate failed: ", rest.size(),
                               " bytes of trailing data after the end of the "
                               "compressed message"));
  }
  out->resize(base + produced);
  return Status();
}

// ---------------------------------------------------------------------------
// ZlibCodecPool

ZlibCodecPool::ZlibCodecPool(size_t max_idle) : max_idle_(max_idle) {
  for (int i = 0; i < kNumCompressionAlgorithms; ++i) {
    compressors_[i].reserve(max_idle);
    decompressors_[i].reserve(max_idle);
  }
}

std::unique_ptr<MessageCompressor> ZlibCodecPool::AcquireCompressor(
    CompressionAlgorithm algorithm) {
  if (!IsZlibAlgorithm(algorithm)) return nullptr;
  auto& idle = compressors_[static_cast<int>(algorithm)];
  if (idle.empty()) return std::make_unique<ZlibCompressor>(algorithm);
  std::unique_ptr<MessageCompressor> compressor = std::move(idle.back());
  idle.pop_back();
  return compressor;
}

std::unique_ptr<MessageDecompressor> ZlibCodecPool::AcquireDecompressor(
    CompressionAlgorithm algorithm) {
  if (!IsZlibAlgorithm(algorithm)) return nullptr;
  auto& idle = decompressors_[static_cast<int>(algorithm)];
  if (idle.empty()) return std::make_unique<ZlibDecompressor>(algorithm);
  std::unique_ptr<MessageDecompressor> decompressor = std::move(idle.back());
  idle.pop_back();
  return decompressor;
}

void ZlibCodecPool::Release(std::unique_ptr<MessageCompressor> compressor) {
  if (compressor == nullptr) return;
  auto& idle = compressors_[static_cast<int>(compressor->algorithm())];
  if (idle.size() < max_idle_) idle.push_back(std::move(compressor));
}

void ZlibCodecPool::Release(std::unique_ptr<MessageDecompressor> decompressor) {
  if (decompressor == nullptr) return;
  auto& idle = decompressors_[static_cast<int>(decompressor->algorithm())];
  if (idle.size() < max_idle_) idle.push_back(std::move(decompressor));
}

size_t ZlibCodecPool::idle_compressors(CompressionAlgorithm algorithm) const {
  return compressors_[static_cast<int>(algorithm)].size();
}

size_t ZlibCodecPool::idle_decompressors(CompressionAlgorithm algorithm) const {
  return decompressors_[static_cast<int>(algorithm)].size();
}

}  // namespace h2rpc::transport::compression
