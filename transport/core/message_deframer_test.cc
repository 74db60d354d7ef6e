#include "transport/core/message_deframer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "transport/core/memory_quota.h"
#include "transport/core/message_framer.h"

namespace h2rpc::transport {
namespace {

using ::h2rpc::testing::AllocationCounter;
using ::h2rpc::testing::LiveHeapBytes;
using Options = MessageDeframer::Options;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

struct Message {
  std::string data;
  bool compressed;
};

// `size` bytes of a pattern that differs per `seed`, so swapped or shifted
// messages do not compare equal.
std::string Pattern(size_t size, int seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    s[i] = static_cast<char>((i * 31 + static_cast<size_t>(seed) * 97) % 251);
  }
  return s;
}

std::string Frame(const std::vector<Message>& messages) {
  std::string out;
  for (const Message& m : messages) {
    Status status =
        AppendFramedMessage(m.data, m.compressed, 0xFFFFFFFFu, &out);
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  return out;
}

std::string RawPrefix(uint8_t flag, uint32_t length) {
  std::string out(kMessagePrefixSize, '\0');
  EncodeMessagePrefix(false, length, out.data());
  out[0] = static_cast<char>(flag);
  return out;
}

// Copies every message; fails the message numbered `fail_at` (from 1).
class RecordingListener : public MessageDeframer::Listener {
 public:
  Status OnMessage(absl::string_view message, bool compressed) override {
    messages.push_back({std::string(message), compressed});
    if (messages.size() == fail_at) return fail_with;
    return Status();
  }

  std::vector<Message> messages;
  size_t fail_at = 0;
  Status fail_with;
};

// Compares each message with the expected list as it arrives; never
// allocates.
class ExpectingListener : public MessageDeframer::Listener {
 public:
  explicit ExpectingListener(const std::vector<Message>& expected)
      : expected_(expected) {}

  Status OnMessage(absl::string_view message, bool compressed) override {
    if (delivered_ >= expected_.size()) {
      ++mismatches_;
    } else if (message != expected_[delivered_].data ||
               compressed != expected_[delivered_].compressed) {
      ++mismatches_;
    }
    ++delivered_;
    return Status();
  }

  bool Matched() const {
    return mismatches_ == 0 && delivered_ == expected_.size();
  }
  size_t delivered() const { return delivered_; }

 private:
  const std::vector<Message>& expected_;
  size_t delivered_ = 0;
  size_t mismatches_ = 0;
};

// Counts messages and remembers where the last one lived; never allocates.
class CountingListener : public MessageDeframer::Listener {
 public:
  Status OnMessage(absl::string_view message, bool compressed) override {
    ++count;
    bytes += message.size();
    compressed_count += compressed ? 1 : 0;
    last = message;
    if (copy_last) last_copy.assign(message.data(), message.size());
    return Status();
  }

  size_t count = 0;
  size_t bytes = 0;
  size_t compressed_count = 0;
  // Valid only while the deframer keeps the message's buffer: a gathered
  // message larger than eager_reserve_limit is freed once delivered.
  absl::string_view last;
  // With copy_last: a copy of the last message (reserve it beforehand to
  // keep allocation counts unchanged).
  bool copy_last = false;
  std::string last_copy;
};

bool PointsInto(absl::string_view inner, absl::string_view outer) {
  return inner.data() >= outer.data() &&
         inner.data() + inner.size() <= outer.data() + outer.size();
}

Options WithCompression() {
  Options options;
  options.compression_available = true;
  return options;
}

// The split tests lower the eager reserve limit so that the stream's largest
// message still takes the grow-as-bytes-arrive path while the stream stays
// small enough to split at every offset (also under the sanitizers).
constexpr size_t kSplitTestEagerLimit = 1024;

// The stream the split tests chop up: sizes 0, 1, 5, 300, 3000 (the last
// above kSplitTestEagerLimit), mixed compressed flags.
std::vector<Message> MixedStream(bool compression) {
  const size_t sizes[] = {0, 1, 5, 300, 3000};
  std::vector<Message> messages;
  int seed = 0;
  for (size_t size : sizes) {
    messages.push_back({Pattern(size, ++seed), compression && seed % 2 == 0});
  }
  return messages;
}

TEST(MessageDeframerTest, MessageInsideOneChunkIsAViewIntoTheChunk) {
  const std::string chunk = Frame({{"hello", false}, {"world!", false}});
  MessageDeframer deframer(Options{});
  CountingListener listener;
  ASSERT_TRUE(deframer.Feed(chunk, listener).ok());
  EXPECT_EQ(listener.count, 2u);
  EXPECT_EQ(listener.last, "world!");
  EXPECT_EQ(listener.last.data(), chunk.data() + 15);
  EXPECT_EQ(deframer.gather_capacity(), 0u);
  EXPECT_TRUE(deframer.at_message_boundary());
}

TEST(MessageDeframerTest, BodyInOneChunkAfterPrefixInAnotherIsNotCopied) {
  const std::string stream = Frame({{Pattern(3000, 1), false}});
  const absl::string_view prefix(stream.data(), 3);
  const std::string rest = stream.substr(3);
  MessageDeframer deframer(Options{});
  CountingListener listener;
  AllocationCounter counter;
  ASSERT_TRUE(deframer.Feed(prefix, listener).ok());
  ASSERT_TRUE(deframer.Feed(rest, listener).ok());
  EXPECT_EQ(counter.allocations(), 0);
  ASSERT_EQ(listener.count, 1u);
  EXPECT_TRUE(PointsInto(listener.last, rest));
  EXPECT_EQ(listener.last, Pattern(3000, 1));
  EXPECT_EQ(deframer.gather_capacity(), 0u);
}

TEST(MessageDeframerTest, ManySmallMessagesInOneChunkDoNotAllocate) {
  std::vector<Message> messages;
  size_t total = 0;
  for (int i = 0; i < 1000; ++i) {
    const size_t size = static_cast<size_t>(i % 50);
    messages.push_back({Pattern(size, i), i % 3 == 0});
    total += size;
  }
  const std::string chunk = Frame(messages);
  MessageDeframer deframer(WithCompression());
  CountingListener listener;
  AllocationCounter counter;
  const Status status = deframer.Feed(chunk, listener);
  EXPECT_EQ(counter.allocations(), 0);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(listener.count, 1000u);
  EXPECT_EQ(listener.bytes, total);
  EXPECT_EQ(listener.compressed_count, 334u);
  EXPECT_TRUE(PointsInto(listener.last, chunk));
  EXPECT_TRUE(deframer.Finish().ok());
}

TEST(MessageDeframerTest, ZeroLengthMessagesAreDelivered) {
  MessageDeframer deframer(WithCompression());
  RecordingListener listener;
  ASSERT_TRUE(
      deframer.Feed(Frame({{"", false}, {"", true}, {"", false}}), listener)
          .ok());
  ASSERT_EQ(listener.messages.size(), 3u);
  EXPECT_TRUE(listener.messages[1].compressed);

  // Split prefix: delivered as soon as its last prefix byte arrives.
  const std::string empty = Frame({{"", false}});
  ASSERT_TRUE(deframer.Feed(empty.substr(0, 4), listener).ok());
  EXPECT_EQ(listener.messages.size(), 3u);
  EXPECT_FALSE(deframer.at_message_boundary());
  ASSERT_TRUE(deframer.Feed(empty.substr(4), listener).ok());
  ASSERT_EQ(listener.messages.size(), 4u);
  EXPECT_EQ(listener.messages[3].data, "");
  EXPECT_TRUE(deframer.at_message_boundary());
  EXPECT_TRUE(deframer.Finish().ok());
}

void ExpectSameMessagesAtEverySplit(bool compression) {
  const std::vector<Message> expected = MixedStream(compression);
  const std::string stream = Frame(expected);
  Options options;
  options.compression_available = compression;
  options.eager_reserve_limit = kSplitTestEagerLimit;
  size_t failures = 0;
  size_t first_failure = 0;
  for (size_t split = 0; split <= stream.size(); ++split) {
    MessageDeframer deframer(options);
    ExpectingListener listener(expected);
    const absl::string_view all(stream);
    const bool ok = deframer.Feed(all.substr(0, split), listener).ok() &&
                    deframer.Feed(all.substr(split), listener).ok() &&
                    deframer.Finish().ok();
    if (!ok || !listener.Matched()) {
      if (failures++ == 0) first_failure = split;
    }
  }
  EXPECT_EQ(failures, 0u) << "first failing split offset: " << first_failure
                          << " of " << stream.size();
}

TEST(MessageDeframerTest, TwoChunksSplitAtEveryOffsetYieldTheSameMessages) {
  ExpectSameMessagesAtEverySplit(/*compression=*/true);
}

TEST(MessageDeframerTest,
     TwoChunksSplitAtEveryOffsetWithoutCompressionYieldTheSameMessages) {
  ExpectSameMessagesAtEverySplit(/*compression=*/false);
}

TEST(MessageDeframerTest, OneByteAtATimeYieldsTheSameMessages) {
  const std::vector<Message> expected = MixedStream(true);
  const std::string stream = Frame(expected);
  Options options = WithCompression();
  options.eager_reserve_limit = kSplitTestEagerLimit;
  MessageDeframer deframer(options);
  ExpectingListener listener(expected);
  for (char c : stream) {
    ASSERT_TRUE(deframer.Feed(absl::string_view(&c, 1), listener).ok());
  }
  EXPECT_TRUE(listener.Matched());
  EXPECT_TRUE(deframer.Finish().ok());
}

TEST(MessageDeframerTest, ThreeChunksSplitAtEveryPairOfOffsets) {
  const std::vector<Message> expected = {
      {"", false}, {"a", true}, {"hello", false}, {Pattern(30, 4), true}};
  const std::string stream = Frame(expected);
  const absl::string_view all(stream);
  size_t runs = 0;
  for (size_t i = 0; i <= stream.size(); ++i) {
    for (size_t j = i; j <= stream.size(); ++j) {
      MessageDeframer deframer(WithCompression());
      ExpectingListener listener(expected);
      ASSERT_TRUE(deframer.Feed(all.substr(0, i), listener).ok());
      ASSERT_TRUE(deframer.Feed(all.substr(i, j - i), listener).ok());
      ASSERT_TRUE(deframer.Feed(all.substr(j), listener).ok());
      ASSERT_TRUE(listener.Matched()) << "splits at " << i << ", " << j;
      ASSERT_TRUE(deframer.Finish().ok());
      ++runs;
    }
  }
  EXPECT_EQ(runs, (stream.size() + 1) * (stream.size() + 2) / 2);
}

TEST(MessageDeframerTest, SmallMessageSpanningChunksIsReservedOnceExactly) {
  const std::string stream = Frame({{Pattern(kKiB, 7), false}});
  MessageDeframer deframer(Options{});
  CountingListener listener;
  AllocationCounter counter;
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(stream).substr(0, 500), listener).ok());
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(stream).substr(500), listener).ok());
  EXPECT_EQ(counter.allocations(), 1);
  EXPECT_EQ(deframer.gather_capacity(), kKiB);
  ASSERT_EQ(listener.count, 1u);
  EXPECT_EQ(listener.last, Pattern(kKiB, 7));
}

