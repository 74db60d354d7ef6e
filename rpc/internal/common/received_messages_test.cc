#include "rpc/internal/common/received_messages.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "test/util/zlib_reference.h"
#include "transport/core/large_buffer_cache.h"

namespace h2rpc::internal {
namespace {

// The wire size of a message of `length` bytes: its 5-byte gRPC prefix and
// its bytes.
size_t Wire(size_t length) { return 5 + length; }

std::string TakeFront(const ReceivedMessages& queue) {
  absl::string_view message;
  const Status status = queue.TakeFront(&message);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return std::string(message);
}

TEST(ReceivedMessagesTest, KeepsOrderSizesFlagsAndHeldBytes) {
  ReceivedMessages queue;
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.capacity_bytes(), std::string().capacity());
  const std::string sizes[] = {"", "a", std::string(127, 'b'),
                               std::string(128, 'c'), std::string(70000, 'd')};
  for (const std::string& message : sizes) {
    queue.Push(message, /*compressed=*/false, Wire(message.size()));
  }
  // Decompressed on arrival: it holds its wire bytes, not its own size.
  queue.Push("inflated", /*compressed=*/true, /*held_bytes=*/17);
  EXPECT_EQ(queue.size(), 6u);
  for (const std::string& message : sizes) {
    EXPECT_EQ(TakeFront(queue), message);
    EXPECT_FALSE(queue.front_compressed());
    EXPECT_EQ(queue.front_held_bytes(), Wire(message.size()));
    queue.Pop();
  }
  EXPECT_EQ(TakeFront(queue), "inflated");
  EXPECT_TRUE(queue.front_compressed());
  EXPECT_EQ(queue.front_held_bytes(), 17u);
  queue.Pop();
  EXPECT_TRUE(queue.empty());
}

TEST(ReceivedMessagesTest, ClearDropsEveryMessageAndBoundsTheCapacityKept) {
  ReceivedMessages queue;
  for (int i = 0; i < 3; ++i) {
    queue.Push(std::string(1000, 'a'), /*compressed=*/false, Wire(1000));
  }
  queue.Push(std::string(ReceivedMessages::kOwnBufferSize, 'b'),
             /*compressed=*/false, Wire(ReceivedMessages::kOwnBufferSize));
  ASSERT_GE(queue.capacity_bytes(), 3000u);
  queue.Clear(/*retained_capacity=*/4096);
  EXPECT_TRUE(queue.empty());
  EXPECT_LE(queue.capacity_bytes(), 4096u);
  EXPECT_GT(queue.capacity_bytes(), std::string().capacity());

  for (int i = 0; i < 10; ++i) {
    queue.Push(std::string(1000, 'c'), /*compressed=*/false, Wire(1000));
  }
  queue.Clear(/*retained_capacity=*/4096);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.capacity_bytes(), std::string().capacity());
  // Still a working queue.
  queue.Push("d", /*compressed=*/false, Wire(1));
  EXPECT_EQ(TakeFront(queue), "d");
}

TEST(ReceivedMessagesTest, AQueuedMessageCostsNoMoreThanItsWireBytes) {
  // Empty and tiny messages: each costs a 5-byte prefix on the wire and
  // flow control, and at most that in the queue (its header and bytes),
  // within the buffer's doubling.
  for (size_t length : {0, 1, 4, 200}) {
    ReceivedMessages queue;
    const std::string message(length, 'x');
    constexpr int kMessages = 100000;
    for (int i = 0; i < kMessages; ++i) {
      queue.Push(message, false, Wire(length));
    }
    EXPECT_LE(queue.capacity_bytes(), 2 * kMessages * Wire(length))
        << length << "-byte messages";
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_EQ(queue.front_held_bytes(), Wire(length));
      queue.Pop();
    }
  }
}

TEST(ReceivedMessagesTest, ASteadyStreamAllocatesNothingOnceWarm) {
  ReceivedMessages queue;
  const std::string message(1000, 'm');
  // Taken as they come, with some left behind each time: the live records
  // move to the front instead of the buffer growing.
  auto round = [&] {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 10; ++j) queue.Push(message, false, Wire(1000));
      for (int j = 0; j < 8; ++j) queue.Pop();
    }
    while (!queue.empty()) queue.Pop();
  };
  for (int i = 0; i < 3; ++i) round();
  testing::AllocationCounter counter;
  for (int i = 0; i < 100; ++i) round();
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_LE(queue.capacity_bytes(), ReceivedMessages::kRetainedCapacity);
}

