#include "transport/http2/output_queue.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "transport/core/large_buffer_cache.h"
#include "transport/http2/stream_base.h"

namespace h2rpc::transport::http2 {
namespace {

using ::h2rpc::testing::AllocationCounter;

constexpr size_t kKiB = 1024;
// A body large enough to be lent (its buffer is past kRetainedCapacity).
constexpr size_t kLargeBody = OutgoingData::kRetainedCapacity + 4 * kKiB;

// Writes everything pending, one piece at a time, as a wire that takes
// PendingOutput() would.
std::string Drain(OutputQueue* queue) {
  std::string written;
  for (absl::string_view piece = queue->Front(); !piece.empty();
       piece = queue->Front()) {
    written.append(piece.data(), piece.size());
    queue->Consume(piece.size());
  }
  return written;
}

std::string Body(size_t size, char first) {
  std::string body(size, '\0');
  for (size_t i = 0; i < size; ++i) body[i] = static_cast<char>(first + i % 23);
  return body;
}

// A finished body in `data`, handed to nghttp2 in full.
void FinishBody(OutgoingData* data, const std::string& body) {
  data->buffer().append(body);
  data->set_end_of_data();
  data->Reserve(body.size());
}

TEST(OutputQueueTest, CopiedBytesCoalesceIntoOnePieceUntilTheRoundEnds) {
  OutputQueue queue;
  queue.Append("abc");
  queue.Append("defg");
  iovec pieces[4];
  ASSERT_EQ(queue.Peek(pieces, 4), 1u);
  EXPECT_EQ(
      std::string(static_cast<char*>(pieces[0].iov_base), pieces[0].iov_len),
      "abcdefg");
  queue.Consume(2);
  EXPECT_EQ(queue.Front(), "cdefg");
  EXPECT_EQ(queue.pending(), 5u);
  EXPECT_EQ(queue.appended(), 7u);
  queue.Consume(5);
  EXPECT_EQ(queue.pending(), 0u);
  EXPECT_EQ(queue.appended(), 0u);  // the next round starts
  EXPECT_TRUE(queue.Front().empty());
  EXPECT_EQ(queue.Peek(pieces, 4), 0u);
}

TEST(OutputQueueTest, AnEmptyAppendBetweenLentPiecesEndsNothing) {
  OutgoingData first;
  OutgoingData second;
  const std::string body = Body(kLargeBody, 'n');
  FinishBody(&first, body);
  FinishBody(&second, body);
  OutputQueue queue;
  first.SendReserved(body.size(), &queue);
  queue.Append("");  // an empty DATA frame's payload
  second.SendReserved(body.size(), &queue);
  queue.Consume(body.size());
  EXPECT_EQ(queue.Front().size(), body.size());
  EXPECT_EQ(Drain(&queue), body);
}

TEST(OutputQueueTest, AFinishedLargeBodyIsWrittenFromTheStreamsBuffer) {
  OutgoingData data;
  const std::string body = Body(kLargeBody, 'a');
  FinishBody(&data, body);
  OutputQueue queue;
  queue.Append("HEADER");
  data.SendReserved(body.size() / 2, &queue);
  queue.Append("HEADER");
  data.SendReserved(body.size() - body.size() / 2, &queue);
  EXPECT_TRUE(data.lent());

  iovec pieces[8];
  ASSERT_EQ(queue.Peek(pieces, 8), 4u);
  EXPECT_EQ(pieces[1].iov_base, data.buffer().data());
  EXPECT_EQ(pieces[3].iov_base, data.buffer().data() + body.size() / 2);
  // A write that ends inside a lent piece.
  queue.Consume(6 + 10);
  EXPECT_EQ(queue.Front().data(), data.buffer().data() + 10);
  ASSERT_EQ(queue.Peek(pieces, 2), 2u);  // at most `max`
  EXPECT_EQ(pieces[0].iov_len, body.size() / 2 - 10);
  EXPECT_EQ(Drain(&queue), body.substr(10, body.size() / 2 - 10) + "HEADER" +
                               body.substr(body.size() / 2));
  EXPECT_FALSE(data.lent());
}

TEST(OutputQueueTest, SmallPiecesSmallBodiesAndUnfinishedBodiesAreCopied) {
  OutputQueue queue;
  OutgoingData large;
  FinishBody(&large, Body(kLargeBody, 'z'));
  large.SendReserved(OutputQueue::kMinLentBytes - 1, &queue);
  EXPECT_FALSE(large.lent());
  EXPECT_EQ(Drain(&queue),
            Body(kLargeBody, 'z').substr(0, OutputQueue::kMinLentBytes - 1));

  OutgoingData small;
  FinishBody(&small, Body(4 * kKiB, 'a'));
  small.SendReserved(4 * kKiB, &queue);
  EXPECT_FALSE(small.lent());

  OutgoingData streaming;  // more messages may follow: no end of data
  streaming.buffer() = Body(kLargeBody, 'b');
  streaming.Reserve(kLargeBody);
  streaming.SendReserved(kLargeBody, &queue);
  EXPECT_FALSE(streaming.lent());
  EXPECT_EQ(Drain(&queue), Body(4 * kKiB, 'a') + Body(kLargeBody, 'b'));
}

TEST(OutputQueueTest, ClearingALentBodyHandsItsBufferToTheQueue) {
  auto data = std::make_unique<OutgoingData>();
  const std::string body = Body(kLargeBody, 'c');
  FinishBody(data.get(), body);
  OutputQueue queue;
  data->SendReserved(body.size(), &queue);
  const char* const lent_bytes = data->buffer().data();
  data->Clear();
  EXPECT_FALSE(data->lent());
  // The stream is reused at once; the queued bytes do not change.
  data->buffer().assign(kLargeBody, 'x');
  EXPECT_EQ(queue.Front().data(), lent_bytes);
  data.reset();
  {
    OutgoingData destroyed;
    FinishBody(&destroyed, Body(kLargeBody, 'd'));
    destroyed.SendReserved(kLargeBody, &queue);
  }
  EXPECT_EQ(Drain(&queue), body + Body(kLargeBody, 'd'));
}

TEST(OutputQueueTest, TheAdoptionBoundFollowsTheWriteBufferLimit) {
  EXPECT_EQ(OutputQueue::MaxAdoptedBytesFor(256 << 10), 4u << 20);
  EXPECT_EQ(OutputQueue::MaxAdoptedBytesFor(64 << 10), 1u << 20);
  EXPECT_EQ(OutputQueue::MaxAdoptedBytesFor(SIZE_MAX / 8), SIZE_MAX);
}

TEST(OutputQueueTest, BuffersPastTheAdoptionBoundAreCopiedFrom) {
  constexpr size_t kBound = 1 << 20;
  OutputQueue queue(kBound);
  OutgoingData first;
  OutgoingData second;
  const std::string body = Body(kBound / 2 + 1, 'm');
  FinishBody(&first, body);
  FinishBody(&second, body);
  first.SendReserved(body.size(), &queue);
  second.SendReserved(body.size(), &queue);
  iovec pieces[2];
  ASSERT_EQ(queue.Peek(pieces, 2), 2u);
  first.Clear();   // adopted: the bytes stay where they are
  second.Clear();  // both would pass the bound: copied
  iovec after[2];
  ASSERT_EQ(queue.Peek(after, 2), 2u);
  EXPECT_EQ(after[0].iov_base, pieces[0].iov_base);
  EXPECT_NE(after[1].iov_base, pieces[1].iov_base);
  EXPECT_EQ(Drain(&queue), body + body);
}

TEST(OutputQueueTest, TakingBackLentBytesCopiesWhatIsUnwritten) {
  OutgoingData data;
  const std::string body = Body(kLargeBody, 'e');
  FinishBody(&data, body);
  OutputQueue queue;
  data.SendReserved(body.size(), &queue);
  queue.Consume(100);
  data.TakeBackLent();
  EXPECT_FALSE(data.lent());
  EXPECT_NE(queue.Front().data(), data.buffer().data() + 100);
  // The body is the stream's again: sent again from the start (a retry).
  ASSERT_TRUE(data.Rewind());
  data.buffer()[100] = '!';
  EXPECT_EQ(Drain(&queue), body.substr(100));
}

TEST(OutputQueueTest, ABodyLentToOneConnectionIsCopiedForAnother) {
  OutgoingData data;
  const std::string body = Body(kLargeBody, 'f');
  FinishBody(&data, body);
  OutputQueue first;
  OutputQueue second;
  const size_t split = 8 * kKiB;
  data.SendReserved(split, &first);
  data.SendReserved(body.size() - split, &second);
  EXPECT_EQ(first.Front().data(), data.buffer().data());
  EXPECT_NE(second.Front().data(), data.buffer().data() + split);
  EXPECT_EQ(Drain(&second), body.substr(split));
  EXPECT_TRUE(data.lent());
  EXPECT_EQ(Drain(&first), body.substr(0, split));
  EXPECT_FALSE(data.lent());
}

TEST(OutputQueueTest, ClearAndDestructionLetGoOfLenders) {
  OutgoingData data;
  FinishBody(&data, Body(kLargeBody, 'g'));
  {
    OutputQueue queue;
    data.SendReserved(kLargeBody / 2, &queue);
    queue.Append("frame");
    queue.Clear();
    EXPECT_FALSE(data.lent());
    EXPECT_EQ(queue.pending(), 0u);
    EXPECT_EQ(queue.appended(), 0u);
    data.SendReserved(kLargeBody / 2, &queue);
    EXPECT_TRUE(data.lent());
  }
  EXPECT_FALSE(data.lent());
}

TEST(OutputQueueTest, LendingAgainAllocatesNothingOnceWarm) {
  OutgoingData data;
  const std::string body = Body(kLargeBody, 'h');
  OutputQueue queue;
  for (int round = 0; round < 3; ++round) {
    AllocationCounter counter;
    // As SerializeFramed takes a large buffer.
    LargeBufferCache::Global().Take(body.size(), &data.buffer());
    data.buffer().clear();  // it comes with the previous body's size
    FinishBody(&data, body);
    queue.Append("HEADER");
    data.SendReserved(body.size(), &queue);
    size_t written = 0;
    for (absl::string_view piece = queue.Front(); !piece.empty();
         piece = queue.Front()) {
      written += piece.size();
      queue.Consume(piece.size());
    }
    EXPECT_EQ(written, body.size() + 6);
    data.Clear();
    if (round > 0) {
      EXPECT_EQ(counter.allocations(), 0) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace h2rpc::transport::http2
