#include "transport/http2/nghttp2_memory_pool.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport::http2 {
namespace {

using ::h2rpc::testing::AllocationCounter;

TEST(Nghttp2MemoryPoolTest, FreedBlocksAreReusedWithoutAllocating) {
  Nghttp2MemoryPool pool;
  nghttp2_mem* mem = pool.mem();
  std::vector<void*> blocks;
  for (size_t size : {1u, 31u, 32u, 33u, 200u, 1025u, 2048u}) {
    blocks.push_back(mem->malloc(size, mem->mem_user_data));
  }
  for (void* p : blocks) mem->free(p, mem->mem_user_data);
  EXPECT_GT(pool.cached_bytes(), 0u);
  AllocationCounter counter;
  for (size_t size : {1u, 31u, 32u, 33u, 200u, 1025u, 2048u}) {
    void* p = mem->malloc(size, mem->mem_user_data);
    std::memset(p, 0xab, size);
    mem->free(p, mem->mem_user_data);
  }
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(Nghttp2MemoryPoolTest, CountsTheBytesNghttp2Holds) {
  Nghttp2MemoryPool pool;
  nghttp2_mem* mem = pool.mem();
  void* small = mem->malloc(33, mem->mem_user_data);  // a 64-byte class
  void* large = mem->malloc(100000, mem->mem_user_data);
  EXPECT_EQ(pool.in_use_bytes(), 64u + 100000u);
  small = mem->realloc(small, 100, mem->mem_user_data);  // 128
  EXPECT_EQ(pool.in_use_bytes(), 128u + 100000u);
  mem->free(large, mem->mem_user_data);
  EXPECT_EQ(pool.in_use_bytes(), 128u);
  mem->free(small, mem->mem_user_data);
  EXPECT_EQ(pool.in_use_bytes(), 0u);
  // A block from the cache counts again.
  void* reused = mem->malloc(100, mem->mem_user_data);
  EXPECT_EQ(pool.in_use_bytes(), 128u);
  mem->free(reused, mem->mem_user_data);
}

TEST(Nghttp2MemoryPoolTest, SizesRoundUpToTheirClass) {
  Nghttp2MemoryPool pool;
  nghttp2_mem* mem = pool.mem();
  const struct {
    size_t size;
    size_t capacity;
  } kCases[] = {{1, 32},      {32, 32},     {33, 64},
                {64, 64},     {65, 128},    {1024, 1024},
                {1025, 2048}, {2048, 2048}, {2049, 2049}};
  for (const auto& c : kCases) {
    void* p = mem->malloc(c.size, mem->mem_user_data);
    EXPECT_EQ(pool.in_use_bytes(), c.capacity) << c.size;
    mem->free(p, mem->mem_user_data);
  }
}

TEST(Nghttp2MemoryPoolTest, LargeBlocksGoStraightToTheAllocator) {
  Nghttp2MemoryPool pool;
  nghttp2_mem* mem = pool.mem();
  // The session object's size: exact, not rounded up to 4 KiB.
  void* p = mem->malloc(2928, mem->mem_user_data);
  EXPECT_EQ(pool.in_use_bytes(), 2928u);
  mem->free(p, mem->mem_user_data);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  p = mem->malloc(100000, mem->mem_user_data);
  mem->free(p, mem->mem_user_data);
  EXPECT_EQ(pool.cached_bytes(), 0u);
}

TEST(Nghttp2MemoryPoolTest, TrimFreesCachedBlocksDownToTheBound) {
  Nghttp2MemoryPool pool;
  nghttp2_mem* mem = pool.mem();
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) {
    blocks.push_back(mem->malloc(2048, mem->mem_user_data));
    blocks.push_back(mem->malloc(100, mem->mem_user_data));
  }
  for (void* p : blocks) mem->free(p, mem->mem_user_data);
  EXPECT_EQ(pool.cached_bytes(), 10u * (2048 + 128));
  pool.Trim(4096);
  EXPECT_LE(pool.cached_bytes(), 4096u);
  // The small blocks go last.
  EXPECT_EQ(pool.cached_bytes(), 10u * 128 + 2048);
  pool.Trim(0);
  EXPECT_EQ(pool.cached_bytes(), 0u);
  EXPECT_EQ(pool.in_use_bytes(), 0u);
}

TEST(Nghttp2MemoryPoolTest, CallocZeroesAndReallocKeepsContents) {
  Nghttp2MemoryPool pool;
  nghttp2_mem* mem = pool.mem();
  void* dirty = mem->malloc(64, mem->mem_user_data);
  std::memset(dirty, 0xff, 64);
  mem->free(dirty, mem->mem_user_data);
  auto* zeroed =
      static_cast<unsigned char*>(mem->calloc(8, 8, mem->mem_user_data));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(zeroed[i], 0) << i;
  std::memcpy(zeroed, "0123456789", 10);
  auto* grown =
      static_cast<char*>(mem->realloc(zeroed, 5000, mem->mem_user_data));
  EXPECT_EQ(std::memcmp(grown, "0123456789", 10), 0);
  EXPECT_EQ(mem->calloc(static_cast<size_t>(-1) / 2, 4, mem->mem_user_data),
            nullptr);
  mem->free(grown, mem->mem_user_data);
}

TEST(Nghttp2MemoryPoolTest, CacheIsBounded) {
  Nghttp2MemoryPool pool(/*max_cached_bytes=*/1024);
  nghttp2_mem* mem = pool.mem();
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i)
    blocks.push_back(mem->malloc(256, mem->mem_user_data));
  for (void* p : blocks) mem->free(p, mem->mem_user_data);
  EXPECT_LE(pool.cached_bytes(), 1024u);
}

}  // namespace
}  // namespace h2rpc::transport::http2
