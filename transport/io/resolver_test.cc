#include "transport/io/resolver.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/notification.h"
#include "transport/io/event_loop.h"
#include "transport/io/socket.h"

namespace h2rpc::transport::io {
namespace {

using h2rpc::testing::Notification;
using ::testing::HasSubstr;

// Generous: only catches hangs, never measures speed.
constexpr absl::Duration kHangTimeout = absl::Seconds(30);

// The loopback address with the target's port, for injected lookups.
Status LookUpAsLoopback(absl::string_view target,
                        std::vector<SocketAddress>* addresses) {
  const size_t colon = target.rfind(':');
  return ResolveNumericTarget(absl::StrCat("127.0.0.1", target.substr(colon)),
                              addresses);
}

// A lookup that blocks until released; counts the lookups per target.
class BlockingLookup {
 public:
  Resolver::ResolveFunction Function() {
    return [state = state_](absl::string_view target,
                            std::vector<SocketAddress>* addresses) {
      {
        std::lock_guard<std::mutex> lock(state->mu);
        state->looked_up.push_back(std::string(target));
        state->entered_cv.notify_all();
      }
      state->release.WaitForNotification();
      return LookUpAsLoopback(target, addresses);
    };
  }
  // Waits until `count` lookups have started.
  bool WaitForLookups(size_t count) {
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->entered_cv.wait_for(
        lock, absl::ToChronoNanoseconds(kHangTimeout),
        [&] { return state_->looked_up.size() >= count; });
  }
  std::vector<std::string> looked_up() {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->looked_up;
  }
  void Release() { state_->release.Notify(); }

 private:
  // Shared with the resolver thread, which may outlive the test's objects.
  struct State {
    std::mutex mu;
    std::condition_variable entered_cv;
    std::vector<std::string> looked_up;  // guarded by mu
    Notification release;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Records one delivery: its result and whether it ran on the loop thread.
struct Delivery {
  Notification done;
  std::atomic<int> calls{0};
  bool on_loop_thread = false;
  Resolver::Result result;

  Resolver::Callback Callback(EventLoop* loop) {
    return [this, loop](Resolver::Result r) {
      on_loop_thread = loop->InLoopThread();
      result = std::move(r);
      calls.fetch_add(1);
      done.Notify();
    };
  }
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

class ResolverTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(loop_.Start("resolver-test").ok()); }
  void TearDown() override { loop_.Stop(); }