TEST(MessageDeframerTest, MessageAtTheEagerLimitIsReservedOnceExactly) {
  Options options;
  options.eager_reserve_limit = 64 * kKiB;
  const std::string stream = Frame({{Pattern(64 * kKiB, 8), false}});
  MessageDeframer deframer(options);
  CountingListener listener;
  AllocationCounter counter;
  for (size_t offset = 0; offset < stream.size(); offset += 1000) {
    ASSERT_TRUE(
        deframer.Feed(absl::string_view(stream).substr(offset, 1000), listener)
            .ok());
  }
  EXPECT_EQ(counter.allocations(), 1);
  EXPECT_EQ(deframer.gather_capacity(), 64 * kKiB);
  EXPECT_EQ(listener.count, 1u);
}

TEST(MessageDeframerTest, LargeMessageGrowsGeometricallyAsBytesArrive) {
  Options options;
  options.max_message_size = 32 * kMiB;
  const std::string body = Pattern(16 * kMiB, 9);
  std::string stream = RawPrefix(0, 16 * kMiB);
  stream += body;
  MessageDeframer deframer(options);
  CountingListener listener;
  listener.copy_last = true;
  listener.last_copy.reserve(body.size());
  AllocationCounter counter;
  size_t peak_capacity = 0;
  for (size_t offset = 0; offset < stream.size(); offset += 16 * kKiB) {
    ASSERT_TRUE(
        deframer
            .Feed(absl::string_view(stream).substr(offset, 16 * kKiB), listener)
            .ok());
    const size_t received =
        std::min(stream.size(), offset + 16 * kKiB) - kMessagePrefixSize;
    if (listener.count == 0) {
      peak_capacity = std::max(peak_capacity, deframer.gather_capacity());
    }
    // At most ~2x what arrived (and never less than the eager step).
    ASSERT_LE(deframer.gather_capacity(), std::max(64 * kKiB, 2 * received))
        << "after " << received << " body bytes";
  }
  EXPECT_LE(counter.allocations(), 10);
  EXPECT_GE(counter.allocations(), 2);
  EXPECT_EQ(peak_capacity, 16 * kMiB);
  ASSERT_EQ(listener.count, 1u);
  EXPECT_TRUE(listener.last_copy == body);
}

