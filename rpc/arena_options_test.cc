#include "rpc/arena_options.h"

#include <string>
#include <thread>

#include "google/protobuf/arena.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "test/util/allocation_counter.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleResponse;
using ::h2rpc::testing::AllocationCounter;

// A call's pattern: its arena is reset on one thread while another thread
// (a synchronous handler's worker) allocated from it.
TEST(RecyclingArenaOptionsTest, AnotherThreadsBlockIsRecycledAfterReset) {
  alignas(8) char inline_block[2048];
  google::protobuf::Arena arena(
      RecyclingArenaOptions(inline_block, sizeof(inline_block)));
  google::protobuf::Arena::CreateMessage<SimpleResponse>(&arena);  // ours
  int64_t worker_allocations[3];
  for (int call = 0; call < 3; ++call) {
    std::thread worker([&] {
      AllocationCounter counter;
      auto* response =
          google::protobuf::Arena::CreateMessage<SimpleResponse>(&arena);
      response->mutable_payload()->set_type(
          grpc::testing::PayloadType::COMPRESSABLE);
      worker_allocations[call] = counter.allocations();
    });
    worker.join();
    const size_t pooled = PooledArenaBlocks();
    arena.Reset();
    EXPECT_GE(PooledArenaBlocks(), pooled + 1) << "call " << call;
  }
  // The worker's first block came from the allocator (the pool may have been
  // empty); later calls take the recycled one.
  EXPECT_EQ(worker_allocations[1], 0);
  EXPECT_EQ(worker_allocations[2], 0);
}

TEST(RecyclingArenaOptionsTest,
     LargeObjectsGetBlocksOfTheirOwnSizeFromTheAllocator) {
  alignas(8) char inline_block[1024];
  google::protobuf::Arena arena(
      RecyclingArenaOptions(inline_block, sizeof(inline_block)));
  const size_t pooled = PooledArenaBlocks();
  auto* response =
      google::protobuf::Arena::CreateMessage<SimpleResponse>(&arena);
  google::protobuf::Arena::CreateArray<char>(&arena, 3 * kArenaBlockSize);
  response->mutable_payload();
  arena.Reset();
  // The large block is not pooled; the pool is never above its bound.
  EXPECT_LE(PooledArenaBlocks(), kMaxPooledArenaBlocks);
  EXPECT_LE(PooledArenaBlocks(), pooled + 1);
}

}  // namespace
}  // namespace h2rpc
