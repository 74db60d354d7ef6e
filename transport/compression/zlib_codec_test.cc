#include "transport/compression/zlib_codec.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "test/util/zlib_reference.h"
#include "transport/compression/message_codec.h"

namespace h2rpc::transport::compression {
namespace {

using ::h2rpc::testing::AllocationCounter;
using ::h2rpc::testing::ZlibCompress;
using ::h2rpc::testing::ZlibCompressZeros;
using ::h2rpc::testing::ZlibInflate;
using ::testing::HasSubstr;

constexpr size_t kFourMiB = 4 * 1024 * 1024;

std::string RandomBytes(size_t size, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::string s(size, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Compressible: words from a small vocabulary.
std::string TextLike(size_t size) {
  static const char* const kWords[] = {"grpc ",   "message ", "compression ",
                                       "stream ", "header ",  "deflate "};
  std::mt19937 rng(7);
  std::string s;
  s.reserve(size + 16);
  while (s.size() < size) s += kWords[rng() % 6];
  s.resize(size);
  return s;
}

class ZlibCodecTest : public ::testing::TestWithParam<CompressionAlgorithm> {
 protected:
  bool gzip() const { return GetParam() == CompressionAlgorithm::kGzip; }
  ZlibCompressor compressor_{GetParam()};
  ZlibDecompressor decompressor_{GetParam()};
};

INSTANTIATE_TEST_SUITE_P(Algorithms, ZlibCodecTest,
                         ::testing::Values(CompressionAlgorithm::kDeflate,
                                           CompressionAlgorithm::kGzip),
                         [](const auto& info) {
                           return std::string(
                               CompressionAlgorithmName(info.param));
                         });

TEST_P(ZlibCodecTest, RoundTripsManySizes) {
  const std::vector<std::string> messages = {"",
                                             "x",
                                             TextLike(1024),
                                             TextLike(1 << 20),
                                             RandomBytes(1024),
                                             RandomBytes(1 << 20),
                                             std::string(100000, 'a')};
  for (const std::string& message : messages) {
    std::string compressed;
    ASSERT_TRUE(compressor_.Compress(message, &compressed).ok());
    std::string decompressed;
    const Status status =
        decompressor_.Decompress(compressed, kFourMiB, &decompressed);
    ASSERT_TRUE(status.ok()) << status.ToString() << " " << message.size();
    EXPECT_TRUE(decompressed == message) << message.size();
  }
}

TEST_P(ZlibCodecTest, OutputIsValidForZlibItself) {
  for (const std::string& message :
       {std::string(), std::string("x"), TextLike(1024), TextLike(1 << 20),
        RandomBytes(1 << 20)}) {
    std::string compressed;
    ASSERT_TRUE(compressor_.Compress(message, &compressed).ok());
    if (gzip()) {
      ASSERT_GE(compressed.size(), 2u);
      EXPECT_EQ(static_cast<uint8_t>(compressed[0]), 0x1f);
      EXPECT_EQ(static_cast<uint8_t>(compressed[1]), 0x8b);
    }
    EXPECT_TRUE(ZlibInflate(compressed, gzip(), message.size()) == message);
  }
}

TEST_P(ZlibCodecTest, CompressAppends) {
  std::string out = "prefix";
  ASSERT_TRUE(compressor_.Compress("hello hello hello", &out).ok());
  ASSERT_EQ(out.substr(0, 6), "prefix");
  std::string decompressed = "abc";
  ASSERT_TRUE(decompressor_.Decompress(out.substr(6), 100, &decompressed).ok());
  EXPECT_EQ(decompressed, "abchello hello hello");
}

TEST_P(ZlibCodecTest, IncompressibleDataGrowsLittle) {
  const std::string message = RandomBytes(1 << 20, 3);
  std::string compressed;
  ASSERT_TRUE(compressor_.Compress(message, &compressed).ok());
  EXPECT_LT(compressed.size(), message.size() + 1024);
}

TEST_P(ZlibCodecTest, LimitIsInclusive) {
  for (const std::string& message : {TextLike(1000), TextLike(200000)}) {
    std::string compressed;
    ASSERT_TRUE(compressor_.Compress(message, &compressed).ok());
    std::string out;
    EXPECT_TRUE(
        decompressor_.Decompress(compressed, message.size(), &out).ok());
    EXPECT_TRUE(out == message);
    out = "keep";
    const Status status =
        decompressor_.Decompress(compressed, message.size() - 1, &out);
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(status.message(),
                HasSubstr("exceeds the limit of " +
                          std::to_string(message.size() - 1) + " bytes"));
    EXPECT_EQ(out, "keep");
  }
}

TEST_P(ZlibCodecTest, ZeroLimit) {
  std::string empty_compressed;
  ASSERT_TRUE(compressor_.Compress("", &empty_compressed).ok());
  std::string out;
  EXPECT_TRUE(decompressor_.Decompress(empty_compressed, 0, &out).ok());
  std::string compressed;
  ASSERT_TRUE(compressor_.Compress("a", &compressed).ok());
  EXPECT_EQ(decompressor_.Decompress(compressed, 0, &out).code(),
            StatusCode::kResourceExhausted);
}

TEST_P(ZlibCodecTest, DecodesZlibsOwnStreams) {
  const std::string message = TextLike(300000);
  const std::string compressed = ZlibCompress(message, gzip());
  std::string out;
  const Status status = decompressor_.Decompress(compressed, kFourMiB, &out);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(out == message);
}

TEST_P(ZlibCodecTest, WrongWrapperIsInternal) {
  // A deflate decompressor refuses gzip and the other way round.
  ZlibCompressor other(gzip() ? CompressionAlgorithm::kDeflate
                              : CompressionAlgorithm::kGzip);
  std::string compressed;
  ASSERT_TRUE(other.Compress("hello", &compressed).ok());
  std::string out;
  const Status status = decompressor_.Decompress(compressed, 100, &out);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("header"));
}

TEST_P(ZlibCodecTest, CorruptInputIsInternal) {
  std::string compressed;
  ASSERT_TRUE(compressor_.Compress(TextLike(5000), &compressed).ok());
  std::string bad_header = compressed;
  bad_header[0] ^= 0x55;
  std::string out = "keep";
  Status status = decompressor_.Decompress(bad_header, kFourMiB, &out);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("inflate failed: "));
  EXPECT_EQ(out, "keep");

  // A flipped byte in the checksum trailer.
  std::string bad_check = compressed;
  bad_check[bad_check.size() - (gzip() ? 6 : 1)] ^= 0x01;
  status = decompressor_.Decompress(bad_check, kFourMiB, &out);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("incorrect data check"));
  EXPECT_EQ(out, "keep");

