#include "transport/core/large_buffer_cache.h"

#include <string>

#include "gtest/gtest.h"

namespace h2rpc::transport {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(LargeBufferCacheTest, GivenBufferIsTakenBackWithItsStorage) {
  LargeBufferCache cache;
  std::string buffer;
  EXPECT_FALSE(cache.Take(kMiB, &buffer));  // nothing cached: reserved
  ASSERT_GE(buffer.capacity(), kMiB);
  buffer.assign(1000, 'x');
  const char* storage = buffer.data();
  cache.Give(&buffer);
  EXPECT_EQ(buffer.capacity(), std::string().capacity());
  EXPECT_EQ(cache.retained_buffers(), 1u);
  EXPECT_GE(cache.retained_bytes(), kMiB);

  std::string other;
  EXPECT_TRUE(cache.Take(kMiB, &other));
  EXPECT_EQ(other.data(), storage);
  // With the size and bytes it was given back with: resize() to a size up
  // to 1000 writes nothing.
  EXPECT_EQ(other, std::string(1000, 'x'));
  EXPECT_EQ(cache.retained_buffers(), 0u);
  EXPECT_EQ(cache.retained_bytes(), 0u);
}

TEST(LargeBufferCacheTest, TakesTheSmallestFitWithinAnEighth) {
  LargeBufferCache cache;
  std::string a, b, c;
  a.reserve(kMiB);
  b.reserve(kMiB + kMiB / 16);
  c.reserve(4 * kMiB);
  const char* a_storage = a.data();
  const char* b_storage = b.data();
  cache.Give(&c);
  cache.Give(&b);
  cache.Give(&a);

  std::string taken;
  // 4 MiB is too large for a request of 1 MiB + 1; b fits.
  EXPECT_TRUE(cache.Take(kMiB + 1, &taken));
  EXPECT_EQ(taken.data(), b_storage);
  std::string next;
  EXPECT_TRUE(cache.Take(kMiB, &next));
  EXPECT_EQ(next.data(), a_storage);
  // Only the 4 MiB buffer is left, more than 1/8 above 2 MiB.
  std::string fresh;
  EXPECT_FALSE(cache.Take(2 * kMiB, &fresh));
  EXPECT_GE(fresh.capacity(), 2 * kMiB);
  EXPECT_EQ(cache.retained_buffers(), 1u);
  EXPECT_EQ(cache.retained_bytes(), 4 * kMiB);
}

TEST(LargeBufferCacheTest, SizesInUseStayAndUnusedOnesGo) {
  LargeBufferCache cache;
  std::string unused, small, large;
  unused.reserve(4 * kMiB);
  cache.Give(&unused);
  small.reserve(64 * 1024);
  large.reserve(kMiB);
  // Two sizes in use at once, taken and given back in turn: each request
  // finds its buffer, however many requests go by.
  for (uint64_t i = 0; i < 3 * LargeBufferCache::kMaxIdleTakes; ++i) {
    cache.Give(&small);
    cache.Give(&large);
    EXPECT_TRUE(cache.Take(64 * 1024, &small)) << i;
    EXPECT_TRUE(cache.Take(kMiB, &large)) << i;
  }
  // The 4 MiB buffer nobody asked for is gone.
  EXPECT_EQ(cache.retained_buffers(), 0u);
  EXPECT_EQ(cache.retained_bytes(), 0u);
}

TEST(LargeBufferCacheTest, SmallBuffersAndRequestsBypassTheCache) {
  LargeBufferCache cache;
  std::string small;
  small.reserve(LargeBufferCache::kMinCapacity / 2);
  cache.Give(&small);
  EXPECT_EQ(cache.retained_buffers(), 0u);
  EXPECT_EQ(small.capacity(), std::string().capacity());

  std::string large;
  large.reserve(LargeBufferCache::kMinCapacity);
  cache.Give(&large);
  ASSERT_EQ(cache.retained_buffers(), 1u);
  std::string request;
  EXPECT_FALSE(cache.Take(LargeBufferCache::kMinCapacity / 2, &request));
  EXPECT_EQ(cache.retained_buffers(), 1u);  // a small miss evicts nothing
}

TEST(LargeBufferCacheTest, BufferLargeEnoughIsLeftAsItIs) {
  LargeBufferCache cache;
  std::string buffer(2 * kMiB, 'x');
  const char* storage = buffer.data();
  EXPECT_FALSE(cache.Take(kMiB, &buffer));
  EXPECT_EQ(buffer.size(), 2 * kMiB);
  EXPECT_EQ(buffer.data(), storage);
}

TEST(LargeBufferCacheTest, RetainsAtMostTheBound) {
  LargeBufferCache cache(3 * kMiB - 1);
  for (int i = 0; i < 5; ++i) {
    std::string buffer;
    buffer.reserve(kMiB);
    cache.Give(&buffer);
  }
  EXPECT_EQ(cache.retained_buffers(), 2u);  // a third would pass the bound
  EXPECT_EQ(cache.retained_bytes(), 2 * kMiB);

  cache.set_max_retained_bytes(kMiB + kMiB / 2);
  EXPECT_EQ(cache.retained_buffers(), 1u);
  cache.Clear();
  EXPECT_EQ(cache.retained_buffers(), 0u);
  EXPECT_EQ(cache.retained_bytes(), 0u);
}

TEST(LargeBufferCacheTest, RetainsAtMostMaxBuffers) {
  LargeBufferCache cache(1ull << 40);
  for (size_t i = 0; i < LargeBufferCache::kMaxBuffers + 3; ++i) {
    std::string buffer;
    buffer.reserve(LargeBufferCache::kMinCapacity);
    cache.Give(&buffer);
  }
  EXPECT_EQ(cache.retained_buffers(), LargeBufferCache::kMaxBuffers);
}

}  // namespace
}  // namespace h2rpc::transport