TEST(MessageDeframerTest, LargeMessageGrantedByTheQuotaIsGatheredOnceExactly) {
  MemoryQuota quota(64 * kMiB);
  MemoryQuotaShare share(&quota, 32 * kMiB);
  Options options;
  options.max_message_size = 32 * kMiB;
  options.quota = &share;
  const std::string body = Pattern(16 * kMiB, 9);
  std::string stream = RawPrefix(0, 16 * kMiB);
  stream += body;
  MessageDeframer deframer(options);
  CountingListener listener;
  listener.copy_last = true;
  listener.last_copy.reserve(body.size());
  AllocationCounter counter;
  for (size_t offset = 0; offset < stream.size(); offset += 16 * kKiB) {
    ASSERT_TRUE(
        deframer
            .Feed(absl::string_view(stream).substr(offset, 16 * kKiB), listener)
            .ok());
    if (listener.count == 0) {
      EXPECT_EQ(share.used(), 16 * kMiB);  // the grant is held
      EXPECT_EQ(deframer.gather_capacity(), 16 * kMiB);
      EXPECT_EQ(deframer.ungranted_bytes(), 0u);
      EXPECT_FALSE(deframer.waiting_for_grant());
    }
  }
  EXPECT_EQ(counter.allocations(), 1);  // no regrowth
  ASSERT_EQ(listener.count, 1u);
  EXPECT_TRUE(listener.last_copy == body);
  EXPECT_EQ(share.used(), 0u);  // returned once delivered
  EXPECT_EQ(quota.used(), 0u);
  EXPECT_EQ(deframer.gather_capacity(), 0u);  // and the buffer freed
}

