#include "transport/io/monotonic_time.h"

#include <type_traits>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace h2rpc::transport::io {
namespace {

// The two clocks do not mix without an explicit conversion.
static_assert(!std::is_convertible_v<absl::Time, MonotonicTime>);
static_assert(!std::is_constructible_v<MonotonicTime, absl::Time>);
static_assert(!std::is_convertible_v<MonotonicTime, absl::Time>);
static_assert(!std::is_constructible_v<absl::Time, MonotonicTime>);

// Readings of both clocks taken together, far apart in value: the wall clock
// in 2024, the monotonic clock 3 hours after boot.
const absl::Time kWallNow = absl::FromUnixSeconds(1700000000);
const MonotonicTime kMonotonicNow =
    MonotonicTime::FromSinceEpoch(absl::Hours(3));

TEST(MonotonicTimeTest, ArithmeticAndOrder) {
  const MonotonicTime t = kMonotonicNow + absl::Seconds(5);
  EXPECT_EQ(t - kMonotonicNow, absl::Seconds(5));
  EXPECT_EQ(t - absl::Seconds(5), kMonotonicNow);
  EXPECT_LT(kMonotonicNow, t);
  EXPECT_LE(kMonotonicNow, t);
  EXPECT_GT(t, kMonotonicNow);
  EXPECT_NE(t, kMonotonicNow);
  EXPECT_EQ(t.since_epoch(), absl::Hours(3) + absl::Seconds(5));
  MonotonicTime u = t;
  u += absl::Milliseconds(1);
  u -= absl::Milliseconds(2);
  EXPECT_EQ(t - u, absl::Milliseconds(1));
}

TEST(MonotonicTimeTest, InfinitiesSaturate) {
  const MonotonicTime future = MonotonicTime::InfiniteFuture();
  EXPECT_TRUE(future.is_infinite_future());
  EXPECT_FALSE(kMonotonicNow.is_infinite_future());
  EXPECT_EQ(future + absl::Hours(1), future);
  EXPECT_EQ(future - absl::Hours(1), future);
  EXPECT_EQ(kMonotonicNow + absl::InfiniteDuration(), future);
  EXPECT_EQ(future - kMonotonicNow, absl::InfiniteDuration());
  EXPECT_EQ(MonotonicTime::InfinitePast() - kMonotonicNow,
            -absl::InfiniteDuration());
  EXPECT_LT(MonotonicTime::InfinitePast(), kMonotonicNow);
  EXPECT_LT(kMonotonicNow, future);
}

TEST(MonotonicTimeTest, NowNeverGoesBack) {
  MonotonicTime last = MonotonicTime::Now();
  EXPECT_GT(last, MonotonicTime());
  for (int i = 0; i < 1000; ++i) {
    const MonotonicTime now = MonotonicTime::Now();
    ASSERT_GE(now, last);
    last = now;
  }
}

TEST(MonotonicFromWallTest, CarriesTheRemainingTimeOver) {
  EXPECT_EQ(
      MonotonicFromWall(kWallNow + absl::Seconds(5), kWallNow, kMonotonicNow),
      kMonotonicNow + absl::Seconds(5));
  EXPECT_EQ(
      MonotonicFromWall(kWallNow - absl::Minutes(2), kWallNow, kMonotonicNow),
      kMonotonicNow - absl::Minutes(2));
  EXPECT_EQ(MonotonicFromWall(kWallNow, kWallNow, kMonotonicNow),
            kMonotonicNow);
  // Sub-nanosecond precision survives (absl::Duration has quarter-ns ticks).
  EXPECT_EQ(MonotonicFromWall(kWallNow + absl::Nanoseconds(1), kWallNow,
                              kMonotonicNow) -
                kMonotonicNow,
            absl::Nanoseconds(1));
}

TEST(MonotonicFromWallTest, InfinitiesStayInfinite) {
  EXPECT_EQ(MonotonicFromWall(absl::InfiniteFuture(), kWallNow, kMonotonicNow),
            MonotonicTime::InfiniteFuture());
  EXPECT_EQ(MonotonicFromWall(absl::InfinitePast(), kWallNow, kMonotonicNow),
            MonotonicTime::InfinitePast());
  EXPECT_EQ(MonotonicFromWall(absl::InfiniteFuture()),
            MonotonicTime::InfiniteFuture());
  EXPECT_EQ(MonotonicFromWall(absl::InfinitePast()),
            MonotonicTime::InfinitePast());
  EXPECT_EQ(WallFromMonotonic(MonotonicTime::InfiniteFuture()),
            absl::InfiniteFuture());
  EXPECT_EQ(WallFromMonotonic(MonotonicTime::InfinitePast()),
            absl::InfinitePast());
}

TEST(MonotonicFromWallTest, RoundTripsThroughTheSameReadings) {
  for (absl::Duration offset : {absl::ZeroDuration(), absl::Milliseconds(250),
                                -absl::Hours(30), absl::Hours(24 * 365)}) {
    const MonotonicTime monotonic =
        MonotonicFromWall(kWallNow + offset, kWallNow, kMonotonicNow);
    EXPECT_EQ(WallFromMonotonic(monotonic, kWallNow, kMonotonicNow),
              kWallNow + offset)
        << offset;
  }
}

// Against the real clocks: a deadline 10 s from now on the wall clock is
// 10 s from now on the monotonic clock, give or take the time the
// conversion itself took (bounded by readings before and after it).
TEST(MonotonicFromWallTest, ConvertsAUserDeadlineAgainstTheRealClocks) {
  const MonotonicTime before = MonotonicTime::Now();
  const absl::Time wall_deadline = absl::Now() + absl::Seconds(10);
  const MonotonicTime deadline = MonotonicFromWall(wall_deadline);
  const MonotonicTime after = MonotonicTime::Now();
  EXPECT_LE(deadline, after + absl::Seconds(10));
  EXPECT_GE(deadline, before + absl::Seconds(10) - (after - before) -
                          absl::Milliseconds(100));

  const absl::Time back = WallFromMonotonic(deadline);
  EXPECT_LE(absl::AbsDuration(back - wall_deadline), absl::Milliseconds(100));
}

}  // namespace
}  // namespace h2rpc::transport::io
