#include "transport/http2/bdp_estimator.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::transport::http2 {
namespace {

constexpr uint32_t kInitial = 1 << 20;
constexpr uint32_t kMax = 16 << 20;

io::MonotonicTime At(absl::Duration d) {
  return io::MonotonicTime::FromSinceEpoch(absl::Hours(1) + d);
}

// One PING round trip of `rtt` starting at `*now` during which `bytes`
// arrive; returns OnPingAck's answer. Expects a PING to be asked for.
bool Sample(BdpEstimator& bdp, io::MonotonicTime* now, size_t bytes,
            absl::Duration rtt) {
  EXPECT_TRUE(bdp.OnDataReceived(bdp.window(), *now));
  bdp.OnPingSent(*now);
  EXPECT_FALSE(bdp.OnDataReceived(bytes, *now + rtt / 2));
  *now += rtt;
  return bdp.OnPingAck(*now);
}

TEST(BdpEstimatorTest, AsksForAPingOnceAFullFrameOfDataArrived) {
  BdpEstimator bdp(kInitial, kMax);
  EXPECT_TRUE(bdp.enabled());
  EXPECT_EQ(bdp.window(), kInitial);
  const io::MonotonicTime now = At(absl::ZeroDuration());
  EXPECT_FALSE(bdp.OnDataReceived(BdpEstimator::kSampleStart - 1001, now));
  EXPECT_FALSE(bdp.OnDataReceived(1000, now));
  EXPECT_TRUE(bdp.OnDataReceived(1, now));
}

TEST(BdpEstimatorTest, AWindowLimitedSampleDoublesTheWindowUpToTheMax) {
  BdpEstimator bdp(kInitial, kMax);
  io::MonotonicTime now = At(absl::ZeroDuration());
  // Each round trip (20 ms) brings a whole window: the window is the limit.
  uint32_t expected = kInitial;
  while (expected < kMax) {
    ASSERT_TRUE(Sample(bdp, &now, bdp.window(), absl::Milliseconds(20)));
    expected *= 2;
    EXPECT_EQ(bdp.window(), expected);
  }
  // At the max there is nothing to learn: no more PINGs.
  EXPECT_FALSE(bdp.OnDataReceived(4 * kMax, now + absl::Seconds(20)));
  EXPECT_EQ(bdp.window(), kMax);
}

TEST(BdpEstimatorTest, ALargeSampleGrowsTheWindowToTwiceTheSample) {
  BdpEstimator bdp(kInitial, kMax);
  io::MonotonicTime now = At(absl::ZeroDuration());
  // 3 MiB in one round trip (the peer had more credit than our window, e.g.
  // from the connection window): the window becomes twice that.
  EXPECT_TRUE(Sample(bdp, &now, 3 << 20, absl::Milliseconds(20)));
  EXPECT_EQ(bdp.window(), 6u << 20);
}

TEST(BdpEstimatorTest, ASmallSampleDoesNotGrowAndBacksOffThePings) {
  BdpEstimator bdp(kInitial, kMax);
  io::MonotonicTime now = At(absl::ZeroDuration());
  // 64 KiB per round trip: far below what the window allows.
  EXPECT_FALSE(Sample(bdp, &now, 64 << 10, absl::Milliseconds(20)));
  EXPECT_EQ(bdp.window(), kInitial);
  // The next PING waits 100 ms, then 200 ms, doubling up to 10 s.
  EXPECT_FALSE(bdp.OnDataReceived(kInitial, now + absl::Milliseconds(99)));
  now += BdpEstimator::kFirstBackoff;
  EXPECT_FALSE(Sample(bdp, &now, 64 << 10, absl::Milliseconds(20)));
  EXPECT_FALSE(bdp.OnDataReceived(kInitial, now + absl::Milliseconds(199)));
  absl::Duration backoff = absl::Milliseconds(200);
  for (int i = 0; i < 10; ++i) {
    now += backoff;
    EXPECT_FALSE(Sample(bdp, &now, 64 << 10, absl::Milliseconds(20)));
    backoff = std::min(backoff * 2, BdpEstimator::kMaxBackoff);
  }
  EXPECT_FALSE(bdp.OnDataReceived(
      kInitial, now + BdpEstimator::kMaxBackoff - absl::Milliseconds(1)));
  EXPECT_TRUE(bdp.OnDataReceived(kInitial, now + BdpEstimator::kMaxBackoff));
}

TEST(BdpEstimatorTest, OnePingAtATimeAndOnlyItsAckIsASample) {
  BdpEstimator bdp(kInitial, kMax);
  io::MonotonicTime now = At(absl::ZeroDuration());
  // An ACK with no PING of ours outstanding (the caller passes only ACKs
  // of its own PINGs; a stray one must not count) grows nothing.
  EXPECT_FALSE(bdp.OnPingAck(now));
  ASSERT_TRUE(bdp.OnDataReceived(kInitial, now));
  bdp.OnPingSent(now);
  EXPECT_TRUE(bdp.ping_outstanding());
  EXPECT_FALSE(bdp.OnDataReceived(kInitial, now + absl::Milliseconds(5)));
  EXPECT_FALSE(bdp.OnDataReceived(kInitial, now + absl::Milliseconds(6)));
  EXPECT_TRUE(bdp.OnPingAck(now + absl::Milliseconds(10)));
  EXPECT_FALSE(bdp.ping_outstanding());
  // A second ACK for the same PING is not another sample.
  const uint32_t window = bdp.window();
  EXPECT_FALSE(bdp.OnPingAck(now + absl::Milliseconds(11)));
  EXPECT_EQ(bdp.window(), window);
}

TEST(BdpEstimatorTest, AnInflatedRoundTripWithoutMoreBandwidthDoesNotGrow) {
  BdpEstimator bdp(kInitial, kMax);
  io::MonotonicTime now = At(absl::ZeroDuration());
  ASSERT_TRUE(Sample(bdp, &now, 2 << 20, absl::Milliseconds(20)));
  const uint32_t window = bdp.window();
  // As many bytes again, but over a round trip ten times longer (a queue
  // filled up on the path): the rate fell, so the path is not larger.
  EXPECT_FALSE(Sample(bdp, &now, 3 << 20, absl::Milliseconds(200)));
  EXPECT_EQ(bdp.window(), window);
}

TEST(BdpEstimatorTest, IdleForTenSecondsGoesBackToTheInitialWindow) {
  BdpEstimator bdp(kInitial, kMax);
  io::MonotonicTime now = At(absl::ZeroDuration());
  ASSERT_TRUE(Sample(bdp, &now, 4 << 20, absl::Milliseconds(20)));
  ASSERT_GT(bdp.window(), kInitial);
  const io::MonotonicTime last_data = now - absl::Milliseconds(10);
  EXPECT_FALSE(bdp.ResetIfIdle(last_data + BdpEstimator::kIdleReset -
                               absl::Milliseconds(1)));
  EXPECT_TRUE(bdp.ResetIfIdle(last_data + BdpEstimator::kIdleReset));
  EXPECT_EQ(bdp.window(), kInitial);
  // Already there: nothing to shrink.
  EXPECT_FALSE(bdp.ResetIfIdle(last_data + 2 * BdpEstimator::kIdleReset));
}

TEST(BdpEstimatorTest, AMaxAtOrBelowTheInitialWindowTurnsItOff) {
  BdpEstimator bdp(kInitial, kInitial);
  EXPECT_FALSE(bdp.enabled());
  io::MonotonicTime now = At(absl::ZeroDuration());
  EXPECT_FALSE(bdp.OnDataReceived(4 * kInitial, now));
  EXPECT_EQ(bdp.window(), kInitial);
}

}  // namespace
}  // namespace h2rpc::transport::http2