// A cached buffer comes with the size and bytes of its previous user: a
// message gathered into it is exactly its own bytes, whether the buffer's
// size is below, above or equal to the message's length.
TEST(MessageDeframerTest, CachedGatherBufferHoldsExactlyTheNewMessage) {
  LargeBufferCache cache;
  std::string given;
  given.reserve(kMiB + 4096);
  given.assign(10, 'x');
  const char* storage = given.data();
  cache.Give(&given);
  Options options;
  options.max_message_size = 4 * kMiB;
  options.buffer_cache = &cache;
  CountingListener listener;
  listener.copy_last = true;
  const size_t sizes[] = {kMiB, kMiB - 1000, kMiB + 2000, kMiB + 2000};
  int pattern = 1;
  for (size_t size : sizes) {
    MessageDeframer deframer(options);
    const std::string body = Pattern(size, pattern++);
    std::string stream = RawPrefix(0, static_cast<uint32_t>(size));
    stream += body;
    for (size_t offset = 0; offset < stream.size(); offset += 16 * kKiB) {
      ASSERT_TRUE(deframer
                      .Feed(absl::string_view(stream).substr(offset, 16 * kKiB),
                            listener)
                      .ok());
    }
    EXPECT_TRUE(listener.last_copy == body) << size;
    EXPECT_EQ(listener.last.data(), storage) << size;  // the same buffer
  }
  EXPECT_EQ(listener.count, 4u);
  EXPECT_EQ(cache.retained_buffers(), 1u);
}

TEST(MessageDeframerTest, LargeGatherBuffersComeFromAndReturnToTheCache) {
  LargeBufferCache cache;
  MemoryQuota quota(64 * kMiB);
  MemoryQuotaShare share(&quota, 32 * kMiB);
  Options options;
  options.quota = &share;
  options.buffer_cache = &cache;
  const std::string body = Pattern(kMiB, 4);
  std::string stream = RawPrefix(0, kMiB);
  stream += body;
  MessageDeframer deframer(options);
  CountingListener listener;
  listener.copy_last = true;
  listener.last_copy.reserve(body.size());
  for (int message = 1; message <= 3; ++message) {
    AllocationCounter counter;
    for (size_t offset = 0; offset < stream.size(); offset += 16 * kKiB) {
      ASSERT_TRUE(deframer
                      .Feed(absl::string_view(stream).substr(offset, 16 * kKiB),
                            listener)
                      .ok());
    }
    ASSERT_EQ(listener.count, static_cast<size_t>(message));
    EXPECT_TRUE(listener.last_copy == body);
    // The first message reserves its buffer; the next ones reuse it.
    EXPECT_EQ(counter.allocations(), message == 1 ? 1 : 0)
        << "message " << message;
    EXPECT_EQ(deframer.gather_capacity(), 0u);
    EXPECT_EQ(cache.retained_buffers(), 1u);
    EXPECT_EQ(cache.retained_bytes(), kMiB);
  }
  // A deframer leaving the cache gives its buffer back to it.
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(stream).substr(0, 64 * kKiB), listener)
          .ok());
  EXPECT_EQ(cache.retained_buffers(), 0u);
  deframer.Reset(Options{});
  EXPECT_EQ(cache.retained_buffers(), 1u);
  EXPECT_EQ(share.used(), 0u);

  // A small gather buffer stays with the deframer across a Reset() that
  // changes the cache: a pooled stream's next message reuses it.
  deframer.Reset(options);
  const std::string small = Frame({{Pattern(kKiB, 5), false}});
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(small).substr(0, 100), listener).ok());
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(small).substr(100), listener).ok());
  EXPECT_EQ(deframer.gather_capacity(), kKiB);
  deframer.Reset(Options{});
  EXPECT_EQ(deframer.gather_capacity(), kKiB);
}

TEST(MessageDeframerTest, SmallMessagesNeedAGrantOnlyWhenTheySpanChunks) {
  MemoryQuota quota(kMiB);
  MemoryQuotaShare share(&quota, kMiB);
  Options options;
  options.quota = &share;
  MessageDeframer deframer(options);
  CountingListener listener;
  const std::string whole = Frame({{Pattern(kKiB, 3), false}});
  ASSERT_TRUE(deframer.Feed(whole, listener).ok());
  EXPECT_EQ(quota.grants(), 0u);
  // Prefix bytes alone are ungranted until the body comes.
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(whole).substr(0, 3), listener).ok());
  EXPECT_EQ(deframer.ungranted_bytes(), 3u);
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(whole).substr(3, 100), listener).ok());
  EXPECT_EQ(quota.grants(), 1u);
  EXPECT_EQ(share.used(), kKiB);
  EXPECT_EQ(deframer.ungranted_bytes(), 0u);
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(whole).substr(103), listener).ok());
  EXPECT_EQ(listener.count, 2u);
  EXPECT_EQ(share.used(), 0u);
  EXPECT_EQ(deframer.gather_capacity(), kKiB);  // kept: small
}

