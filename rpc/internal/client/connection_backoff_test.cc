// gRPC's connection-backoff.md schedule on a fake clock: the backoff grows
// by the multiplier up to the cap, jitter stays within its bounds and
// disperses, attempts get Max(backoff deadline, now + min connect timeout),
// and Reset() starts over.
#include "rpc/internal/client/connection_backoff.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"
#include "transport/io/fake_scheduler.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {
namespace {

using transport::io::FakeScheduler;
using transport::io::MonotonicTime;

// A "random" source that always answers `value` (0.5: no jitter).
ConnectionBackoff::Uniform01 Fixed(double value) {
  return [value] { return value; };
}

TEST(ConnectionBackoffTest, DefaultsAreGrpcs) {
  const ConnectionBackoff::Options options;
  EXPECT_EQ(options.initial_backoff, absl::Seconds(1));
  EXPECT_EQ(options.multiplier, 1.6);
  EXPECT_EQ(options.jitter, 0.2);
  EXPECT_EQ(options.max_backoff, absl::Seconds(120));
  EXPECT_EQ(options.min_connect_timeout, absl::Seconds(20));
}

TEST(ConnectionBackoffTest, TheFirstAttemptWaitsTheInitialBackoffUnjittered) {
  FakeScheduler clock;
  // A jitter source at its extreme: the first backoff must not use it.
  ConnectionBackoff backoff(ConnectionBackoff::Options(), &clock, Fixed(0.0));
  EXPECT_EQ(backoff.next_attempt_time(), MonotonicTime::InfinitePast());
  const MonotonicTime start = clock.Now();
  const MonotonicTime deadline = backoff.BeginAttempt();
  EXPECT_EQ(backoff.next_attempt_time(), start + absl::Seconds(1));
  // Max(now + 1 s, now + MIN_CONNECT_TIMEOUT).
  EXPECT_EQ(deadline, start + absl::Seconds(20));
}

TEST(ConnectionBackoffTest, GrowsByTheMultiplierUpToTheCap) {
  FakeScheduler clock;
  ConnectionBackoff backoff(ConnectionBackoff::Options(), &clock, Fixed(0.5));
  // Each attempt fails at once and the next starts at next_attempt_time():
  // attempt n starts 1 s x 1.6^n after the one before, until 120 s.
  absl::Duration expected = absl::Seconds(1);
  bool capped = false;
  for (int attempt = 0; attempt < 30; ++attempt) {
    const MonotonicTime start = clock.Now();
    const MonotonicTime deadline = backoff.BeginAttempt();
    ASSERT_EQ(backoff.current_backoff(), expected) << "attempt " << attempt;
    ASSERT_EQ(backoff.next_attempt_time() - start, expected)
        << "attempt " << attempt;
    EXPECT_EQ(deadline, start + std::max(expected, absl::Seconds(20)))
        << "attempt " << attempt;
    capped = capped || expected == absl::Seconds(120);
    expected = std::min(expected * 1.6, absl::Seconds(120));
    clock.AdvanceTo(backoff.next_attempt_time());
  }
  EXPECT_TRUE(capped);
  EXPECT_EQ(backoff.current_backoff(), absl::Seconds(120));
}

TEST(ConnectionBackoffTest, JitterStaysWithinItsBoundsAtBothExtremes) {
  for (const double random : {0.0, 0.999999}) {
    FakeScheduler clock;
    ConnectionBackoff backoff(ConnectionBackoff::Options(), &clock,
                              Fixed(random));
    backoff.BeginAttempt();
    clock.AdvanceTo(backoff.next_attempt_time());
    for (int attempt = 1; attempt < 30; ++attempt) {
      const MonotonicTime start = clock.Now();
      backoff.BeginAttempt();
      const absl::Duration current = backoff.current_backoff();
      const absl::Duration wait = backoff.next_attempt_time() - start;
      // current_backoff + UniformRandom(-0.2 current, +0.2 current).
      EXPECT_GE(wait, current * 0.8 - absl::Nanoseconds(1))
          << "attempt " << attempt;
      EXPECT_LE(wait, current * 1.2 + absl::Nanoseconds(1))
          << "attempt " << attempt;
      if (random == 0.0) {
        EXPECT_LE(absl::AbsDuration(wait - current * 0.8), absl::Nanoseconds(1))
            << "attempt " << attempt;
      } else {
        EXPECT_GT(wait, current * 1.199) << "attempt " << attempt;
      }
      // Past the cap only by the jitter.
      EXPECT_LE(wait, absl::Seconds(120) * 1.2);
      clock.AdvanceTo(backoff.next_attempt_time());
    }
  }
}

TEST(ConnectionBackoffTest, RealJitterDispersesWithinTheBounds) {
  FakeScheduler clock;
  ConnectionBackoff backoff(ConnectionBackoff::Options(), &clock);
  backoff.BeginAttempt();
  double lowest = 2;
  double highest = 0;
  for (int attempt = 1; attempt < 1000; ++attempt) {
    clock.AdvanceTo(backoff.next_attempt_time());
    const MonotonicTime start = clock.Now();
    backoff.BeginAttempt();
    const double ratio = absl::FDivDuration(backoff.next_attempt_time() - start,
                                            backoff.current_backoff());
    ASSERT_GE(ratio, 0.8 - 1e-9) << "attempt " << attempt;
    ASSERT_LE(ratio, 1.2 + 1e-9) << "attempt " << attempt;
    lowest = std::min(lowest, ratio);
    highest = std::max(highest, ratio);
  }
  // 999 uniform draws: both ends of the range are reached (each miss has a
  // probability of 0.875^999).
  EXPECT_LT(lowest, 0.85);
  EXPECT_GT(highest, 1.15);
}

TEST(ConnectionBackoffTest,
     AnAttemptGetsTheLaterOfBackoffAndMinConnectTimeout) {
  FakeScheduler clock;
  ConnectionBackoff::Options options;
  options.initial_backoff = absl::Seconds(10);
  options.multiplier = 2;
  options.jitter = 0;
  options.max_backoff = absl::Seconds(40);
  options.min_connect_timeout = absl::Seconds(25);
  ConnectionBackoff backoff(options, &clock, Fixed(0.5));
  std::vector<absl::Duration> timeouts;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const MonotonicTime start = clock.Now();
    timeouts.push_back(backoff.BeginAttempt() - start);
    clock.AdvanceTo(backoff.next_attempt_time());
  }
  // Backoffs 10, 20, 40, 40 s against a 25 s minimum.
  EXPECT_EQ(timeouts, (std::vector<absl::Duration>{
                          absl::Seconds(25), absl::Seconds(25),
                          absl::Seconds(40), absl::Seconds(40)}));
}

