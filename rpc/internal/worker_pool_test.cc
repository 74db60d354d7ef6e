#include "rpc/internal/worker_pool.h"

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "test/util/wait_for.h"
#include "transport/io/mutex.h"

namespace h2rpc::internal {
namespace {

using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;

// Threads that ran a task, and those of them that have ended (a
// thread_local's destructor ran at thread exit).
std::atomic<int> threads_entered{0};
std::atomic<int> threads_left{0};
struct ThreadPresence {
  ThreadPresence() { threads_entered.fetch_add(1); }
  ~ThreadPresence() { threads_left.fetch_add(1); }
};
void MarkThisThread() {
  thread_local ThreadPresence presence;
  (void)presence;
}

// A task that blocks in Run() until released (unless created released) and
// records Run() and Done(). `on_done` runs inside Done().
class TestTask final : public WorkerTask {
 public:
  explicit TestTask(bool released = false) : released_(released) {}

  void Run() override {
    MarkThisThread();
    MutexLock lock(&mu_);
    started_ = true;
    changed_.SignalAll();
    while (!released_) changed_.Wait(&mu_);
  }
  void Done() override {
    if (on_done) on_done();
    MutexLock lock(&mu_);
    done_ = true;
    changed_.SignalAll();
  }

  void Release() {
    MutexLock lock(&mu_);
    released_ = true;
    changed_.SignalAll();
  }
  bool WaitStarted() { return WaitFor(&started_); }
  bool WaitDone() { return WaitFor(&done_); }
  bool done() {
    MutexLock lock(&mu_);
    return done_;
  }
  // Makes the task reusable once done.
  void Reset(bool released) {
    MutexLock lock(&mu_);
    started_ = false;
    done_ = false;
    released_ = released;
  }

  std::function<void()> on_done;

 private:
  bool WaitFor(bool* flag) {
    const absl::Time deadline = absl::Now() + kHangTimeout;
    MutexLock lock(&mu_);
    while (!*flag) {
      if (changed_.WaitWithTimeout(&mu_, deadline - absl::Now()) && !*flag) {
        return false;
      }
    }
    return true;
  }

  Mutex mu_;
  CondVar changed_;
  bool released_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(WorkerPoolTest, StartsTheMinimumIdle) {
  WorkerPool pool(/*min_threads=*/2, /*max_threads=*/4, absl::Seconds(60));
  EXPECT_EQ(pool.threads(), 2);
  EXPECT_EQ(pool.idle_threads(), 2);
}

TEST(WorkerPoolTest, GrowsOnDemandThenRefusesAtTheMaximum) {
  WorkerPool pool(/*min_threads=*/1, /*max_threads=*/3, absl::Seconds(60));
  TestTask tasks[3];
  for (TestTask& task : tasks) {
    ASSERT_TRUE(pool.TrySubmit(&task).ok());
  }
  // All three run at once: three threads.
  for (TestTask& task : tasks) ASSERT_TRUE(task.WaitStarted());
  EXPECT_EQ(pool.threads(), 3);
  EXPECT_EQ(pool.idle_threads(), 0);

  TestTask refused(/*released=*/true);
  const Status status = pool.TrySubmit(&refused);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "all 3 synchronous handler threads are busy "
            "(ServerOptions::max_sync_threads)");

