// The keepalive timing rules on a fake clock: when a PING is due, when the
// peer is dead, which PINGs are strikes, and the age jitter.
#include "transport/http2/keepalive.h"

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "transport/io/fake_scheduler.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::transport::http2 {
namespace {

constexpr absl::Duration kTime = absl::Seconds(10);
constexpr absl::Duration kTimeout = absl::Seconds(3);

class RecordingDelegate final : public KeepalivePinger::Delegate {
 public:
  explicit RecordingDelegate(io::FakeScheduler* scheduler)
      : scheduler_(scheduler) {}
  bool SendKeepalivePing() override {
    pings.push_back(scheduler_->Now());
    return accept_pings;
  }
  void OnKeepaliveTimeout() override {
    ++timeouts;
    timeout_at = scheduler_->Now();
  }

  std::vector<io::MonotonicTime> pings;
  int timeouts = 0;
  io::MonotonicTime timeout_at;
  bool accept_pings = true;

 private:
  io::FakeScheduler* const scheduler_;
};

class KeepalivePingerTest : public ::testing::Test {
 protected:
  io::MonotonicTime start() const { return start_; }
  void Read() { pinger_.OnRead(scheduler_.Now()); }

  io::FakeScheduler scheduler_;
  const io::MonotonicTime start_ = scheduler_.Now();
  RecordingDelegate delegate_{&scheduler_};
  KeepalivePinger pinger_{&scheduler_, kTime, kTimeout,
                          /*permit_without_calls=*/false, &delegate_};
};

TEST_F(KeepalivePingerTest, PingsAfterTimeWithoutReads) {
  pinger_.SetActive(true);
  pinger_.Start();
  scheduler_.AdvanceBy(kTime - absl::Nanoseconds(1));
  EXPECT_TRUE(delegate_.pings.empty());
  scheduler_.AdvanceBy(absl::Nanoseconds(1));
  ASSERT_EQ(delegate_.pings.size(), 1u);
  EXPECT_EQ(delegate_.pings[0], start() + kTime);
  EXPECT_TRUE(pinger_.ping_outstanding());
}

TEST(KeepalivePingerAckTest, AnAckedPingMakesTheNextDueTimeAfterTheAck) {
  // A timeout longer than the interval (gRPC's defaults can be so): PINGs
  // follow each ACK by `time`, not each PING by `timeout`.
  io::FakeScheduler scheduler;
  const io::MonotonicTime start = scheduler.Now();
  RecordingDelegate delegate(&scheduler);
  KeepalivePinger pinger(&scheduler, absl::Milliseconds(200), absl::Seconds(20),
                         /*permit_without_calls=*/false, &delegate);
  pinger.SetActive(true);
  pinger.Start();
  for (int i = 1; i <= 5; ++i) {
    scheduler.AdvanceTo(start + i * absl::Milliseconds(210) -
                        absl::Milliseconds(10));
    ASSERT_EQ(delegate.pings.size(), static_cast<size_t>(i));
    scheduler.AdvanceBy(absl::Milliseconds(10));
    pinger.OnPingAck(scheduler.Now());
    EXPECT_FALSE(pinger.ping_outstanding());
  }
  EXPECT_EQ(delegate.timeouts, 0);
  EXPECT_EQ(delegate.pings[4], start + absl::Milliseconds(1040));
}

TEST_F(KeepalivePingerTest, ReadsPostponeThePingWithoutReschedulingPerRead) {
  pinger_.SetActive(true);
  pinger_.Start();
  const io::MonotonicTime armed = scheduler_.next_deadline();
  // Reads every second for a minute: the timer stays where it was until it
  // fires, and no PING goes out.
  for (int i = 0; i < 60; ++i) {
    scheduler_.AdvanceBy(absl::Seconds(1));
    Read();
    if (i < 9) {
      EXPECT_EQ(scheduler_.next_deadline(), armed);
    }
  }
  EXPECT_TRUE(delegate_.pings.empty());
  // Then silence: the PING is due `time` after the last read.
  const io::MonotonicTime last_read = scheduler_.Now();
  scheduler_.AdvanceBy(kTime);
  ASSERT_EQ(delegate_.pings.size(), 1u);
  EXPECT_EQ(delegate_.pings[0], last_read + kTime);
}

TEST_F(KeepalivePingerTest, NoAnswerWithinTimeoutIsDeath) {
  pinger_.SetActive(true);
  pinger_.Start();
  scheduler_.AdvanceBy(kTime);
  ASSERT_EQ(delegate_.pings.size(), 1u);
  scheduler_.AdvanceBy(kTimeout - absl::Nanoseconds(1));
  EXPECT_EQ(delegate_.timeouts, 0);
  scheduler_.AdvanceBy(absl::Nanoseconds(1));
  EXPECT_EQ(delegate_.timeouts, 1);
  EXPECT_EQ(delegate_.timeout_at, start() + kTime + kTimeout);
  // Stopped: nothing more, ever.
  scheduler_.AdvanceBy(absl::Hours(1));
  EXPECT_EQ(delegate_.timeouts, 1);
  EXPECT_EQ(delegate_.pings.size(), 1u);
}

TEST_F(KeepalivePingerTest, AnAnswerKeepsTheConnectionAndPingsAgainLater) {
  pinger_.SetActive(true);
  pinger_.Start();
  scheduler_.AdvanceBy(kTime);
  ASSERT_EQ(delegate_.pings.size(), 1u);
  scheduler_.AdvanceBy(absl::Seconds(1));
  Read();  // the ACK
  const io::MonotonicTime ack = scheduler_.Now();
  scheduler_.AdvanceBy(kTimeout);
  EXPECT_EQ(delegate_.timeouts, 0);
  EXPECT_FALSE(pinger_.ping_outstanding());
  scheduler_.AdvanceBy(ack + kTime - scheduler_.Now());
  ASSERT_EQ(delegate_.pings.size(), 2u);
  EXPECT_EQ(delegate_.pings[1], ack + kTime);
}

TEST_F(KeepalivePingerTest, AReadAtTheInstantOfThePingCountsAsTheAnswer) {
  pinger_.SetActive(true);
  pinger_.Start();
  scheduler_.AdvanceBy(kTime);
  ASSERT_EQ(delegate_.pings.size(), 1u);
  Read();  // same instant as the PING (a loop reads before its timers)
  scheduler_.AdvanceBy(kTimeout);
  EXPECT_EQ(delegate_.timeouts, 0);
}

TEST_F(KeepalivePingerTest, NoPingWithoutStreamsUntilOneOpens) {
  pinger_.Start();
  scheduler_.AdvanceBy(absl::Hours(1));
  EXPECT_TRUE(delegate_.pings.empty());
  // Waiting for a stream, the pinger holds no timer.
  EXPECT_TRUE(scheduler_.next_deadline().is_infinite_future());
  // A stream opens long after the last read: the PING is due at once.
  pinger_.SetActive(true);
  scheduler_.AdvanceBy(absl::ZeroDuration());
  ASSERT_EQ(delegate_.pings.size(), 1u);
  EXPECT_EQ(delegate_.pings[0], start() + absl::Hours(1));
}

TEST_F(KeepalivePingerTest, AStreamOpenedAfterARecentReadWaitsForTime) {
  pinger_.Start();
  scheduler_.AdvanceBy(absl::Hours(1));
  Read();  // e.g. the HEADERS that open the stream
  pinger_.SetActive(true);
  scheduler_.AdvanceBy(kTime - absl::Nanoseconds(1));
  EXPECT_TRUE(delegate_.pings.empty());
  scheduler_.AdvanceBy(absl::Nanoseconds(1));
  EXPECT_EQ(delegate_.pings.size(), 1u);
}

TEST(KeepalivePingerPermitTest, PermitWithoutCallsPingsAnIdleConnection) {
  io::FakeScheduler scheduler;
  RecordingDelegate delegate(&scheduler);
  KeepalivePinger pinger(&scheduler, kTime, kTimeout,
                         /*permit_without_calls=*/true, &delegate);
  pinger.Start();
  scheduler.AdvanceBy(kTime);
  EXPECT_EQ(delegate.pings.size(), 1u);
}

TEST_F(KeepalivePingerTest, DisabledOrStoppedNeverFires) {
  KeepalivePinger off(&scheduler_, absl::InfiniteDuration(), kTimeout, true,
                      &delegate_);
  EXPECT_FALSE(off.enabled());
  off.Start();
  pinger_.SetActive(true);
  pinger_.Start();
  pinger_.Stop();
  scheduler_.AdvanceBy(absl::Hours(10));
  EXPECT_TRUE(delegate_.pings.empty());
  EXPECT_EQ(delegate_.timeouts, 0);
}

TEST_F(KeepalivePingerTest, APingThatCannotBeQueuedStopsThePinger) {
  delegate_.accept_pings = false;
  pinger_.SetActive(true);
  pinger_.Start();
  scheduler_.AdvanceBy(absl::Hours(1));
  EXPECT_EQ(delegate_.pings.size(), 1u);
  EXPECT_EQ(delegate_.timeouts, 0);
}

// PING enforcement.

const io::MonotonicTime kT0 =
    io::MonotonicTime::FromSinceEpoch(absl::Hours(100));

TEST(PingAbusePolicyTest, StrikesPastTheLimitAreAbuse) {
  PingAbusePolicy policy(absl::Minutes(5), /*permit_without_calls=*/false,
                         /*max_strikes=*/2);
  // The first PING is free; then each within min_time is a strike, and the
  // third strike is one too many.
  EXPECT_FALSE(policy.OnPingReceived(kT0, true));
  EXPECT_FALSE(policy.OnPingReceived(kT0 + absl::Seconds(1), true));
  EXPECT_FALSE(policy.OnPingReceived(kT0 + absl::Seconds(2), true));
  EXPECT_EQ(policy.strikes(), 2);
  EXPECT_TRUE(policy.OnPingReceived(kT0 + absl::Seconds(3), true));
}

TEST(PingAbusePolicyTest, PingsSpacedByMinTimeAreNotStrikes) {
  PingAbusePolicy policy(absl::Minutes(5), false, 2);
  io::MonotonicTime t = kT0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(policy.OnPingReceived(t, true));
    t += absl::Minutes(5);
  }
  EXPECT_EQ(policy.strikes(), 0);
}