TEST(ConnectionBackoffTest, ASlowAttemptDelaysTheScheduleFromItsOwnStart) {
  FakeScheduler clock;
  ConnectionBackoff backoff(ConnectionBackoff::Options(), &clock, Fixed(0.5));
  backoff.BeginAttempt();
  // The attempt fails only after its 20 s timeout, long past the 1 s
  // backoff: SleepUntil(current_deadline) returns at once, and the next
  // backoff counts from the next attempt's start.
  clock.AdvanceBy(absl::Seconds(20));
  EXPECT_LT(backoff.next_attempt_time(), clock.Now());
  const MonotonicTime start = clock.Now();
  backoff.BeginAttempt();
  EXPECT_EQ(backoff.next_attempt_time(), start + absl::Seconds(1.6));
}

TEST(ConnectionBackoffTest, ResetStartsTheScheduleOver) {
  FakeScheduler clock;
  ConnectionBackoff backoff(ConnectionBackoff::Options(), &clock, Fixed(0.0));
  for (int attempt = 0; attempt < 5; ++attempt) {
    backoff.BeginAttempt();
    clock.AdvanceTo(backoff.next_attempt_time());
  }
  ASSERT_GT(backoff.current_backoff(), absl::Seconds(6));
  backoff.Reset();
  EXPECT_EQ(backoff.next_attempt_time(), MonotonicTime::InfinitePast());
  const MonotonicTime start = clock.Now();
  backoff.BeginAttempt();
  EXPECT_EQ(backoff.current_backoff(), absl::Seconds(1));
  EXPECT_EQ(backoff.next_attempt_time(), start + absl::Seconds(1));
  clock.AdvanceTo(backoff.next_attempt_time());
  backoff.BeginAttempt();
  EXPECT_EQ(backoff.current_backoff(), absl::Seconds(1.6));
}

// No reconnect storm: a client that retries as soon as it may, against a
// server that refuses at once, makes no more attempts in ten minutes than
// the schedule with the shortest jitter allows.
TEST(ConnectionBackoffTest, AttemptsInAWindowAreBoundedByTheSchedule) {
  FakeScheduler clock;
  ConnectionBackoff backoff(ConnectionBackoff::Options(), &clock);
  const MonotonicTime end = clock.Now() + absl::Minutes(10);
  int attempts = 0;
  while (clock.Now() < end) {
    backoff.BeginAttempt();
    ++attempts;
    clock.AdvanceTo(backoff.next_attempt_time());
  }
  // The fastest schedule: 1 s, then each backoff x1.6 (cap 120 s) x0.8.
  int bound = 0;
  absl::Duration elapsed;
  absl::Duration current = absl::Seconds(1);
  for (bool first = true; elapsed < absl::Minutes(10); first = false) {
    ++bound;
    if (!first) current = std::min(current * 1.6, absl::Seconds(120));
    elapsed += first ? current : current * 0.8;
  }
  EXPECT_LE(attempts, bound);
  EXPECT_GE(attempts, 10);  // 1 s ... 120 s: not stuck at the cap either
}

}  // namespace
}  // namespace h2rpc::internal