  EventLoop loop_;
};

TEST_F(ResolverTest, LooksUpOnItsOwnThreadAndDeliversOnTheLoop) {
  std::atomic<bool> lookup_on_loop_thread{true};
  std::string lookup_thread_name;
  Resolver resolver(
      [&](absl::string_view target, std::vector<SocketAddress>* addresses) {
        lookup_on_loop_thread = loop_.InLoopThread();
        char name[16] = {};
        pthread_getname_np(pthread_self(), name, sizeof(name));
        lookup_thread_name = name;
        return LookUpAsLoopback(target, addresses);
      });
  Delivery delivery;
  Resolver::Resolution resolution;
  RunOnLoop(loop_, [&] {
    resolution =
        resolver.Resolve("server.test:8080", &loop_, delivery.Callback(&loop_));
    EXPECT_TRUE(resolution.active());
  });
  ASSERT_TRUE(delivery.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_FALSE(lookup_on_loop_thread.load());
  EXPECT_EQ(lookup_thread_name, "h2rpc-resolver");
  EXPECT_TRUE(delivery.on_loop_thread);
  ASSERT_TRUE(delivery.result.status.ok()) << delivery.result.status.ToString();
  ASSERT_EQ(delivery.result.addresses.size(), 1u);
  EXPECT_EQ(delivery.result.addresses[0].ToString(), "127.0.0.1:8080");
  RunOnLoop(loop_, [&] {
    EXPECT_FALSE(resolution.active());
    resolution.Cancel();  // after delivery: a no-op
  });
  EXPECT_EQ(delivery.calls.load(), 1);
}

TEST_F(ResolverTest, DefaultLookupResolvesLocalhost) {
  Resolver resolver;
  Delivery delivery;
  Resolver::Resolution resolution =
      resolver.Resolve("localhost:8080", &loop_, delivery.Callback(&loop_));
  ASSERT_TRUE(delivery.done.WaitForNotificationWithTimeout(kHangTimeout));
  ASSERT_TRUE(delivery.result.status.ok()) << delivery.result.status.ToString();
  ASSERT_FALSE(delivery.result.addresses.empty());
  EXPECT_EQ(delivery.result.addresses[0].port(), 8080);
  RunOnLoop(loop_, [&] { resolution.Cancel(); });
}

TEST_F(ResolverTest, FailuresAreDelivered) {
  Resolver resolver(
      [](absl::string_view target, std::vector<SocketAddress>* addresses) {
        return target == "empty.test:1"
                   ? Status()
                   : Status(StatusCode::kUnavailable, "no such host");
      });
  Delivery failed;
  Delivery empty;
  Resolver::Resolution first =
      resolver.Resolve("missing.test:1", &loop_, failed.Callback(&loop_));
  Resolver::Resolution second =
      resolver.Resolve("empty.test:1", &loop_, empty.Callback(&loop_));
  ASSERT_TRUE(failed.done.WaitForNotificationWithTimeout(kHangTimeout));
  ASSERT_TRUE(empty.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(failed.result.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(failed.result.status.message(), "no such host");
  // A lookup that finds nothing but says OK still fails, naming the target.
  EXPECT_EQ(empty.result.status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(empty.result.status.message(), HasSubstr("'empty.test:1'"));
  RunOnLoop(loop_, [&] {
    first.Cancel();
    second.Cancel();
  });
}

// The loop keeps running its timers and tasks while a lookup blocks.
TEST_F(ResolverTest, ABlockingLookupDoesNotStallTheLoop) {
  BlockingLookup lookup;
  Resolver resolver(lookup.Function());
  Delivery delivery;
  Resolver::Resolution resolution;
  RunOnLoop(loop_, [&] {
    resolution =
        resolver.Resolve("slow.test:443", &loop_, delivery.Callback(&loop_));
  });
  ASSERT_TRUE(lookup.WaitForLookups(1));

  class NotifyingTimer : public Timer {
   public:
    void OnTimer() override { fired.Notify(); }
    Notification fired;
  } timer;
  RunOnLoop(loop_, [&] {
    loop_.Schedule(&timer, loop_.Now() + absl::Milliseconds(5));
  });
  EXPECT_TRUE(timer.fired.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_FALSE(delivery.done.HasBeenNotified());

  lookup.Release();
  ASSERT_TRUE(delivery.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(delivery.result.status.ok());
  RunOnLoop(loop_, [&] { resolution.Cancel(); });
}

// Cancelled during its lookup: the callback is destroyed at once and never
// runs, even after the lookup returns.
TEST_F(ResolverTest, CancelledDuringTheLookupIsNeverDelivered) {
  BlockingLookup lookup;
  Resolver resolver(lookup.Function());
  auto sentinel = std::make_shared<int>(0);
  std::atomic<int> cancelled_calls{0};
  Resolver::Resolution cancelled;
  RunOnLoop(loop_, [&] {
    cancelled =
        resolver.Resolve("cancelled.test:1", &loop_,
                         [&cancelled_calls, sentinel](Resolver::Result) {
                           cancelled_calls.fetch_add(1);
                         });
  });
  ASSERT_TRUE(lookup.WaitForLookups(1));
  EXPECT_EQ(sentinel.use_count(), 2);
  RunOnLoop(loop_, [&] {
    cancelled.Cancel();
    EXPECT_FALSE(cancelled.active());
  });
  EXPECT_EQ(sentinel.use_count(), 1) << "the callback was not destroyed";

  // Lookups run in order: once the next one is delivered, the cancelled one
  // has been through the resolver thread.
  Delivery next;
  Resolver::Resolution later =
      resolver.Resolve("next.test:2", &loop_, next.Callback(&loop_));
  lookup.Release();
  ASSERT_TRUE(next.done.WaitForNotificationWithTimeout(kHangTimeout));
  RunOnLoop(loop_, [] {});  // anything posted before `next` has run
  EXPECT_EQ(cancelled_calls.load(), 0);
  EXPECT_EQ(next.calls.load(), 1);
  RunOnLoop(loop_, [&] { later.Cancel(); });
}

TEST_F(ResolverTest, CancelledWhileQueuedIsNeverLookedUp) {
  BlockingLookup lookup;
  Resolver resolver(lookup.Function());
  Delivery first;
  Delivery skipped;
  Delivery last;
  Resolver::Resolution a, b, c;
  RunOnLoop(loop_, [&] {
    a = resolver.Resolve("first.test:1", &loop_, first.Callback(&loop_));
    b = resolver.Resolve("skipped.test:2", &loop_, skipped.Callback(&loop_));
  });
  ASSERT_TRUE(lookup.WaitForLookups(1));
  RunOnLoop(loop_, [&] {
    b.Cancel();
    c = resolver.Resolve("last.test:3", &loop_, last.Callback(&loop_));
  });
  lookup.Release();
  ASSERT_TRUE(last.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(first.calls.load(), 1);
  EXPECT_EQ(skipped.calls.load(), 0);
  EXPECT_THAT(lookup.looked_up(),
              ::testing::ElementsAre("first.test:1", "last.test:3"));
  RunOnLoop(loop_, [&] {
    a.Cancel();
    c.Cancel();
  });
}

// ~Resolver does not wait for a lookup that blocks; the lookup's result is
// dropped when it returns, and the thread then exits on its own.
TEST_F(ResolverTest, DestroyedDuringABlockingLookupReturnsPromptly) {
  BlockingLookup lookup;
  // Notifies when the resolver thread, the last owner of the lookup
  // function, has let go of it (it has exited).
  auto function_released = std::make_shared<Notification>();
  struct NotifyOnDestroy {
    std::shared_ptr<Notification> notification;
    ~NotifyOnDestroy() { notification->Notify(); }
  };
  auto on_destroy = std::make_shared<NotifyOnDestroy>();
  on_destroy->notification = function_released;
  Resolver::ResolveFunction blocking = lookup.Function();
  auto resolver = std::make_unique<Resolver>(
      [blocking, on_destroy](absl::string_view target,
                             std::vector<SocketAddress>* addresses) {
        return blocking(target, addresses);
      });
  on_destroy.reset();
  blocking = nullptr;

  Delivery delivery;
  Resolver::Resolution resolution;
  RunOnLoop(loop_, [&] {
    resolution =
        resolver->Resolve("stuck.test:1", &loop_, delivery.Callback(&loop_));
  });
  ASSERT_TRUE(lookup.WaitForLookups(1));

  Notification destroyed;
  std::thread destroyer([&] {
    resolver.reset();
    destroyed.Notify();
  });
  EXPECT_TRUE(destroyed.WaitForNotificationWithTimeout(absl::Seconds(5)))
      << "~Resolver waited for a blocked lookup";
  destroyer.join();
  EXPECT_FALSE(function_released->HasBeenNotified());

  lookup.Release();
  ASSERT_TRUE(function_released->WaitForNotificationWithTimeout(kHangTimeout))
      << "the resolver thread did not exit after its lookup";
  RunOnLoop(loop_, [] {});  // a delivery posted before the exit has run
  EXPECT_EQ(delivery.calls.load(), 0);
  RunOnLoop(loop_, [&] { resolution.Cancel(); });
}

}  // namespace
}  // namespace h2rpc::transport::io