TEST(ReceivedMessagesTest, LiveRecordsMoveOnlyOverAsManyTakenBytes) {
  // A deep queue taken one message at a time, as a reader slower than the
  // network takes it: moving the 63 live records to the front each time a
  // record's worth is free would copy 63 bytes per byte taken; they move
  // only once the taken bytes before them are as many, and the buffer grows
  // until then.
  ReceivedMessages queue;
  const std::string message(1000, 'm');
  for (int i = 0; i < 64; ++i) queue.Push(message, false, Wire(1000));
  absl::string_view front;
  ASSERT_TRUE(queue.TakeFront(&front).ok());
  constexpr int kRounds = 10000;
  int moves = 0;  // the front went back: the live records moved
  for (int i = 0; i < kRounds; ++i) {
    queue.Pop();
    queue.Push(message, false, Wire(1000));
    const char* before = front.data();
    ASSERT_TRUE(queue.TakeFront(&front).ok());
    moves += front.data() <= before;
  }
  EXPECT_LE(moves, kRounds / 64 + 8);
}

TEST(ReceivedMessagesTest, ALargeMessageHasABufferFromTheCacheUntilTaken) {
  transport::LargeBufferCache& cache = transport::LargeBufferCache::Global();
  cache.Clear();
  ReceivedMessages queue;
  const std::string large(1 << 20, 'L');
  queue.Push(large, false, Wire(large.size()));
  queue.Push("after", false, Wire(5));
  // The queue's own buffer holds only headers and small messages.
  EXPECT_LE(queue.capacity_bytes(), ReceivedMessages::kRetainedCapacity);
  EXPECT_EQ(TakeFront(queue), large);
  EXPECT_EQ(queue.front_held_bytes(), Wire(large.size()));
  queue.Pop();
  EXPECT_EQ(cache.retained_buffers(), 1u);  // back once taken
  EXPECT_EQ(TakeFront(queue), "after");
  queue.Pop();
  // The next large message reuses it.
  testing::AllocationCounter counter;
  queue.Push(large, false, Wire(large.size()));
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(cache.retained_buffers(), 0u);
  queue.Pop();
  cache.Clear();
}

TEST(ReceivedMessagesTest, ADeepQueueOfLargeMessagesReusesItsBuffers) {
  // A reader far behind a fast path: 256 messages of 64 KiB queued, then
  // taken, burst after burst. Once warm, no burst allocates: every message
  // goes into memory an earlier one used.
  transport::LargeBufferCache& cache = transport::LargeBufferCache::Global();
  cache.Clear();
  ReceivedMessages queue;
  const std::string large(64 << 10, 'L');
  auto burst = [&] {
    for (int i = 0; i < 256; ++i) {
      queue.Push(large, false, Wire(large.size()));
    }
    for (int i = 0; i < 256; ++i) {
      absl::string_view message;
      ASSERT_TRUE(queue.TakeFront(&message).ok());
      ASSERT_EQ(message, large);
      queue.Pop();
    }
  };
  burst();
  testing::AllocationCounter counter;
  burst();
  burst();
  EXPECT_EQ(counter.allocations(), 0);
  cache.Clear();
}

TEST(ReceivedMessagesTest, CompressedMessagesAreDecompressedWhenTaken) {
  ReceivedMessages queue;
  const std::string first(100000, 'z');
  const std::string wire_first = testing::ZlibCompress(first, /*gzip=*/true);
  const std::string wire_second =
      testing::ZlibCompress("second", /*gzip=*/true);
  queue.Push(wire_first, true, Wire(wire_first.size()),
             CompressionAlgorithm::kGzip, 1 << 20);
  queue.Push(wire_second, true, Wire(wire_second.size()),
             CompressionAlgorithm::kGzip, 1 << 20);
  queue.Push("plain", false, Wire(5));
  // Queued as received: the inflated bytes are not held.
  EXPECT_LT(queue.capacity_bytes(), 2 * (wire_first.size() + 64));
  EXPECT_EQ(TakeFront(queue), first);
  EXPECT_TRUE(queue.front_compressed());
  EXPECT_EQ(queue.front_held_bytes(), Wire(wire_first.size()));
  queue.Pop();
  EXPECT_EQ(TakeFront(queue), "second");
  queue.Pop();
  EXPECT_EQ(TakeFront(queue), "plain");
  EXPECT_FALSE(queue.front_compressed());
  queue.Pop();
}

TEST(ReceivedMessagesTest, AMessageInflatingPastItsLimitFailsWhenTaken) {
  ReceivedMessages queue;
  const std::string wire =
      testing::ZlibCompress(std::string(5000, 'x'), /*gzip=*/false);
  queue.Push(wire, true, Wire(wire.size()), CompressionAlgorithm::kDeflate,
             /*max_size=*/4096);
  absl::string_view message;
  const Status status = queue.TakeFront(&message);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  queue.Pop();
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace h2rpc::internal
