#include "rpc/internal/common/worker_pool.h"

#include <dirent.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "test/util/jitter.h"
#include "test/util/wait_for.h"

namespace h2rpc::internal {
namespace {

using ::h2rpc::testing::Jitter;
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

// Counts Done() calls of CountingTasks and lets a test wait for a total.
class DoneCounter {
 public:
  void Add() {
    MutexLock lock(&mu_);
    ++count_;
    changed_.SignalAll();
  }
  // True once the count reached `target`; false if it had not after
  // `timeout`.
  bool WaitFor(int64_t target, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    MutexLock lock(&mu_);
    while (count_ < target) {
      if (changed_.WaitWithTimeout(&mu_, deadline - absl::Now()) &&
          count_ < target) {
        return false;
      }
    }
    return true;
  }
  int64_t count() {
    MutexLock lock(&mu_);
    return count_;
  }

 private:
  Mutex mu_;
  CondVar changed_;
  int64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

// A task that does nothing but count its Done().
class CountingTask final : public WorkerTask {
 public:
  explicit CountingTask(DoneCounter* counter) : counter_(counter) {}
  void Run() override {}
  void Done() override { counter_->Add(); }

 private:
  DoneCounter* const counter_;
};

// How a stress round hands its tasks over.
enum class Handover {
  kSubmit,             // TrySubmit() each
  kDeferredOneByOne,   // TrySubmitDeferred() each, then wake-up passes
                       // of a few threads each until none are needed
  kDeferredAllAtOnce,  // TrySubmitDeferred() each, then one wake-up pass
};

// Hands `count` tasks over the way `how` says, with jitter from `random`.
void HandOver(WorkerPool* pool, CountingTask* tasks, int count, Handover how,
              std::mt19937* random) {
  for (int i = 0; i < count; ++i) {
    const Status status = how == Handover::kSubmit
                              ? pool->TrySubmit(&tasks[i])
                              : pool->TrySubmitDeferred(&tasks[i]);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }
  if (how == Handover::kSubmit) return;
  if ((*random)() % 2 == 0) Jitter(absl::Microseconds((*random)() % 200));
  if (how == Handover::kDeferredAllAtOnce) {
    EXPECT_EQ(pool->WakeForHandedOut(), 0);
    return;
  }
  // As ServerLoop does: a few threads per pass, passes until none is
  // needed.
  int more;
  do {
    more = pool->WakeForHandedOut(1 + static_cast<int>((*random)() % 2));
    if ((*random)() % 2 == 0) Jitter(absl::Microseconds((*random)() % 50));
  } while (more > 0);
}

// Rounds of 1 to max_threads tasks handed over every which way to a new
// pool, each round waited for (10 s at most) before the next; with a short
// idle time, sometimes after the threads beyond the minimum have exited,
// sometimes while their idle time runs out. A task left on the list while
// every thread sleeps with no wake-up on its way waits for ever (threads at
// the minimum sleep until woken) or until an idle timeout: past the 10 s
// for an idle time of an hour, and for a short one once the threads beyond
// the minimum have exited.
void StressHandover(int min_threads, int max_threads, absl::Duration idle_time,
                    int rounds, uint32_t seed) {
  WorkerPool pool(min_threads, max_threads, idle_time);
  std::mt19937 random(seed);
  DoneCounter counter;
  std::vector<CountingTask> tasks(max_threads, CountingTask(&counter));
  const bool threads_exit = idle_time < absl::Seconds(1);
  int64_t expected = 0;
  for (int round = 0; round < rounds; ++round) {
    if (threads_exit && random() % 8 == 0) {
      ASSERT_TRUE(WaitFor([&] { return pool.threads() <= min_threads; }))
          << pool.threads() << " threads";
    } else if (random() % 2 == 0) {
      Jitter(absl::Microseconds(random() % 400));
    }
    const int count = 1 + static_cast<int>(random() % max_threads);
    const Handover how = static_cast<Handover>(random() % 3);
    ASSERT_NO_FATAL_FAILURE(HandOver(&pool, tasks.data(), count, how, &random));
    expected += count;
    ASSERT_TRUE(counter.WaitFor(expected, absl::Seconds(10)))
        << "round " << round << ": " << expected - counter.count() << " of "
        << count << " tasks stranded (hand-over " << static_cast<int>(how)
        << "), threads " << pool.threads() << ", idle " << pool.idle_threads();
  }
}

// The system call each thread named "h2rpc-worker" is blocked in, as
// /proc/self/task/<tid>/syscall shows it: the number and six arguments (then
// stack and instruction pointers), or "running". Empty if /proc cannot say.
std::vector<std::vector<std::string>> WorkerSyscalls() {
  std::vector<std::vector<std::string>> workers;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return workers;
  while (dirent* entry = readdir(dir)) {
    const int tid = std::atoi(entry->d_name);
    if (tid <= 0) continue;
    const std::string task = absl::StrCat("/proc/self/task/", tid);
    std::ifstream comm(task + "/comm");
    std::string name;
    std::getline(comm, name);
    if (!absl::StartsWith(name, "h2rpc-worker")) continue;
    std::ifstream syscall_file(task + "/syscall");
    std::string line;
    // A thread that exited meanwhile shows up as a line-less entry.
    if (!std::getline(syscall_file, line)) line = "gone";
    workers.push_back(absl::StrSplit(line, ' ', absl::SkipEmpty()));
  }
  closedir(dir);
  return workers;
}

// Whether `call` (a WorkerSyscalls() entry) is a futex wait with no time
// limit.
bool IsFutexWaitForever(const std::vector<std::string>& call) {
  if (call.size() < 7 || call[0] != absl::StrCat(SYS_futex)) return false;
  const uint64_t op = std::strtoull(call[2].c_str(), nullptr, 16);
  const uint64_t timeout = std::strtoull(call[4].c_str(), nullptr, 16);
  return (op & FUTEX_CMD_MASK) == FUTEX_WAIT && timeout == 0;
}

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

TEST(WorkerPoolTest, NoTaskIsStrandedWhileThreadsTimeOut) {
  // Threads beyond the minimum time out within a round or two, around the
  // hand-overs and wake-ups.
  StressHandover(/*min_threads=*/1, /*max_threads=*/4,
                 /*idle_time=*/absl::Microseconds(300), /*rounds=*/2000,
                 /*seed=*/1);
}

TEST(WorkerPoolTest, NoTaskIsStrandedWhileEveryThreadStays) {
  StressHandover(/*min_threads=*/0, /*max_threads=*/4,
                 /*idle_time=*/absl::Hours(1), /*rounds=*/2000, /*seed=*/2);
}

TEST(WorkerPoolTest, NoTaskIsStrandedWithTwoSubmitters) {
  // Two submitters (two event loops, say), each with up to two tasks out:
  // never more than the pool's four, so none is refused.
  WorkerPool pool(/*min_threads=*/1, /*max_threads=*/4,
                  absl::Microseconds(300));
  auto submit_rounds = [&pool](uint32_t seed) {
    std::mt19937 random(seed);
    DoneCounter counter;
    std::vector<CountingTask> tasks(2, CountingTask(&counter));
    int64_t expected = 0;
    for (int round = 0; round < 1000; ++round) {
      if (random() % 2 == 0) Jitter(absl::Microseconds(random() % 400));
      const int count = 1 + static_cast<int>(random() % 2);
      ASSERT_NO_FATAL_FAILURE(HandOver(&pool, tasks.data(), count,
                                       static_cast<Handover>(random() % 3),
                                       &random));
      expected += count;
      ASSERT_TRUE(counter.WaitFor(expected, absl::Seconds(10)))
          << "round " << round << ": " << expected - counter.count() << " of "
          << count << " tasks stranded";
    }
  };
  std::thread other(submit_rounds, 3);
  submit_rounds(4);
  other.join();
}

TEST(WorkerPoolTest, ThreadsAtTheMinimumSleepUntilWoken) {
  // Idle time zero: threads beyond the minimum would exit at once; the two
  // the pool keeps, once done with their tasks (and their poll for the
  // next), must block until woken rather than time out again and again.
  WorkerPool pool(/*min_threads=*/2, /*max_threads=*/2, absl::ZeroDuration());
  DoneCounter counter;
  CountingTask tasks[2] = {CountingTask(&counter), CountingTask(&counter)};
  for (int round = 1; round <= 5; ++round) {
    for (CountingTask& task : tasks) ASSERT_TRUE(pool.TrySubmit(&task).ok());
    ASSERT_TRUE(counter.WaitFor(2 * round, kHangTimeout));
  }
  // A thread names itself once running: one that has not yet run (its
  // partner took every task) may not show yet.
  std::vector<std::vector<std::string>> first;
  ASSERT_TRUE(WaitFor([&] {
    first = WorkerSyscalls();
    return first.size() == 2;
  })) << first.size()
      << " workers named";
  if (first[0].empty() || first[0][0] == "gone") {
    GTEST_SKIP() << "/proc does not show the threads' system calls";
  }
  std::string last;
  EXPECT_TRUE(WaitFor([&] {
    last.clear();
    bool all = true;
    for (const auto& call : WorkerSyscalls()) {
      absl::StrAppend(&last, "[", absl::StrJoin(call, " "), "] ");
      all = all && IsFutexWaitForever(call);
    }
    return all;
  })) << "worker threads: "
      << last;
  EXPECT_EQ(pool.threads(), 2);
  EXPECT_EQ(pool.idle_threads(), 2);
}

// Records the CPUs of the thread that runs it.
class AffinityTask final : public WorkerTask {
 public:
  explicit AffinityTask(DoneCounter* counter) : counter_(counter) {}
  void Run() override {
    CPU_ZERO(&cpus_);
    ok_ = pthread_getaffinity_np(pthread_self(), sizeof(cpus_), &cpus_) == 0;
  }
  void Done() override { counter_->Add(); }
  // After Done().
  bool ok() const { return ok_; }
  const cpu_set_t& cpus() const { return cpus_; }

