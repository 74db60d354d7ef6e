#include "transport/core/memory_quota.h"

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport {
namespace {

using ::h2rpc::testing::AllocationCounter;
using ::testing::HasSubstr;

constexpr size_t kMiB = 1 << 20;

class CountingListener final : public MemoryQuota::Listener {
 public:
  void OnMemoryQuotaReleased() override {
    calls.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<int> calls{0};
};

TEST(MemoryQuotaTest, GrantsUpToTheLimitAndRefusesBeyond) {
  MemoryQuota quota(10 * kMiB);
  EXPECT_TRUE(quota.TryReserve(6 * kMiB));
  EXPECT_TRUE(quota.TryReserve(4 * kMiB));
  EXPECT_EQ(quota.used(), 10 * kMiB);
  EXPECT_FALSE(quota.TryReserve(1));
  EXPECT_EQ(quota.used(), 10 * kMiB);  // a refusal takes nothing
  quota.Release(4 * kMiB);
  EXPECT_FALSE(quota.TryReserve(4 * kMiB + 1));
  EXPECT_TRUE(quota.TryReserve(4 * kMiB));
  quota.Release(10 * kMiB);
  EXPECT_EQ(quota.used(), 0u);
  EXPECT_EQ(quota.grants(), 3u);
  EXPECT_EQ(quota.refusals(), 2u);
  EXPECT_EQ(quota.peak_used(), 10 * kMiB);
}

TEST(MemoryQuotaTest, ARequestLargerThanTheLimitIsRefusedOutright) {
  MemoryQuota quota(kMiB);
  EXPECT_FALSE(quota.TryReserve(kMiB + 1));
  EXPECT_FALSE(quota.TryReserve(static_cast<size_t>(-1)));  // no overflow
  EXPECT_EQ(quota.used(), 0u);
}

TEST(MemoryQuotaTest, ExhaustedWhenLessThanASixteenthIsFree) {
  MemoryQuota quota(16 * kMiB);
  ASSERT_TRUE(quota.TryReserve(15 * kMiB));
  EXPECT_FALSE(quota.exhausted());  // exactly 1/16 free
  ASSERT_TRUE(quota.TryReserve(1));
  EXPECT_TRUE(quota.exhausted());
  quota.Release(1);
  EXPECT_FALSE(quota.exhausted());
  quota.Release(15 * kMiB);
}

TEST(MemoryQuotaTest, ListenersHearOfReleasesOnlyWhileSomeoneWaits) {
  MemoryQuota quota(kMiB);
  CountingListener a;
  CountingListener b;
  quota.AddListener(&a);
  quota.AddListener(&b);
  ASSERT_TRUE(quota.TryReserve(100));
  quota.Release(50);
  EXPECT_EQ(a.calls.load(), 0);
  quota.AddWaiter();
  quota.Release(50);
  EXPECT_EQ(a.calls.load(), 1);
  EXPECT_EQ(b.calls.load(), 1);
  quota.RemoveWaiter();
  ASSERT_TRUE(quota.TryReserve(100));
  quota.Release(100);
  EXPECT_EQ(a.calls.load(), 1);
}

TEST(MemoryQuotaTest, ReservingAndReleasingNeverAllocate) {
  MemoryQuota quota(kMiB);
  CountingListener listener;
  quota.AddListener(&listener);
  MemoryQuotaShare share(&quota, kMiB);
  AllocationCounter counter;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(share.TryReserve(1000));
    ASSERT_FALSE(share.TryReserve(kMiB));
    share.SetWaiting(true);
    share.Release(1000);
    share.SetWaiting(false);
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(listener.calls.load(), 100);
}

TEST(MemoryQuotaTest, ConcurrentHoldersNeverExceedTheLimit) {
  constexpr size_t kLimit = 1000;
  MemoryQuota quota(kLimit);
  std::atomic<int> held_total{0};
  std::atomic<bool> exceeded{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const size_t bytes = 100 + 50 * t;
      for (int i = 0; i < 20000; ++i) {
        if (!quota.TryReserve(bytes)) continue;
        const int now = held_total.fetch_add(static_cast<int>(bytes)) +
                        static_cast<int>(bytes);
        if (now > static_cast<int>(kLimit)) exceeded = true;
        held_total.fetch_sub(static_cast<int>(bytes));
        quota.Release(bytes);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(exceeded.load());
  EXPECT_LE(quota.peak_used(), kLimit);
  EXPECT_EQ(quota.used(), 0u);
  EXPECT_GT(quota.grants(), 0u);
}

TEST(MemoryQuotaShareTest, IsBoundedByItsOwnLimitAndTheServersQuota) {
  MemoryQuota quota(10 * kMiB);
  MemoryQuotaShare first(&quota, 6 * kMiB);
  MemoryQuotaShare second(&quota, 6 * kMiB);
  EXPECT_EQ(first.max_reservation(), 6 * kMiB);
  EXPECT_TRUE(first.TryReserve(6 * kMiB));
  EXPECT_FALSE(first.TryReserve(1)) << "the share is full";
  EXPECT_FALSE(second.TryReserve(5 * kMiB)) << "the server is nearly full";
  EXPECT_TRUE(second.TryReserve(4 * kMiB));
  EXPECT_EQ(quota.used(), 10 * kMiB);
  first.Release(2 * kMiB);
  EXPECT_EQ(first.used(), 4 * kMiB);
  EXPECT_EQ(quota.used(), 8 * kMiB);
  EXPECT_TRUE(second.TryReserve(2 * kMiB));
  EXPECT_EQ(second.used(), 6 * kMiB);
  first.Release(4 * kMiB);
  second.Release(6 * kMiB);
  EXPECT_EQ(quota.used(), 0u);

  MemoryQuotaShare large(&quota, 100 * kMiB);
  EXPECT_EQ(large.max_reservation(), 10 * kMiB);
}

TEST(MemoryQuotaShareTest, ForcedBytesCountEvenPastTheLimits) {
  MemoryQuota quota(10 * kMiB);
  MemoryQuotaShare share(&quota, 6 * kMiB);
  MemoryQuotaShare other(&quota, 6 * kMiB);
  ASSERT_TRUE(share.TryReserve(5 * kMiB));
  share.ForceReserve(3 * kMiB);
  EXPECT_EQ(share.used(), 8 * kMiB);
  EXPECT_EQ(quota.used(), 8 * kMiB);
  EXPECT_EQ(quota.peak_used(), 8 * kMiB);
  EXPECT_FALSE(share.TryReserve(1)) << "the share is past its limit";
  EXPECT_FALSE(other.TryReserve(3 * kMiB)) << "the server holds 8 of 10";
  other.ForceReserve(4 * kMiB);
  EXPECT_EQ(quota.used(), 12 * kMiB);
  EXPECT_TRUE(quota.exhausted());
  EXPECT_FALSE(other.TryReserve(1)) << "the server is past its limit";
  share.Release(8 * kMiB);
  other.Release(4 * kMiB);
  EXPECT_EQ(quota.used(), 0u);
  EXPECT_TRUE(other.TryReserve(6 * kMiB));
  other.Release(6 * kMiB);
}

TEST(MemoryQuotaShareTest, DestroyingAShareGivesEverythingBack) {
  MemoryQuota quota(10 * kMiB);
  {
    MemoryQuotaShare share(&quota, 8 * kMiB);
    ASSERT_TRUE(share.TryReserve(3 * kMiB));
    share.SetWaiting(true);
    EXPECT_EQ(quota.waiters(), 1);
  }
  EXPECT_EQ(quota.used(), 0u);
  EXPECT_EQ(quota.waiters(), 0);
}

TEST(MemoryQuotaShareTest, WaitingRegistersOnceWithTheServer) {
  MemoryQuota quota(kMiB);
  CountingListener listener;
  quota.AddListener(&listener);
  MemoryQuotaShare share(&quota, kMiB);
  MemoryQuotaShare other(&quota, kMiB);
  share.SetWaiting(true);
  share.SetWaiting(true);
  EXPECT_EQ(quota.waiters(), 1);
  // A release on another connection wakes the waiting one's listener.
  ASSERT_TRUE(other.TryReserve(10));
  other.Release(10);
  EXPECT_EQ(listener.calls.load(), 1);
  share.SetWaiting(false);
  EXPECT_EQ(quota.waiters(), 0);
  ASSERT_TRUE(other.TryReserve(10));
  other.Release(10);
  EXPECT_EQ(listener.calls.load(), 1);
}

TEST(MemoryQuotaShareTest, RefusalNamesBothLimitsAndTheirUse) {
  MemoryQuota quota(64 * kMiB);
  MemoryQuotaShare share(&quota, 32 * kMiB);
  ASSERT_TRUE(share.TryReserve(20 * kMiB));
  const Status status = share.Refusal("a response of 16777221 bytes");
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("a response of 16777221 bytes"));
  EXPECT_THAT(status.message(),
              HasSubstr("holds 20971520 of its 33554432 bytes "
                        "(memory_quota_share)"));
  EXPECT_THAT(status.message(),
              HasSubstr("holds 20971520 of 67108864 bytes (memory_quota)"));
  share.Release(20 * kMiB);
}

}  // namespace
}  // namespace h2rpc::transport
