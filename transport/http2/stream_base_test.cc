#include "transport/http2/stream_base.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "transport/core/memory_quota.h"

namespace h2rpc::transport::http2 {
namespace {

using ::h2rpc::testing::AllocationCounter;
using ::testing::HasSubstr;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;

// Sends `n` reserved bytes through a connection's queue and writes them
// to `out`, as the send-data callback and the wire do.
void SendReserved(OutgoingData* data, size_t n, std::string* out) {
  static OutputQueue queue;
  data->SendReserved(n, &queue);
  for (absl::string_view piece = queue.Front(); !piece.empty();
       piece = queue.Front()) {
    out->append(piece.data(), piece.size());
    queue.Consume(piece.size());
  }
}

// Hands everything pending to nghttp2 and writes it.
void WriteAll(OutgoingData* data, std::string* out) {
  SendReserved(data, data->Reserve(data->unreserved()), out);
}

TEST(OutgoingDataTest, AppendedBytesAreChargedUntilWritten) {
  MemoryQuota quota(10 * kMiB);
  MemoryQuotaShare share(&quota, 4 * kMiB);
  OutgoingData data;
  data.set_quota(&share);
  data.buffer().append(3 * kKiB, 'a');
  ASSERT_TRUE(data.ChargeAppended().ok());
  EXPECT_EQ(share.used(), 3 * kKiB);
  EXPECT_EQ(quota.used(), 3 * kKiB);
  EXPECT_TRUE(data.ChargeAppended().ok());  // nothing new: no change
  EXPECT_EQ(share.used(), 3 * kKiB);

  std::string out;
  SendReserved(&data, data.Reserve(kKiB), &out);
  EXPECT_EQ(share.used(), 2 * kKiB);
  WriteAll(&data, &out);
  EXPECT_EQ(share.used(), 0u);
  EXPECT_EQ(out.size(), 3 * kKiB);
}

TEST(OutgoingDataTest, AMessageTheQuotaRefusesIsRemovedAndNamed) {
  MemoryQuota quota(10 * kMiB);
  MemoryQuotaShare share(&quota, 4 * kMiB);
  OutgoingData data;
  data.set_quota(&share);
  data.buffer().append("first");
  ASSERT_TRUE(data.ChargeAppended().ok());
  data.buffer().append(4 * kMiB, 'b');
  const Status status = data.ChargeAppended();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(),
              HasSubstr("no room for a message of 4194304 bytes to send"));
  EXPECT_THAT(status.message(), HasSubstr("memory_quota_share"));
  EXPECT_EQ(data.buffer(), "first");  // the earlier message stays
  EXPECT_LE(data.buffer().capacity(), OutgoingData::kRetainedCapacity);
  EXPECT_EQ(share.used(), 5u);
}

TEST(OutgoingDataTest, ClearAndDetachingGiveTheChargeBack) {
  MemoryQuota quota(10 * kMiB);
  MemoryQuotaShare share(&quota, 4 * kMiB);
  OutgoingData data;
  data.set_quota(&share);
  data.buffer().append(kMiB, 'c');
  ASSERT_TRUE(data.ChargeAppended().ok());
  data.Clear();
  EXPECT_EQ(share.used(), 0u);
  data.buffer().append(kKiB, 'd');
  ASSERT_TRUE(data.ChargeAppended().ok());
  data.set_quota(nullptr);
  EXPECT_EQ(share.used(), 0u);
  EXPECT_TRUE(data.ChargeAppended().ok());  // no quota: nothing charged
  EXPECT_EQ(data.charged(), 0u);
}

TEST(OutgoingDataTest, ALargeBufferIsFreedOnceDrainedASmallOneKept) {
  OutgoingData data;
  std::string out;
  data.buffer().append(2 * kKiB, 'e');
  WriteAll(&data, &out);
  const size_t small_capacity = data.buffer().capacity();
  EXPECT_GE(small_capacity, 2 * kKiB);
  data.buffer().append(kMiB, 'f');
  WriteAll(&data, &out);
  EXPECT_LE(data.buffer().capacity(), OutgoingData::kRetainedCapacity);
  data.buffer().append(kMiB, 'g');
  data.Clear();
  EXPECT_LE(data.buffer().capacity(), OutgoingData::kRetainedCapacity);
}

TEST(OutgoingDataTest, SmallMessagesAreChargedWithoutAllocating) {
  MemoryQuota quota(10 * kMiB);
  MemoryQuotaShare share(&quota, 4 * kMiB);
  OutgoingData data;
  data.set_quota(&share);
  std::string out;
  out.reserve(64 * kKiB);
  data.buffer().reserve(4 * kKiB);
  AllocationCounter counter;
  for (int i = 0; i < 50; ++i) {
    data.buffer().append(kKiB, 'h');
    ASSERT_TRUE(data.ChargeAppended().ok());
    WriteAll(&data, &out);
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(share.used(), 0u);
}

TEST(ReceiveWindowTest, UngrantedBytesAreWithheldUntilGranted) {
  ReceiveWindow window;
  window.Received(1000);
  window.set_ungranted(600);
  EXPECT_EQ(window.TakeCredit(), 400u);
  window.Received(500);
  window.set_ungranted(1100);
  EXPECT_EQ(window.TakeCredit(), 0u);
  window.set_ungranted(0);  // granted
  EXPECT_EQ(window.TakeCredit(), 1100u);
  EXPECT_EQ(window.TakeCredit(), 0u);
}

TEST(ReceiveWindowTest, HeldAndUngrantedBytesTogetherAreWithheld) {
  ReceiveWindow window;
  window.Received(300);
  const size_t held = window.HoldMessage(100);  // 105 bytes
  window.Received(200);
  window.set_ungranted(200);
  EXPECT_EQ(window.TakeCredit(), 195u);
  window.Release(held);
  EXPECT_EQ(window.TakeCredit(), 105u);
  // Closing returns everything not yet returned, ungranted bytes included.
  EXPECT_EQ(window.CloseAndTakeAll(), 200u);
}

}  // namespace
}  // namespace h2rpc::transport::http2