  // Garbage throughout: always an error, never a crash.
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::string garbage = compressed;
    std::mt19937 rng(seed);
    for (int i = 0; i < 8; ++i) {
      garbage[rng() % garbage.size()] = static_cast<char>(rng());
    }
    std::string garbage_out;
    const Status s = decompressor_.Decompress(garbage, kFourMiB, &garbage_out);
    EXPECT_NE(s.code(), StatusCode::kOk);
  }
  // The codec still works afterwards.
  out.clear();
  ASSERT_TRUE(decompressor_.Decompress(compressed, kFourMiB, &out).ok());
  EXPECT_TRUE(out == TextLike(5000));
}

TEST_P(ZlibCodecTest, TruncatedInputIsInternal) {
  std::string compressed;
  ASSERT_TRUE(compressor_.Compress(TextLike(100000), &compressed).ok());
  for (size_t size : {size_t{0}, size_t{1}, size_t{2}, compressed.size() / 2,
                      compressed.size() - 1}) {
    std::string out;
    const Status status = decompressor_.Decompress(
        absl::string_view(compressed).substr(0, size), kFourMiB, &out);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << size;
    EXPECT_THAT(status.message(), HasSubstr("truncated")) << size;
    EXPECT_TRUE(out.empty());
  }
}

TEST_P(ZlibCodecTest, TrailingGarbageIsInternal) {
  for (const std::string& message : {TextLike(100), TextLike(100000)}) {
    std::string compressed;
    ASSERT_TRUE(compressor_.Compress(message, &compressed).ok());
    compressed += "xyz";
    std::string out;
    const Status status = decompressor_.Decompress(compressed, kFourMiB, &out);
    EXPECT_EQ(status.code(), StatusCode::kInternal);
    EXPECT_THAT(status.message(), HasSubstr("trailing"));
    EXPECT_TRUE(out.empty());
  }
}

TEST_P(ZlibCodecTest, BombStopsAtTheLimit) {
  const std::string bomb = ZlibCompressZeros(uint64_t{1} << 30, gzip());
  EXPECT_LT(bomb.size(), 2u << 20);
  // Warm up (zlib allocates its window on first use).
  std::string warm;
  ASSERT_TRUE(
      decompressor_.Decompress(ZlibCompressZeros(100, gzip()), kFourMiB, &warm)
          .ok());

  std::string out;
  AllocationCounter counter;
  const Status status = decompressor_.Decompress(bomb, kFourMiB, &out);
  const int64_t bytes = counter.bytes();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "decompressed message exceeds the limit of 4194304 bytes "
            "(max_receive_message_size)");
  EXPECT_LE(bytes, int64_t{kFourMiB} + 64 * 1024);
  EXPECT_TRUE(out.empty());
}