TEST(MessageDeframerTest, AMessageTheQuotaRefusesWaitsWithItsBytesUngranted) {
  // Two hostile streams each declare 4 MiB and send one byte: the first is
  // granted its declared size, the second (over the share) waits, holding
  // little, and reports its bytes as ungranted.
  MemoryQuota quota(64 * kMiB);
  MemoryQuotaShare share(&quota, 6 * kMiB);
  Options options;
  options.quota = &share;
  const std::string start = RawPrefix(0, 4 * kMiB) + "x";
  MessageDeframer first(options);
  MessageDeframer second(options);
  CountingListener listener;
  ASSERT_TRUE(first.Feed(start, listener).ok());
  ASSERT_TRUE(second.Feed(start, listener).ok());
  EXPECT_EQ(first.gather_capacity(), 4 * kMiB);
  EXPECT_FALSE(first.waiting_for_grant());
  EXPECT_EQ(first.ungranted_bytes(), 0u);
  EXPECT_EQ(second.gather_capacity(), 64 * kKiB);
  EXPECT_TRUE(second.waiting_for_grant());
  EXPECT_EQ(second.ungranted_bytes(), kMessagePrefixSize + 1);
  EXPECT_EQ(second.current_length(), 4 * kMiB);
  EXPECT_FALSE(second.RetryGrant());
  EXPECT_EQ(share.used(), 4 * kMiB);
  // More bytes of the waiting message are gathered as they come.
  ASSERT_TRUE(second.Feed(Pattern(100 * kKiB, 4), listener).ok());
  EXPECT_EQ(second.ungranted_bytes(), kMessagePrefixSize + 1 + 100 * kKiB);
  EXPECT_EQ(second.gather_capacity(), 128 * kKiB);
  // Abandoning the first message (Reset) gives its grant back and frees its
  // large buffer; the second is then granted.
  first.Reset(options);
  EXPECT_EQ(share.used(), 0u);
  EXPECT_EQ(first.gather_capacity(), 0u);
  EXPECT_TRUE(second.RetryGrant());
  EXPECT_FALSE(second.waiting_for_grant());
  EXPECT_EQ(second.ungranted_bytes(), 0u);
  EXPECT_EQ(share.used(), 4 * kMiB);
  // Once its buffer is full it grows straight to the granted size.
  ASSERT_TRUE(second.Feed(Pattern(28 * kKiB - 1, 5), listener).ok());
  EXPECT_EQ(second.gather_capacity(), 128 * kKiB);
  ASSERT_TRUE(second.Feed("y", listener).ok());
  EXPECT_EQ(second.gather_capacity(), 4 * kMiB);
  {
    MessageDeframer third(options);
    ASSERT_TRUE(third.Feed(start, listener).ok());
    EXPECT_TRUE(third.waiting_for_grant());
  }
  second.Reset(options);
  EXPECT_EQ(quota.used(), 0u);
}

TEST(MessageDeframerTest, AWaitingMessageThatCompletesIsDelivered) {
  MemoryQuota quota(64 * kMiB);
  MemoryQuotaShare share(&quota, 10);
  Options options;
  options.quota = &share;
  MessageDeframer deframer(options);
  RecordingListener listener;
  const std::string stream = Frame({{Pattern(10, 5), false}});
  ASSERT_TRUE(share.TryReserve(5));
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(stream).substr(0, 8), listener).ok());
  EXPECT_TRUE(deframer.waiting_for_grant());
  EXPECT_EQ(deframer.ungranted_bytes(), 8u);
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(stream).substr(8), listener).ok());
  ASSERT_EQ(listener.messages.size(), 1u);
  EXPECT_EQ(listener.messages[0].data, Pattern(10, 5));
  EXPECT_FALSE(deframer.waiting_for_grant());
  EXPECT_EQ(deframer.ungranted_bytes(), 0u);
  share.Release(5);
}

TEST(MessageDeframerTest, AMessageBeyondWhatTheQuotaCanGrantIsRefused) {
  MemoryQuota quota(64 * kMiB);
  MemoryQuotaShare share(&quota, 2 * kMiB);
  Options options;
  options.quota = &share;
  MessageDeframer deframer(options);
  CountingListener listener;
  const Status status =
      deframer.Feed(RawPrefix(0, 2 * kMiB + 1) + "abc", listener);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "received message of 2097153 bytes exceeds the most memory the "
            "server grants one message, 2097152 bytes (memory_quota_share, "
            "memory_quota)");
  EXPECT_EQ(deframer.gather_capacity(), 0u);
  EXPECT_EQ(deframer.ungranted_bytes(), 0u);
  EXPECT_EQ(quota.used(), 0u);
}

TEST(MessageDeframerTest, ARefusedMessageGivesTheGrantBack) {
  MemoryQuota quota(64 * kMiB);
  MemoryQuotaShare share(&quota, 8 * kMiB);
  Options options;
  options.quota = &share;
  MessageDeframer deframer(options);
  RecordingListener listener;
  listener.fail_at = 1;
  listener.fail_with = Status(StatusCode::kInvalidArgument, "bad proto");
  std::string stream = RawPrefix(0, 1 * kMiB) + Pattern(kMiB, 3);
  ASSERT_TRUE(
      deframer.Feed(absl::string_view(stream).substr(0, 100), listener).ok());
  EXPECT_EQ(share.used(), 1 * kMiB);
  EXPECT_FALSE(
      deframer.Feed(absl::string_view(stream).substr(100), listener).ok());
  EXPECT_EQ(share.used(), 0u);
}