 private:
  DoneCounter* const counter_;
  bool ok_ = false;
  cpu_set_t cpus_;
};

TEST(WorkerPoolTest, ThreadsRunOnThePoolsCpusWhoeverStartsThem) {
  cpu_set_t pool_cpus;
  CPU_ZERO(&pool_cpus);
  ASSERT_EQ(
      pthread_getaffinity_np(pthread_self(), sizeof(pool_cpus), &pool_cpus), 0);
  if (CPU_COUNT(&pool_cpus) < 2) {
    GTEST_SKIP() << "a single CPU: a pinned submitter changes nothing";
  }
  int one_cpu = 0;
  while (!CPU_ISSET(one_cpu, &pool_cpus)) ++one_cpu;
  WorkerPool pool(/*min_threads=*/0, /*max_threads=*/1, absl::Seconds(60));
  DoneCounter counter;
  AffinityTask task(&counter);
  // A submitter pinned to one CPU (an event loop with loop_cpus, say) starts
  // the pool's first thread.
  std::thread pinned([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(one_cpu, &set);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
    ASSERT_TRUE(pool.TrySubmit(&task).ok());
  });
  pinned.join();
  ASSERT_TRUE(counter.WaitFor(1, kHangTimeout));
  ASSERT_TRUE(task.ok());
  EXPECT_TRUE(CPU_EQUAL(&task.cpus(), &pool_cpus))
      << "the thread runs on " << CPU_COUNT(&task.cpus())
      << " CPUs, the pool's " << CPU_COUNT(&pool_cpus);
}

}  // namespace
}  // namespace h2rpc::internal
