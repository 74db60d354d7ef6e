// The event loop's timers against a wall clock that is stepped while they
// wait. This binary replaces clock_gettime() (which absl::Now() reads) with
// one that adds a test-controlled offset to CLOCK_REALTIME only, as `date -s`
// or an NTP step would; CLOCK_MONOTONIC passes through.

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/util/notification.h"
#include "transport/io/event_loop.h"
#include "transport/io/monotonic_time.h"

namespace {
// Seconds added to CLOCK_REALTIME readings.
std::atomic<int64_t> wall_clock_offset_seconds{0};
}  // namespace

// Interposes libc's clock_gettime for the whole process (absl::Now() and
// the loop alike); the kernel call underneath needs no libc state.
extern "C" int clock_gettime(clockid_t clock, struct timespec* ts) {
  const int rc = static_cast<int>(syscall(SYS_clock_gettime, clock, ts));
  if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
    ts->tv_sec += wall_clock_offset_seconds.load(std::memory_order_relaxed);
  }
  return rc;
}

namespace h2rpc::transport::io {
namespace {

using h2rpc::testing::Notification;

// Generous: only catches hangs, never measures speed.
constexpr absl::Duration kHangTimeout = absl::Seconds(30);

class FunctionTimer : public Timer {
 public:
  explicit FunctionTimer(absl::AnyInvocable<void()> fn) : fn_(std::move(fn)) {}
  void OnTimer() override { fn_(); }

 private:
  absl::AnyInvocable<void()> fn_;
};

// Runs `fn` on the loop thread and waits for it.
void RunOnLoop(EventLoop& loop, absl::AnyInvocable<void()> fn) {
  Notification done;
  loop.Post([&fn, &done] {
    fn();
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout))
      << "the loop did not run a posted task";
}

class EventLoopClockTest : public ::testing::Test {
 protected:
  ~EventLoopClockTest() override { StepWallClock(absl::ZeroDuration()); }

  // Sets the wall clock `step` away from the real time (whole seconds), and
  // checks that absl::Now() moved: without that the tests prove nothing.
  static void StepWallClock(absl::Duration step) {
    const absl::Time before = absl::Now();
    const int64_t previous = wall_clock_offset_seconds.exchange(
        absl::ToInt64Seconds(step), std::memory_order_relaxed);
    const absl::Duration moved = absl::Now() - before;
    const absl::Duration expected = step - absl::Seconds(previous);
    EXPECT_LT(absl::AbsDuration(moved - expected), absl::Seconds(10))
        << "absl::Now() did not follow the stepped wall clock";
  }
};

// A step forward of an hour fires no timer due in a minute: the iteration
// that runs a task posted after the step has passed its timer phase with
// Now() read after the step.
TEST_F(EventLoopClockTest, WallClockStepForwardFiresNoTimer) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("clock-forward").ok());
  std::atomic<int> fired{0};
  FunctionTimer timer([&] { fired.fetch_add(1); });
  MonotonicTime before_step;
  RunOnLoop(loop, [&] {
    before_step = loop.Now();
    loop.Schedule(&timer, loop.Now() + absl::Minutes(1));
  });
  StepWallClock(absl::Hours(1));
  MonotonicTime after_step;
  RunOnLoop(loop, [&] { after_step = loop.Now(); });
  EXPECT_EQ(fired.load(), 0) << "a wall-clock step fired the timer";
  EXPECT_LT(after_step - before_step, absl::Minutes(1));
  RunOnLoop(loop, [&] {
    EXPECT_TRUE(timer.scheduled());
    loop.Cancel(&timer);
  });
  loop.Stop();
}

// A step back of an hour does not hold back a timer due in 20 ms, whether
// the loop was asleep waiting for it or is woken by a task.
TEST_F(EventLoopClockTest, WallClockStepBackDoesNotStallTimers) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("clock-back").ok());
  Notification fired;
  Notification fired_after_wakeup;
  FunctionTimer sleeping_timer([&] { fired.Notify(); });
  FunctionTimer woken_timer([&] { fired_after_wakeup.Notify(); });
  RunOnLoop(loop, [&] {
    loop.Schedule(&sleeping_timer, loop.Now() + absl::Milliseconds(20));
  });
  StepWallClock(-absl::Hours(1));
  EXPECT_TRUE(fired.WaitForNotificationWithTimeout(kHangTimeout))
      << "a wall-clock step back stalled the timer";

  RunOnLoop(loop, [&] {
    loop.Schedule(&woken_timer, loop.Now() + absl::Milliseconds(20));
  });
  StepWallClock(-absl::Hours(2));
  RunOnLoop(loop, [] {});  // a wake-up after the step
  EXPECT_TRUE(fired_after_wakeup.WaitForNotificationWithTimeout(kHangTimeout))
      << "a wall-clock step back stalled the timer";
  loop.Stop();
}

}  // namespace
}  // namespace h2rpc::transport::io