TEST(MessageDeframerTest, GrowthIsCappedAtTheDeclaredLength) {
  const size_t length = 100 * kKiB;  // 64 KiB -> 100 KiB, not 128 KiB
  const std::string stream = Frame({{Pattern(length, 10), false}});
  MessageDeframer deframer(Options{});
  CountingListener listener;
  size_t peak_capacity = 0;
  for (size_t offset = 0; offset < stream.size(); offset += 10 * kKiB) {
    ASSERT_TRUE(
        deframer
            .Feed(absl::string_view(stream).substr(offset, 10 * kKiB), listener)
            .ok());
    peak_capacity = std::max(peak_capacity, deframer.gather_capacity());
  }
  EXPECT_EQ(peak_capacity, length);
  EXPECT_EQ(listener.count, 1u);
  // Larger than eager_reserve_limit: not kept once delivered.
  EXPECT_EQ(deframer.gather_capacity(), 0u);
}

TEST(MessageDeframerTest, HostileDeclaredLengthHoldsLittleMemory) {
  const int64_t live_before = LiveHeapBytes();
  MessageDeframer deframer(Options{});
  CountingListener listener;
  std::string chunk = RawPrefix(0, 4 * kMiB);
  chunk += "0123456789";
  ASSERT_TRUE(deframer.Feed(chunk, listener).ok());
  EXPECT_LT(deframer.gather_capacity(), 128 * kKiB);
  EXPECT_LT(LiveHeapBytes() - live_before, int64_t{128 * kKiB});
  EXPECT_EQ(listener.count, 0u);
  const Status status = deframer.Finish();
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(status.message(),
            "stream ended inside message #1: 4194294 of its 4194304 bytes "
            "missing");
}