  for (TestTask& task : tasks) task.Release();
  for (TestTask& task : tasks) ASSERT_TRUE(task.WaitDone());
  ASSERT_TRUE(WaitFor([&] { return pool.idle_threads() == 3; }));
  // An idle thread takes the next task: no new thread.
  ASSERT_TRUE(pool.TrySubmit(&refused).ok());
  EXPECT_EQ(pool.threads(), 3);
  ASSERT_TRUE(refused.WaitDone());
}

TEST(WorkerPoolTest, DeferredTasksEachGetAnIdleThreadOnceWoken) {
  WorkerPool pool(/*min_threads=*/3, /*max_threads=*/3, absl::Seconds(60));
  TestTask tasks[3];
  for (TestTask& task : tasks) {
    ASSERT_TRUE(pool.TrySubmitDeferred(&task).ok());
  }
  // Each handed-out task holds an idle thread, taken up or not yet.
  TestTask refused(/*released=*/true);
  const Status status = pool.TrySubmitDeferred(&refused);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  pool.WakeForHandedOut();
  // All three block at once: none waits for another to finish.
  for (TestTask& task : tasks) ASSERT_TRUE(task.WaitStarted());
  EXPECT_EQ(pool.threads(), 3);
  EXPECT_EQ(pool.idle_threads(), 0);
  for (TestTask& task : tasks) task.Release();
  for (TestTask& task : tasks) ASSERT_TRUE(task.WaitDone());
  ASSERT_TRUE(WaitFor([&] { return pool.idle_threads() == 3; }));
  EXPECT_FALSE(refused.done());
}

TEST(WorkerPoolTest, WakesSleepingThreadsForABatchOfDeferredTasks) {
  WorkerPool pool(/*min_threads=*/0, /*max_threads=*/4, absl::Seconds(60));
  TestTask first[4];
  // Four threads, then all idle (asleep, in time).
  for (TestTask& task : first) ASSERT_TRUE(pool.TrySubmit(&task).ok());
  for (TestTask& task : first) ASSERT_TRUE(task.WaitStarted());
  for (TestTask& task : first) task.Release();
  for (TestTask& task : first) ASSERT_TRUE(task.WaitDone());
  ASSERT_TRUE(WaitFor([&] { return pool.idle_threads() == 4; }));
  for (int round = 0; round < 20; ++round) {
    TestTask batch[4];
    for (TestTask& task : batch) {
      ASSERT_TRUE(pool.TrySubmitDeferred(&task).ok());
    }
    // One thread first: at most the three others are still needed (fewer
    // if some were awake).
    const int more = pool.WakeForHandedOut(/*max_wakes=*/1);
    EXPECT_GE(more, 0);
    EXPECT_LE(more, 3);
    // Then all the batch needs; after that, none.
    pool.WakeForHandedOut();
    EXPECT_EQ(pool.WakeForHandedOut(), 0);
    for (TestTask& task : batch) ASSERT_TRUE(task.WaitStarted());
    EXPECT_EQ(pool.threads(), 4);
    for (TestTask& task : batch) task.Release();
    for (TestTask& task : batch) ASSERT_TRUE(task.WaitDone());
    ASSERT_TRUE(WaitFor([&] { return pool.idle_threads() == 4; }));
  }
}

TEST(WorkerPoolTest, ThreadIsIdleWhenItsTaskPublishesItsOutcome) {
  // A single thread: what Done() lets happen (here, the next submission, as
  // a client's next call would) must find it available.
  WorkerPool pool(/*min_threads=*/1, /*max_threads=*/1, absl::Seconds(60));
  TestTask first(/*released=*/true);
  TestTask second(/*released=*/true);
  Status second_submitted(StatusCode::kUnknown, "not submitted");
  first.on_done = [&] { second_submitted = pool.TrySubmit(&second); };
  ASSERT_TRUE(pool.TrySubmit(&first).ok());
  ASSERT_TRUE(first.WaitDone());
  EXPECT_TRUE(second_submitted.ok()) << second_submitted.ToString();
  EXPECT_TRUE(second.WaitDone());
  EXPECT_EQ(pool.threads(), 1);
}

TEST(WorkerPoolTest, ThreadsBeyondTheMinimumExitWhenIdle) {
  WorkerPool pool(/*min_threads=*/1, /*max_threads=*/4, absl::Milliseconds(20));
  TestTask tasks[4];
  for (TestTask& task : tasks) ASSERT_TRUE(pool.TrySubmit(&task).ok());
  for (TestTask& task : tasks) ASSERT_TRUE(task.WaitStarted());
  EXPECT_EQ(pool.threads(), 4);
  for (TestTask& task : tasks) task.Release();
  for (TestTask& task : tasks) ASSERT_TRUE(task.WaitDone());

  ASSERT_TRUE(WaitFor([&] { return pool.threads() == 1; }))
      << pool.threads() << " threads";
  // The one kept waits for work and takes it without a new thread.
  ASSERT_TRUE(WaitFor([&] { return pool.idle_threads() == 1; }));
  TestTask next(/*released=*/true);
  ASSERT_TRUE(pool.TrySubmit(&next).ok());
  EXPECT_EQ(pool.threads(), 1);
  ASSERT_TRUE(next.WaitDone());
  // And it grows again on demand.
  TestTask again[2];
  for (TestTask& task : again) ASSERT_TRUE(pool.TrySubmit(&task).ok());
  for (TestTask& task : again) ASSERT_TRUE(task.WaitStarted());
  EXPECT_EQ(pool.threads(), 2);
  for (TestTask& task : again) task.Release();
  for (TestTask& task : again) ASSERT_TRUE(task.WaitDone());
}

TEST(WorkerPoolTest, DestructionWaitsForTasksAndJoinsEveryThread) {
  const int entered_before = threads_entered.load();
  const int left_before = threads_left.load();
  TestTask tasks[3];
  {
    WorkerPool pool(/*min_threads=*/1, /*max_threads=*/3, absl::Seconds(60));
    for (TestTask& task : tasks) ASSERT_TRUE(pool.TrySubmit(&task).ok());
    for (TestTask& task : tasks) ASSERT_TRUE(task.WaitStarted());
    for (TestTask& task : tasks) task.Release();
    // Destroyed while the tasks may still be finishing.
  }
  for (TestTask& task : tasks) EXPECT_TRUE(task.done());
  EXPECT_EQ(threads_entered.load() - entered_before, 3);
  EXPECT_EQ(threads_left.load() - left_before, 3);
}

TEST(WorkerPoolTest, ThreadsThatExitedWhenIdleAreJoined) {
  const int entered_before = threads_entered.load();
  const int left_before = threads_left.load();
  {
    // Idle time 0: a thread beyond the minimum exits as soon as it is idle.
    WorkerPool pool(/*min_threads=*/0, /*max_threads=*/2, absl::ZeroDuration());
    for (int round = 0; round < 5; ++round) {
      TestTask tasks[2];
      for (TestTask& task : tasks) ASSERT_TRUE(pool.TrySubmit(&task).ok());
      for (TestTask& task : tasks) ASSERT_TRUE(task.WaitStarted());
      for (TestTask& task : tasks) task.Release();
      for (TestTask& task : tasks) ASSERT_TRUE(task.WaitDone());
      ASSERT_TRUE(WaitFor([&] { return pool.threads() == 0; }));
    }
  }
  EXPECT_EQ(threads_entered.load() - entered_before, 10);
  EXPECT_EQ(threads_left.load() - left_before, 10);
}

TEST(WorkerPoolTest, HandingATaskToAnIdleThreadDoesNotAllocate) {
  WorkerPool pool(/*min_threads=*/1, /*max_threads=*/1, absl::Seconds(60));
  TestTask task(/*released=*/true);
  auto run_once = [&] {
    task.Reset(/*released=*/true);
    ASSERT_TRUE(pool.TrySubmit(&task).ok());
    ASSERT_TRUE(task.WaitDone());
  };
  for (int i = 0; i < 10; ++i) run_once();  // warm: thread-locals and all
  const int64_t workers_before =
      h2rpc::testing::AllocationsByRole(h2rpc::testing::ThreadRole::kServer)
          .allocations;
  h2rpc::testing::AllocationCounter submitter;
  for (int i = 0; i < 100; ++i) run_once();
  EXPECT_EQ(submitter.allocations(), 0);
  EXPECT_EQ(
      h2rpc::testing::AllocationsByRole(h2rpc::testing::ThreadRole::kServer)
              .allocations -
          workers_before,
      0);
}

}  // namespace
}  // namespace h2rpc::internal
