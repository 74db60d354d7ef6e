#include "rpc/coro/frame_allocator.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::coro {
namespace {

using ::h2rpc::testing::AllocationCounter;

TEST(FrameAllocatorTest, AFreedBlockIsReusedForItsSizeClass) {
  void* first = AllocateFrame(65);
  FreeFrame(first, 65);
  AllocationCounter counter;
  // 65 and 128 bytes are one class (128).
  void* second = AllocateFrame(128);
  EXPECT_EQ(second, first);
  EXPECT_EQ(counter.allocations(), 0);
  FreeFrame(second, 128);
}

TEST(FrameAllocatorTest, WarmCyclesAllocateNothing) {
  for (size_t size : {1u, 64u, 200u, 1000u, 5000u, 16384u}) {
    FreeFrame(AllocateFrame(size), size);
    AllocationCounter counter;
    for (int i = 0; i < 100; ++i) {
      void* a = AllocateFrame(size);
      void* b = AllocateFrame(size);
      FreeFrame(a, size);
      FreeFrame(b, size);
    }
    // The first round's second block came from the heap; the rest reuse.
    EXPECT_LE(counter.allocations(), 1) << size;
  }
}

TEST(FrameAllocatorTest, BlocksOverTheLargestClassGoToTheHeapEachTime) {
  const size_t size = kLargestRecycledBlock + 1;
  FreeFrame(AllocateFrame(size), size);
  AllocationCounter counter;
  FreeFrame(AllocateFrame(size), size);
  EXPECT_EQ(counter.allocations(), 1);
}

TEST(FrameAllocatorTest, EachThreadKeepsABoundedNumberOfBlocksPerClass) {
  const size_t size = kLargestRecycledBlock;
  const int kept = static_cast<int>(kCachedBytesPerClass / size);  // 8
  std::thread([&] {
    std::vector<void*> blocks;
    for (int i = 0; i < kept + 10; ++i) blocks.push_back(AllocateFrame(size));
    for (void* block : blocks) FreeFrame(block, size);
    AllocationCounter counter;
    blocks.clear();
    for (int i = 0; i < kept + 10; ++i) blocks.push_back(AllocateFrame(size));
    EXPECT_EQ(counter.allocations(), 10);
    for (void* block : blocks) FreeFrame(block, size);
  }).join();
}

TEST(FrameAllocatorTest, ABlockGoesToTheCacheOfTheThreadThatFreesIt) {
  void* block = nullptr;
  std::thread([&] { block = AllocateFrame(300); }).join();
  FreeFrame(block, 300);
  AllocationCounter counter;
  void* again = AllocateFrame(300);
  EXPECT_EQ(again, block);
  EXPECT_EQ(counter.allocations(), 0);
  FreeFrame(again, 300);
}

TEST(FrameAllocatorTest, AnExitingThreadGivesItsCacheBack) {
  const int64_t before = ::h2rpc::testing::LiveHeapBytes();
  std::thread([] {
    std::vector<void*> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(AllocateFrame(16384));
    for (void* block : blocks) FreeFrame(block, 16384);
  }).join();
  // 128 KiB were cached by the thread; far less than that may remain (the
  // thread's own bookkeeping in libc).
  EXPECT_LT(::h2rpc::testing::LiveHeapBytes() - before, 16 * 1024);
}

}  // namespace
}  // namespace h2rpc::coro