TEST(PingAbusePolicyTest, SendingDataForgives) {
  PingAbusePolicy policy(absl::Minutes(5), false, 2);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(policy.OnPingReceived(kT0 + absl::Seconds(i), true));
    policy.OnDataSent();
  }
  EXPECT_EQ(policy.strikes(), 0);
}

TEST(PingAbusePolicyTest, WithoutCallsTheIntervalIsTwoHours) {
  PingAbusePolicy strict(absl::Minutes(5), /*permit_without_calls=*/false, 2);
  EXPECT_FALSE(strict.OnPingReceived(kT0, false));
  EXPECT_FALSE(strict.OnPingReceived(kT0 + absl::Hours(2), false));
  EXPECT_FALSE(strict.OnPingReceived(kT0 + absl::Hours(3), false));
  EXPECT_EQ(strict.strikes(), 1);

  PingAbusePolicy permissive(absl::Minutes(5), /*permit_without_calls=*/true,
                             2);
  EXPECT_FALSE(permissive.OnPingReceived(kT0, false));
  EXPECT_FALSE(permissive.OnPingReceived(kT0 + absl::Minutes(5), false));
  EXPECT_EQ(permissive.strikes(), 0);
}

TEST(PingAbusePolicyTest, ZeroMaxStrikesAllowsAnyNumber) {
  PingAbusePolicy policy(absl::Minutes(5), false, /*max_strikes=*/0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(policy.OnPingReceived(kT0 + absl::Milliseconds(i), true));
  }
  EXPECT_EQ(policy.strikes(), 99);
}

TEST(JitteredAgeTest, StaysWithinTenPercent) {
  const absl::Duration age = absl::Seconds(100);
  const auto seconds = [&](uint64_t random) {
    return absl::ToDoubleSeconds(JitteredAge(age, random));
  };
  EXPECT_NEAR(seconds(0), 90, 1e-6);
  EXPECT_NEAR(seconds(uint64_t{1} << 63), 100, 1e-6);
  EXPECT_LE(seconds(UINT64_MAX), 110);
  EXPECT_GT(seconds(UINT64_MAX), 109.999);
  EXPECT_EQ(JitteredAge(absl::InfiniteDuration(), 12345),
            absl::InfiniteDuration());
}

TEST(JitteredAgeTest, JitterBitsDiffer) {
  // Two draws of 64 random bits are equal with probability 2^-64.
  EXPECT_NE(JitterBits(), JitterBits());
}

}  // namespace
}  // namespace h2rpc::transport::http2