TEST(MessageDeframerTest, PrefixAloneAllocatesNothing) {
  std::vector<std::unique_ptr<MessageDeframer>> streams;
  for (int i = 0; i < 100; ++i) {
    streams.push_back(std::make_unique<MessageDeframer>(Options{}));
  }
  const std::string prefix = RawPrefix(0, 4 * kMiB);
  CountingListener listener;
  AllocationCounter counter;
  for (const std::unique_ptr<MessageDeframer>& deframer : streams) {
    ASSERT_TRUE(deframer->Feed(prefix, listener).ok());
    EXPECT_FALSE(deframer->at_message_boundary());
  }
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(MessageDeframerTest, OversizedLengthIsRefusedBeforeAllocating) {
  Options options;
  options.max_message_size = kMiB;
  MessageDeframer deframer(options);
  CountingListener listener;
  std::string chunk = RawPrefix(0, kMiB + 1);
  chunk += "abc";
  AllocationCounter counter;
  const Status status = deframer.Feed(chunk, listener);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(deframer.gather_capacity(), 0u);
  EXPECT_LT(counter.bytes(), 1024);  // the error message only
}

TEST(MessageDeframerTest, MessageExactlyAtTheLimitIsAccepted) {
  Options options;
  options.max_message_size = 100;
  const std::string stream = Frame({{Pattern(100, 11), false}});
  MessageDeframer deframer(options);
  RecordingListener listener;
  ASSERT_TRUE(deframer.Feed(stream.substr(0, 50), listener).ok());
  ASSERT_TRUE(deframer.Feed(stream.substr(50), listener).ok());
  ASSERT_EQ(listener.messages.size(), 1u);
  EXPECT_EQ(listener.messages[0].data, Pattern(100, 11));
}

struct HostileCase {
  const char* name;
  Options options;
  std::vector<std::string> chunks;
  size_t delivered;          // messages delivered before the outcome
  StatusCode feed_code;      // of the first failing Feed, or kOk
  std::string feed_message;  // exact, when feed_code != kOk
  StatusCode finish_code;
  std::string finish_message;  // exact, when finish_code != kOk
};

std::vector<HostileCase> HostileCases() {
  Options limit_100;
  limit_100.max_message_size = 100;
  const std::string ab = Frame({{"ab", false}});
  const std::string five_mib = RawPrefix(0, 5 * kMiB);
  const std::string too_big =
      "received message of 5242880 bytes exceeds the limit of 4194304 "
      "(max_receive_message_size)";
  const std::string no_encoding =
      "received a message with the compressed flag set but no grpc-encoding "
      "was negotiated";
  return {
      {"truncated prefix",
       {},
       {std::string("\0\0\0", 3)},
       0,
       StatusCode::kOk,
       "",
       StatusCode::kInternal,
       "stream ended inside the prefix of message #1: 2 of its 5 prefix bytes "
       "missing"},
      {"truncated prefix after a message",
       {},
       {ab + std::string("\0", 1), std::string("\0", 1)},
       1,
       StatusCode::kOk,
       "",
       StatusCode::kInternal,
       "stream ended inside the prefix of message #2: 3 of its 5 prefix bytes "
       "missing"},
      {"prefix without body",
       {},
       {RawPrefix(0, 10)},
       0,
       StatusCode::kOk,
       "",
       StatusCode::kInternal,
       "stream ended inside message #1: 10 of its 10 bytes missing"},
      {"truncated body",
       {},
       {RawPrefix(0, 10) + "abc", "d"},
       0,
       StatusCode::kOk,
       "",
       StatusCode::kInternal,
       "stream ended inside message #1: 6 of its 10 bytes missing"},
      {"length 0xFFFFFFFF",
       {},
       {RawPrefix(0, 0xFFFFFFFFu)},
       0,
       StatusCode::kResourceExhausted,
       "received message of 4294967295 bytes exceeds the limit of 4194304 "
       "(max_receive_message_size)",
       StatusCode::kResourceExhausted,
       ""},
      {"5 MiB against the default limit",
       {},
       {five_mib},
       0,
       StatusCode::kResourceExhausted,
       too_big,
       StatusCode::kResourceExhausted,
       too_big},
      {"5 MiB with a split prefix",
       {},
       {five_mib.substr(0, 2), five_mib.substr(2)},
       0,
       StatusCode::kResourceExhausted,
       too_big,
       StatusCode::kResourceExhausted,
       too_big},
      {"limit + 1 after a good message",
       limit_100,
       {ab + RawPrefix(0, 101) + Pattern(101, 1)},
       1,
       StatusCode::kResourceExhausted,
       "received message of 101 bytes exceeds the limit of 100 "
       "(max_receive_message_size)",
       StatusCode::kResourceExhausted,
       ""},
      {"compressed flag without grpc-encoding",
       {},
       {RawPrefix(1, 2) + "xy"},
       0,
       StatusCode::kInternal,
       no_encoding,
       StatusCode::kInternal,
       no_encoding},
      {"compressed flag alone, without grpc-encoding",
       {},
       {std::string("\1", 1)},
       0,
       StatusCode::kInternal,
       no_encoding,
       StatusCode::kInternal,
       no_encoding},
      {"flag 2",
       WithCompression(),
       {RawPrefix(2, 0)},
       0,
       StatusCode::kInternal,
       "received a message with invalid compressed flag 2 (must be 0 or 1)",
       StatusCode::kInternal,
       ""},
      {"flag 0xFF judged on its own",
       WithCompression(),
       {"\xFF"},
       0,
       StatusCode::kInternal,
       "received a message with invalid compressed flag 255 (must be 0 or 1)",
       StatusCode::kInternal,
       ""},
      {"flag 2 after good messages split",
       {},
       {ab + ab + "\2", std::string("\0\0\0\0", 4)},
       2,
       StatusCode::kInternal,
       "received a message with invalid compressed flag 2 (must be 0 or 1)",
       StatusCode::kInternal,
       ""},
      {"empty chunks fed repeatedly",
       {},
       {"", "", ab.substr(0, 3), "", "", ab.substr(3), "", ""},
       1,
       StatusCode::kOk,
       "",
       StatusCode::kOk,
       ""},
  };
}

TEST(MessageDeframerTest, HostileInputs) {
  for (const HostileCase& c : HostileCases()) {
    SCOPED_TRACE(c.name);
    MessageDeframer deframer(c.options);
    RecordingListener listener;
    Status feed_status;
    for (const std::string& chunk : c.chunks) {
      feed_status = deframer.Feed(chunk, listener);
      if (!feed_status.ok()) break;
    }
    EXPECT_EQ(listener.messages.size(), c.delivered);
    EXPECT_EQ(feed_status.code(), c.feed_code) << feed_status.ToString();
    if (c.feed_code != StatusCode::kOk) {
      EXPECT_EQ(feed_status.message(), c.feed_message);
      EXPECT_FALSE(deframer.at_message_boundary());
      // Sticky: valid bytes afterwards change nothing.
      EXPECT_EQ(deframer.Feed(Frame({{"ok", false}}), listener), feed_status);
      EXPECT_EQ(deframer.Feed("", listener), feed_status);
      EXPECT_EQ(listener.messages.size(), c.delivered);
      EXPECT_EQ(deframer.Finish(), feed_status);
    }
    const Status finish = deframer.Finish();
    EXPECT_EQ(finish.code(), c.finish_code) << finish.ToString();
    if (c.finish_code != StatusCode::kOk && !c.finish_message.empty()) {
      EXPECT_EQ(finish.message(), c.finish_message);
    }
  }
}

TEST(MessageDeframerTest, EmptyChunksMidMessageChangeNothingAndDoNotAllocate) {
  const std::string stream = Frame({{Pattern(2000, 12), false}});
  MessageDeframer deframer(Options{});
  CountingListener listener;
  ASSERT_TRUE(deframer.Feed(stream.substr(0, 1000), listener).ok());
  const size_t capacity = deframer.gather_capacity();
  AllocationCounter counter;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(deframer.Feed(absl::string_view(), listener).ok());
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(deframer.gather_capacity(), capacity);
  EXPECT_FALSE(deframer.at_message_boundary());
  EXPECT_EQ(listener.count, 0u);
  ASSERT_TRUE(deframer.Feed(stream.substr(1000), listener).ok());
  EXPECT_EQ(listener.count, 1u);
  EXPECT_EQ(listener.last, Pattern(2000, 12));
}

TEST(MessageDeframerTest, ListenerErrorStopsDeliveryAndIsSticky) {
  const std::string chunk =
      Frame({{"one", false}, {"two", false}, {"three", false}});
  MessageDeframer deframer(Options{});
  RecordingListener listener;
  listener.fail_at = 2;
  listener.fail_with = Status(StatusCode::kCancelled, "listener gave up");
  EXPECT_EQ(deframer.Feed(chunk, listener), listener.fail_with);
  ASSERT_EQ(listener.messages.size(), 2u);
  EXPECT_EQ(listener.messages[1].data, "two");
  EXPECT_EQ(deframer.messages_delivered(), 2u);
  EXPECT_EQ(deframer.Feed(chunk, listener), listener.fail_with);
  EXPECT_EQ(listener.messages.size(), 2u);
  EXPECT_EQ(deframer.Finish(), listener.fail_with);
  EXPECT_FALSE(deframer.at_message_boundary());
}

TEST(MessageDeframerTest, ListenerErrorOnAGatheredMessageIsSticky) {
  const std::string stream = Frame({{Pattern(500, 13), false}, {"x", false}});
  MessageDeframer deframer(Options{});
  RecordingListener listener;
  listener.fail_at = 1;
  listener.fail_with = Status(StatusCode::kInvalidArgument, "bad proto");
  ASSERT_TRUE(deframer.Feed(stream.substr(0, 100), listener).ok());
  EXPECT_EQ(deframer.Feed(stream.substr(100), listener), listener.fail_with);
  ASSERT_EQ(listener.messages.size(), 1u);
  EXPECT_EQ(listener.messages[0].data, Pattern(500, 13));
  EXPECT_EQ(deframer.Finish(), listener.fail_with);
}

TEST(MessageDeframerTest, ResetReusesTheGatherBufferWithoutAllocating) {
  MessageDeframer deframer(Options{});
  CountingListener listener;
  const std::string first = Frame({{Pattern(kKiB, 14), false}});
  ASSERT_TRUE(deframer.Feed(first.substr(0, 10), listener).ok());
  ASSERT_TRUE(deframer.Feed(first.substr(10), listener).ok());
  ASSERT_EQ(deframer.gather_capacity(), kKiB);

  deframer.Reset(WithCompression());
  const std::string second =
      Frame({{Pattern(1000, 15), true}, {Pattern(kKiB, 16), false}});
  AllocationCounter counter;
  for (size_t offset = 0; offset < second.size(); offset += 300) {
    ASSERT_TRUE(
        deframer.Feed(absl::string_view(second).substr(offset, 300), listener)
            .ok());
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(deframer.gather_capacity(), kKiB);
  EXPECT_EQ(listener.count, 3u);
  EXPECT_EQ(listener.compressed_count, 1u);
  EXPECT_EQ(listener.last, Pattern(kKiB, 16));
  EXPECT_EQ(deframer.messages_delivered(), 2u);
}

TEST(MessageDeframerTest, ResetForgetsErrorsPartialMessagesAndOptions) {
  MessageDeframer deframer(WithCompression());
  RecordingListener listener;
  ASSERT_FALSE(deframer.Feed(RawPrefix(7, 0), listener).ok());
  deframer.Reset(Options{});
  EXPECT_TRUE(deframer.at_message_boundary());
  EXPECT_TRUE(deframer.Finish().ok());
  ASSERT_TRUE(
      deframer.Feed(Frame({{"a", false}}) + std::string("\0\0", 2), listener)
          .ok());
  EXPECT_FALSE(deframer.at_message_boundary());
  deframer.Reset(Options{});
  EXPECT_TRUE(deframer.Finish().ok());
  EXPECT_EQ(deframer.messages_delivered(), 0u);
  // The new options apply: compression is no longer available.
  EXPECT_EQ(deframer.Feed(Frame({{"z", true}}), listener).code(),
            StatusCode::kInternal);
  ASSERT_EQ(listener.messages.size(), 1u);
}

TEST(MessageDeframerTest, ReleaseGatherBufferFreesTheMemory) {
  MessageDeframer deframer(Options{});
  CountingListener listener;
  const std::string framed = Frame({{Pattern(kKiB, 17), false}});
  const absl::string_view stream(framed);
  ASSERT_TRUE(deframer.Feed(stream.substr(0, 100), listener).ok());
  ASSERT_TRUE(deframer.Feed(stream.substr(100), listener).ok());
  ASSERT_EQ(deframer.gather_capacity(), kKiB);
  const int64_t live_before = LiveHeapBytes();
  deframer.ReleaseGatherBuffer();
  EXPECT_EQ(deframer.gather_capacity(), 0u);
  EXPECT_LE(LiveHeapBytes(), live_before - int64_t{kKiB});
  AllocationCounter counter;
  ASSERT_TRUE(deframer.Feed(stream.substr(0, 100), listener).ok());
  ASSERT_TRUE(deframer.Feed(stream.substr(100), listener).ok());
  EXPECT_EQ(counter.allocations(), 1);
  EXPECT_EQ(listener.count, 2u);
}

TEST(MessageDeframerTest, AtMessageBoundaryFollowsTheStream) {
  const std::string stream = Frame({{"abc", false}});
  MessageDeframer deframer(Options{});
  CountingListener listener;
  EXPECT_TRUE(deframer.at_message_boundary());
  for (size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(deframer.Feed(stream.substr(i, 1), listener).ok());
    EXPECT_EQ(deframer.at_message_boundary(), i + 1 == stream.size()) << i;
  }
  EXPECT_EQ(listener.count, 1u);
}

}  // namespace
}  // namespace h2rpc::transport
