#include "rpc/internal/common/cancel_gate.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "gtest/gtest.h"

namespace h2rpc::internal {
namespace {

TEST(CancelGateTest, RefusesACancelBeforeOpenAndAfterClose) {
  CancelGate gate;
  EXPECT_FALSE(gate.RequestCancel());
  gate.Open();
  EXPECT_TRUE(gate.Close());  // nothing queued: release now
  EXPECT_FALSE(gate.RequestCancel());
}

TEST(CancelGateTest, AcceptsOneCancelPerCall) {
  CancelGate gate;
  gate.Open();
  EXPECT_TRUE(gate.RequestCancel());
  EXPECT_FALSE(gate.RequestCancel());
  EXPECT_FALSE(gate.CancelTaskDone());  // still open: the call releases
  EXPECT_FALSE(gate.RequestCancel());   // one per call, even once it ran
  EXPECT_TRUE(gate.Close());
  // The next call on the object may be cancelled again.
  gate.Open();
  EXPECT_TRUE(gate.RequestCancel());
}

TEST(CancelGateTest, AQueuedCancelHoldsTheObjectPastClose) {
  CancelGate gate;
  gate.Open();
  ASSERT_TRUE(gate.RequestCancel());
  EXPECT_FALSE(gate.Close());          // the task still holds the object
  EXPECT_FALSE(gate.RequestCancel());  // closed
  EXPECT_TRUE(gate.CancelTaskDone());  // the task releases it
}

// A pooled object reused call after call by a "loop" thread, and a thread
// cancelling whatever call it finds open, as fast as it can. Each accepted
// cancel records the call it was accepted for; when its task runs on the
// loop it must find that same call (the object not reused meanwhile), and
// every call must release the object exactly once.
TEST(CancelGateTest, ACancelTaskNeverFindsTheObjectReused) {
  constexpr int kCalls = 20000;
  CancelGate gate;
  std::atomic<int> generation{0};
  std::atomic<bool> stop{false};

  // The loop's posted-task queue: accepted cancels, with their call.
  struct TaskQueue {
    Mutex mu;
    std::vector<int> queued ABSL_GUARDED_BY(mu);
  } tasks_posted;

  std::thread canceller([&] {
    while (!stop.load(std::memory_order_acquire)) {
      if (gate.RequestCancel()) {
        // The object cannot be reopened until the task has run, so this is
        // the call the cancel was accepted for.
        const int accepted_for = generation.load(std::memory_order_acquire);
        MutexLock lock(&tasks_posted.mu);
        tasks_posted.queued.push_back(accepted_for);
      }
    }
  });

  int released = 0;
  int tasks_run = 0;
  int stale = 0;
  bool free = true;  // the object is in the pool
  int open_call = 0;
  auto release = [&] {
    ++released;
    free = true;
  };
  auto run_tasks = [&] {
    std::vector<int> tasks;
    {
      MutexLock lock(&tasks_posted.mu);
      tasks.swap(tasks_posted.queued);
    }
    for (int accepted_for : tasks) {
      ++tasks_run;
      if (accepted_for != generation.load(std::memory_order_relaxed)) ++stale;
      if (gate.CancelTaskDone()) release();
    }
  };
  for (int call = 1; call <= kCalls;) {
    if (free) {
      free = false;
      open_call = call;
      generation.store(call, std::memory_order_release);
      gate.Open();
      ++call;
    }
    // Let the canceller in now and then, then end the call.
    if (open_call % 3 == 0) std::this_thread::yield();
    run_tasks();
    if (gate.Close()) release();
    // A cancel accepted before the close holds the object: wait for its
    // task as a loop would (later iterations).
    while (!free) run_tasks();
  }
  stop.store(true, std::memory_order_release);
  canceller.join();
  run_tasks();

  EXPECT_EQ(stale, 0);
  EXPECT_EQ(released, kCalls);
  // Not vacuous: cancels did land, and at most one per call.
  EXPECT_GT(tasks_run, 0);
  EXPECT_LE(tasks_run, kCalls);
}

}  // namespace
}  // namespace h2rpc::internal