TEST_P(ZlibCodecTest, BombWithLyingGzipSizeStopsAtTheLimit) {
  if (!gzip()) GTEST_SKIP() << "only gzip has a size trailer";
  for (uint32_t claimed :
       {uint32_t{1000}, uint32_t{kFourMiB - 1}, uint32_t{kFourMiB}}) {
    std::string bomb = ZlibCompressZeros(64 << 20, true);
    for (int i = 0; i < 4; ++i) {
      bomb[bomb.size() - 4 + i] = static_cast<char>(claimed >> (8 * i));
    }
    std::string out;
    AllocationCounter counter;
    const Status status = decompressor_.Decompress(bomb, kFourMiB, &out);
    const int64_t bytes = counter.bytes();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << claimed;
    EXPECT_LE(bytes, int64_t{kFourMiB} + 64 * 1024) << claimed;
  }
}

TEST_P(ZlibCodecTest, LargeMessageCostsAboutItsSize) {
  const std::string message = TextLike(1 << 20);
  std::string compressed;
  ASSERT_TRUE(compressor_.Compress(message, &compressed).ok());
  std::string warm;
  ASSERT_TRUE(decompressor_.Decompress(compressed, kFourMiB, &warm).ok());
  std::string out;
  AllocationCounter counter;
  ASSERT_TRUE(decompressor_.Decompress(compressed, kFourMiB, &out).ok());
  EXPECT_LE(counter.bytes(), int64_t{1 << 20} + 128 * 1024);
  EXPECT_TRUE(out == message);
}

TEST_P(ZlibCodecTest, WarmPooledCodecDoesNotAllocate) {
  ZlibCodecPool pool;
  const std::string message = TextLike(1024);
  std::string compressed;
  std::string decompressed;
  compressed.reserve(4096);
  decompressed.reserve(4096);
  // First use of a pooled codec pair: zlib allocates its state and windows.
  for (int round = 0; round < 2; ++round) {
    std::unique_ptr<MessageCompressor> compressor =
        pool.AcquireCompressor(GetParam());
    std::unique_ptr<MessageDecompressor> decompressor =
        pool.AcquireDecompressor(GetParam());
    ASSERT_NE(compressor, nullptr);
    ASSERT_NE(decompressor, nullptr);
    compressed.clear();
    decompressed.clear();
    AllocationCounter counter;
    ASSERT_TRUE(compressor->Compress(message, &compressed).ok());
    ASSERT_TRUE(
        decompressor->Decompress(compressed, kFourMiB, &decompressed).ok());
    if (round == 1) {
      EXPECT_EQ(counter.allocations(), 0);
      EXPECT_EQ(counter.bytes(), 0);
    }
    pool.Release(std::move(compressor));
    pool.Release(std::move(decompressor));
    EXPECT_EQ(counter.allocations(), round == 0 ? counter.allocations() : 0);
    EXPECT_TRUE(decompressed == message);
  }
  EXPECT_EQ(pool.idle_compressors(GetParam()), 1u);
  EXPECT_EQ(pool.idle_decompressors(GetParam()), 1u);
}

TEST(ZlibCodecPoolTest, IdentityHasNoCodec) {
  ZlibCodecPool pool;
  EXPECT_EQ(pool.AcquireCompressor(CompressionAlgorithm::kIdentity), nullptr);
  EXPECT_EQ(pool.AcquireDecompressor(CompressionAlgorithm::kIdentity), nullptr);
  pool.Release(std::unique_ptr<MessageCompressor>());
}

TEST(ZlibCodecPoolTest, KeepsAtMostMaxIdle) {
  ZlibCodecPool pool(2);
  std::vector<std::unique_ptr<MessageDecompressor>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(pool.AcquireDecompressor(CompressionAlgorithm::kGzip));
  }
  for (auto& d : held) pool.Release(std::move(d));
  EXPECT_EQ(pool.idle_decompressors(CompressionAlgorithm::kGzip), 2u);
  EXPECT_EQ(pool.idle_decompressors(CompressionAlgorithm::kDeflate), 0u);
  auto reused = pool.AcquireDecompressor(CompressionAlgorithm::kGzip);
  EXPECT_EQ(reused->algorithm(), CompressionAlgorithm::kGzip);
  EXPECT_EQ(pool.idle_decompressors(CompressionAlgorithm::kGzip), 1u);
}

TEST(ZlibCodecTest2, IdentityIsRejectedByZlibCodecs) {
  ZlibCompressor compressor(CompressionAlgorithm::kIdentity);
  std::string out;
  EXPECT_EQ(compressor.Compress("x", &out).code(), StatusCode::kInternal);
  ZlibDecompressor decompressor(CompressionAlgorithm::kIdentity);
  EXPECT_EQ(decompressor.Decompress("x", 10, &out).code(),
            StatusCode::kInternal);
}

}  // namespace
}  // namespace h2rpc::transport::compression
