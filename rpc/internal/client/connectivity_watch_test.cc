// The published connectivity state: transitions, waits with deadlines,
// wake-ups from another thread, and SHUTDOWN releasing every waiter.
#include "rpc/internal/client/connectivity_watch.h"

#include <atomic>
#include <thread>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/util/wait_for.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {
namespace {

using ::h2rpc::testing::WaitFor;
using transport::io::MonotonicTime;

MonotonicTime In(absl::Duration d) { return MonotonicTime::Now() + d; }

TEST(ConnectivityWatchTest, CountsTransitionsNotRepeats) {
  ConnectivityWatch watch(ConnectivityState::kIdle);
  EXPECT_EQ(watch.Get(), ConnectivityState::kIdle);
  EXPECT_EQ(watch.entered(ConnectivityState::kIdle), 1);
  watch.Set(ConnectivityState::kConnecting);
  watch.Set(ConnectivityState::kConnecting);
  watch.Set(ConnectivityState::kTransientFailure);
  watch.Set(ConnectivityState::kConnecting);
  EXPECT_EQ(watch.Get(), ConnectivityState::kConnecting);
  EXPECT_EQ(watch.entered(ConnectivityState::kConnecting), 2);
  EXPECT_EQ(watch.entered(ConnectivityState::kTransientFailure), 1);
  EXPECT_EQ(watch.entered(ConnectivityState::kReady), 0);
}

TEST(ConnectivityWatchTest, ADifferentStateReturnsAtOnceTheSameOneTimesOut) {
  ConnectivityWatch watch(ConnectivityState::kIdle);
  EXPECT_TRUE(watch.WaitForChange(ConnectivityState::kReady,
                                  MonotonicTime::InfinitePast()));
  const MonotonicTime start = MonotonicTime::Now();
  EXPECT_FALSE(watch.WaitForChange(ConnectivityState::kIdle,
                                   In(absl::Milliseconds(20))));
  EXPECT_GE(MonotonicTime::Now() - start, absl::Milliseconds(20));
  EXPECT_EQ(watch.waiters(), 0);
}

TEST(ConnectivityWatchTest, AWaiterWakesOnATransitionFromAnotherThread) {
  ConnectivityWatch watch(ConnectivityState::kIdle);
  std::atomic<bool> changed{false};
  std::thread waiter([&] {
    changed = watch.WaitForChange(ConnectivityState::kIdle,
                                  In(::h2rpc::testing::kHangTimeout));
  });
  ASSERT_TRUE(WaitFor([&] { return watch.waiters() == 1; }));
  watch.Set(ConnectivityState::kConnecting);
  waiter.join();
  EXPECT_TRUE(changed);
}

TEST(ConnectivityWatchTest, AChangeAndBackStillWakesTheWaiter) {
  ConnectivityWatch watch(ConnectivityState::kTransientFailure);
  std::atomic<bool> changed{false};
  std::thread waiter([&] {
    changed = watch.WaitForChange(ConnectivityState::kTransientFailure,
                                  In(::h2rpc::testing::kHangTimeout));
  });
  ASSERT_TRUE(WaitFor([&] { return watch.waiters() == 1; }));
  watch.Set(ConnectivityState::kConnecting);
  watch.Set(ConnectivityState::kTransientFailure);
  waiter.join();
  EXPECT_TRUE(changed);
}

TEST(ConnectivityWatchTest, WaitUntilReadyConnectsWhenIdleAndSeesReady) {
  ConnectivityWatch watch(ConnectivityState::kIdle);
  std::atomic<int> connects{0};
  std::atomic<bool> ready{false};
  std::thread waiter([&] {
    ready = watch.WaitUntilReady(In(::h2rpc::testing::kHangTimeout),
                                 [&] { connects.fetch_add(1); });
  });
  ASSERT_TRUE(WaitFor([&] { return connects.load() == 1; }));
  watch.Set(ConnectivityState::kConnecting);
  watch.Set(ConnectivityState::kReady);
  waiter.join();
  EXPECT_TRUE(ready);
  EXPECT_GE(connects.load(), 1);
}

TEST(ConnectivityWatchTest, WaitUntilReadyGivesUpAtItsDeadline) {
  ConnectivityWatch watch(ConnectivityState::kTransientFailure);
  int connects = 0;
  EXPECT_FALSE(
      watch.WaitUntilReady(In(absl::Milliseconds(20)), [&] { ++connects; }));
  EXPECT_EQ(connects, 0);  // not idle: nothing to start
}

TEST(ConnectivityWatchTest, ShutdownReleasesEveryWaiterAndIsFinal) {
  ConnectivityWatch watch(ConnectivityState::kIdle);
  std::atomic<bool> changed{false};
  std::atomic<bool> ready{true};
  std::thread change_waiter([&] {
    changed = watch.WaitForChange(ConnectivityState::kIdle,
                                  MonotonicTime::InfiniteFuture());
  });
  std::thread ready_waiter([&] {
    ready = watch.WaitUntilReady(MonotonicTime::InfiniteFuture(), [] {});
  });
  ASSERT_TRUE(WaitFor([&] { return watch.waiters() == 2; }));
  watch.Shutdown();  // returns once both have left
  EXPECT_EQ(watch.waiters(), 0);
  EXPECT_EQ(watch.Get(), ConnectivityState::kShutdown);
  change_waiter.join();
  ready_waiter.join();
  EXPECT_TRUE(changed);
  EXPECT_FALSE(ready);
  watch.Set(ConnectivityState::kReady);
  EXPECT_EQ(watch.Get(), ConnectivityState::kShutdown);
}

}  // namespace
}  // namespace h2rpc::internal
