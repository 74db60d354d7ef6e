#include "transport/io/event_loop.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// Generous: only catches hangs (a lost wake-up), never measures speed.
constexpr absl::Duration kHangTimeout = absl::Seconds(60);

// A one-shot latch on std::mutex (which ThreadSanitizer sees, unlike the
// uninstrumented system absl::Mutex).
class Latch {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  // False if not notified within kHangTimeout.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoSeconds(kHangTimeout),
                        [this] { return done_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// Runs `fn` on the loop thread and waits for it.
void RunOnLoop(EventLoop& loop, absl::AnyInvocable<void()> fn) {
  Latch done;
  loop.Post([&fn, &done] {
    fn();
    done.Notify();
  });
  ASSERT_TRUE(done.Wait()) << "loop did not run a posted task";
}

class FunctionTask : public Task {
 public:
  explicit FunctionTask(std::function<void()> fn) : fn_(std::move(fn)) {}
  void Run() override { fn_(); }

 private:
  std::function<void()> fn_;
};

class FunctionTimer : public Timer {
 public:
  explicit FunctionTimer(std::function<void()> fn) : fn_(std::move(fn)) {}
  void OnTimer() override { fn_(); }

 private:
  std::function<void()> fn_;
};

class FunctionWatcher : public FdWatcher {
 public:
  explicit FunctionWatcher(std::function<void(uint32_t)> fn)
      : fn_(std::move(fn)) {}
  void OnFdReady(uint32_t events) override { fn_(events); }

 private:
  std::function<void(uint32_t)> fn_;
};

// A connected, non-blocking AF_UNIX stream pair, closed on destruction.
struct SocketPair {
  SocketPair() {
    EXPECT_EQ(
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds),
        0);
  }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  int fds[2] = {-1, -1};
};

std::string ReadAll(int fd) {
  std::string data;
  char buffer[256];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) data.append(buffer, n);
  return data;
}

TEST(EventLoopTest, PostFromEightThreadsRunsEveryTaskOnceOnTheLoopThread) {
  constexpr int kThreads = 8;
  constexpr int kTasksPerThread = 10000;
  struct CountingTask : Task {
    void Run() override {
      ++runs;
      if (!loop->InLoopThread()) ++off_loop_runs;
    }
    EventLoop* loop = nullptr;
    int runs = 0;
    int off_loop_runs = 0;
  };
  EventLoop loop;
  std::vector<CountingTask> tasks(kThreads * kTasksPerThread);
  for (CountingTask& task : tasks) task.loop = &loop;
  ASSERT_TRUE(loop.Start("post-test").ok());

  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&loop, &tasks, t] {
      for (int i = 0; i < kTasksPerThread; ++i) {
        loop.Post(&tasks[t * kTasksPerThread + i]);
      }
    });
  }
  for (std::thread& poster : posters) poster.join();
  loop.Stop();  // Runs what is still queued, then joins.

  for (size_t i = 0; i < tasks.size(); ++i) {
    ASSERT_EQ(tasks[i].runs, 1) << "task " << i;
    ASSERT_EQ(tasks[i].off_loop_runs, 0) << "task " << i;
  }
}

// AssertInLoopThread() holds on the loop thread while it runs, and on the
// owner's thread before Start() and after Stop(); a debug build aborts when
// another thread calls it while the loop runs.
TEST(EventLoopTest, AssertInLoopThreadAbortsOnlyOffTheRunningLoopsThread) {
  EventLoop loop;
  loop.AssertInLoopThread();  // before Start()
  ASSERT_TRUE(loop.Start("assert-test").ok());
  std::promise<void> asserted;
  loop.Post([&] {
    loop.AssertInLoopThread();
    asserted.set_value();
  });
  ASSERT_EQ(asserted.get_future().wait_for(std::chrono::seconds(10)),
            std::future_status::ready);
#ifdef NDEBUG
  loop.AssertInLoopThread();  // optimized: no check
#else
  // Re-runs the test in a new process rather than forking this threaded one.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(loop.AssertInLoopThread(),
               "a loop-thread-only function ran on another thread");
#endif
  loop.Stop();
  loop.AssertInLoopThread();  // after the thread has exited
}

TEST(EventLoopTest, CurrentIsTheLoopOfTheCallingThread) {
  EXPECT_EQ(EventLoop::Current(), nullptr);
  EventLoop loop;
  ASSERT_TRUE(loop.Start("current-test").ok());
  std::promise<EventLoop*> seen;
  loop.Post([&] { seen.set_value(EventLoop::Current()); });
  std::future<EventLoop*> future = seen.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(10)),
            std::future_status::ready);
  EXPECT_EQ(future.get(), &loop);
  EXPECT_EQ(EventLoop::Current(), nullptr);
}

// Each post waits for the previous task, so the loop is mostly asleep when a
// task arrives: a lost wake-up would hang here.
TEST(EventLoopTest, PingPongFromAnotherThreadNeverLosesAWakeUp) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("ping-pong").ok());
  std::mutex mu;
  std::condition_variable cv;
  int completed = 0;
  FunctionTask task([&] {
    std::lock_guard<std::mutex> lock(mu);
    ++completed;
    cv.notify_all();
  });
  for (int i = 1; i <= 2000; ++i) {
    loop.Post(&task);
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, absl::ToChronoSeconds(kHangTimeout),
                            [&] { return completed == i; }))
        << "task " << i << " never ran";
  }
}

TEST(EventLoopTest, PostOfATaskDoesNotAllocate) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("alloc-test").ok());
  std::atomic<int> runs{0};
  FunctionTask task([&runs] { runs.fetch_add(1); });

  testing::AllocationCounter counter;
  for (int i = 0; i < 1000; ++i) loop.Post(&task);
  EXPECT_EQ(counter.allocations(), 0);

  // From the loop thread too.
  int64_t loop_thread_allocations = -1;
  FunctionTask other([] {});
  RunOnLoop(loop, [&] {
    testing::AllocationCounter loop_counter;
    loop.Post(&other);
    loop_thread_allocations = loop_counter.allocations();
  });
  EXPECT_EQ(loop_thread_allocations, 0);
  loop.Stop();
  EXPECT_GE(runs.load(), 1);

  // The counter does see the allocating convenience overload.
  EventLoop stopped;
  counter.Reset();
  stopped.Post([] {});
  EXPECT_GE(counter.allocations(), 1);
}

TEST(EventLoopTest, ATaskQueuedTwiceRunsOnceAndMayRepostItself) {
  EventLoop loop;
  int runs = 0;
  FunctionTask once([&runs] { ++runs; });
  loop.Post(&once);
  loop.Post(&once);  // Still queued: ignored.

  int self_posts = 0;
  FunctionTask* self_ptr = nullptr;
  FunctionTask reposting([&] {
    if (++self_posts < 3) loop.Post(self_ptr);
  });
  self_ptr = &reposting;
  loop.Post(&reposting);

  ASSERT_TRUE(loop.Start("dedupe").ok());
  loop.Stop();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(self_posts, 3);
}

TEST(EventLoopTest, PostedTasksRunInPostingOrderOnTheLoopThread) {
  EventLoop loop;
  EXPECT_FALSE(loop.InLoopThread());
  std::vector<int> order;
  bool all_on_loop = true;
  FunctionTask a([&] {
    order.push_back(1);
    all_on_loop &= loop.InLoopThread();
  });
  FunctionTask b([&] {
    order.push_back(2);
    all_on_loop &= loop.InLoopThread();
  });
  loop.Post(&a);
  loop.Post(&b);
  loop.Post([&] {
    order.push_back(3);
    all_on_loop &= loop.InLoopThread();
  });
  ASSERT_TRUE(loop.Start("order").ok());
  loop.Stop();
  EXPECT_THAT(order, ElementsAre(1, 2, 3));
  EXPECT_TRUE(all_on_loop);
  EXPECT_FALSE(loop.InLoopThread());
}

// The loop thread's own posts skip the shared queue only while it is empty;
// posting order holds across both queues, in either interleaving.
TEST(EventLoopTest, LoopThreadAndOtherThreadPostsKeepPostingOrder) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("order").ok());
  std::vector<int> order;  // loop thread
  Latch all_ran;
  FunctionTask own_first([&] { order.push_back(1); });
  FunctionTask other([&] { order.push_back(2); });
  FunctionTask own_after_other([&] { order.push_back(3); });
  FunctionTask other_after_own([&] { order.push_back(4); });
  FunctionTask own_last([&] {
    order.push_back(5);
    all_ran.Notify();
  });
  RunOnLoop(loop, [&] {
    loop.Post(&own_first);
    // Each post from another thread happens after the loop's posts before
    // it and before the loop's posts after it.
    std::thread([&] { loop.Post(&other); }).join();
    loop.Post(&own_after_other);
    std::thread([&] { loop.Post(&other_after_own); }).join();
    loop.Post(&own_last);
  });
  ASSERT_TRUE(all_ran.Wait());
  RunOnLoop(loop, [&] { EXPECT_THAT(order, ElementsAre(1, 2, 3, 4, 5)); });
}

struct Firing {
  int id;
  MonotonicTime deadline;
  MonotonicTime loop_now;
  MonotonicTime clock_now;
};

TEST(EventLoopTest, TimersFireInDeadlineOrderAfterTheirDeadlines) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("timers").ok());
  const int offsets_ms[] = {30, 10, 50, 20, 40};
  std::vector<Firing> firings;
  Latch done;
  std::vector<std::unique_ptr<FunctionTimer>> timers;
  for (int i = 0; i < 5; ++i) {
    timers.push_back(std::make_unique<FunctionTimer>([&, i] {
      firings.push_back(
          {i, timers[i]->deadline(), loop.Now(), MonotonicTime::Now()});
      if (firings.size() == 5) done.Notify();
    }));
  }
  RunOnLoop(loop, [&] {
    const MonotonicTime base = loop.Now();
    for (int i = 0; i < 5; ++i) {
      loop.Schedule(timers[i].get(), base + absl::Milliseconds(offsets_ms[i]));
      EXPECT_TRUE(timers[i]->scheduled());
    }
  });
  ASSERT_TRUE(done.Wait());
  loop.Stop();

  ASSERT_EQ(firings.size(), 5u);
  std::vector<int> ids;
  for (const Firing& firing : firings) {
    ids.push_back(firing.id);
    EXPECT_GE(firing.loop_now, firing.deadline) << "timer " << firing.id;
    EXPECT_GE(firing.clock_now, firing.deadline) << "timer " << firing.id;
    EXPECT_FALSE(timers[firing.id]->scheduled());
  }
  EXPECT_THAT(ids, ElementsAre(1, 3, 0, 4, 2));
}

TEST(EventLoopTest, TimersWithEqualDeadlinesFireInSchedulingOrder) {
  EventLoop loop;
  std::vector<int> order;
  std::vector<std::unique_ptr<FunctionTimer>> timers;
  for (int i = 0; i < 4; ++i) {
    timers.push_back(
        std::make_unique<FunctionTimer>([&order, i] { order.push_back(i); }));
  }
  const MonotonicTime deadline = MonotonicTime::Now();
  for (int i : {2, 0, 3, 1}) loop.Schedule(timers[i].get(), deadline);
  ASSERT_TRUE(loop.Start("equal-deadlines").ok());
  RunOnLoop(loop, [] {});  // The deadline has passed: timers ran first.
  loop.Stop();
  EXPECT_THAT(order, ElementsAre(2, 0, 3, 1));
}

TEST(EventLoopTest, CancelledTimerNeverFires) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("cancel").ok());
  int cancelled_runs = 0;
  Latch done;
  FunctionTimer cancelled([&] { ++cancelled_runs; });
  FunctionTimer later([&] { done.Notify(); });
  FunctionTimer never_scheduled([] {});
  RunOnLoop(loop, [&] {
    loop.Schedule(&cancelled, loop.Now() + absl::Milliseconds(5));
    loop.Schedule(&later, loop.Now() + absl::Milliseconds(20));
    loop.Cancel(&cancelled);
    EXPECT_FALSE(cancelled.scheduled());
    loop.Cancel(&cancelled);        // Twice: no-op.
    loop.Cancel(&never_scheduled);  // Never scheduled: no-op.
  });
  ASSERT_TRUE(done.Wait());
  loop.Stop();
  // `cancelled` was due before `later`: it would have run by now.
  EXPECT_EQ(cancelled_runs, 0);
}

TEST(EventLoopTest, RescheduleMovesATimerEarlierOrLater) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("reschedule").ok());
  std::vector<std::string> order;
  Latch done;
  FunctionTimer moved_earlier([&] { order.push_back("earlier"); });
  FunctionTimer fixed([&] { order.push_back("fixed"); });
  FunctionTimer moved_later([&] {
    order.push_back("later");
    done.Notify();
  });
  RunOnLoop(loop, [&] {
    const MonotonicTime now = loop.Now();
    loop.Schedule(&moved_earlier, now + absl::Hours(1));
    loop.Schedule(&moved_later, now + absl::Milliseconds(5));
    loop.Schedule(&fixed, now + absl::Milliseconds(20));
    loop.Schedule(&moved_earlier, now + absl::Milliseconds(5));
    loop.Schedule(&moved_later, now + absl::Milliseconds(40));
    EXPECT_EQ(moved_later.deadline(), now + absl::Milliseconds(40));
  });
  ASSERT_TRUE(done.Wait());
  loop.Stop();
  EXPECT_THAT(order, ElementsAre("earlier", "fixed", "later"));
}

// Many timers, random deadlines, cancels and reschedules: exercises every
// sift path of the heap. Survivors fire once each, in deadline order.
TEST(EventLoopTest, TimerHeapStaysOrderedUnderCancelAndReschedule) {
  constexpr int kTimers = 300;
  EventLoop loop;
  ASSERT_TRUE(loop.Start("timer-heap").ok());
  std::vector<int> fire_counts(kTimers, 0);
  std::vector<MonotonicTime> fired_deadlines;
  std::vector<std::unique_ptr<FunctionTimer>> timers;
  int expected = 0;
  Latch done;
  for (int i = 0; i < kTimers; ++i) {
    timers.push_back(std::make_unique<FunctionTimer>([&, i] {
      ++fire_counts[i];
      fired_deadlines.push_back(timers[i]->deadline());
      if (static_cast<int>(fired_deadlines.size()) == expected) done.Notify();
    }));
  }
  RunOnLoop(loop, [&] {
    std::mt19937 random(42);
    std::uniform_int_distribution<int> micros(1000, 30000);
    const MonotonicTime base = loop.Now();
    for (auto& timer : timers) {
      loop.Schedule(timer.get(), base + absl::Microseconds(micros(random)));
    }
    for (int i = 0; i < kTimers; ++i) {
      if (i % 3 == 0) {
        loop.Cancel(timers[i].get());
      } else if (i % 5 == 0) {
        loop.Schedule(timers[i].get(),
                      base + absl::Microseconds(micros(random)));
      }
    }
    for (const auto& timer : timers) expected += timer->scheduled() ? 1 : 0;
  });
  ASSERT_TRUE(done.Wait());
  loop.Stop();
  EXPECT_EQ(expected, kTimers - (kTimers + 2) / 3);
  for (int i = 0; i < kTimers; ++i) {
    EXPECT_EQ(fire_counts[i], i % 3 == 0 ? 0 : 1) << "timer " << i;
  }
  EXPECT_TRUE(std::is_sorted(fired_deadlines.begin(), fired_deadlines.end()));
}

TEST(EventLoopTest, TimerReschedulesItselfFromOnTimer) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("self-timer").ok());
  int runs = 0;
  bool fired_after_deadline = true;
  Latch done;
  FunctionTimer* self = nullptr;
  FunctionTimer timer([&] {
    fired_after_deadline &= loop.Now() >= self->deadline();
    EXPECT_FALSE(self->scheduled());
    if (++runs < 5) {
      loop.Schedule(self, loop.Now() + absl::Milliseconds(1));
    } else {
      done.Notify();
    }
  });
  self = &timer;
  RunOnLoop(loop, [&] { loop.Schedule(&timer, loop.Now()); });
  ASSERT_TRUE(done.Wait());
  loop.Stop();
  EXPECT_EQ(runs, 5);
  EXPECT_TRUE(fired_after_deadline);
}

// A timer re-armed for a deadline that has already passed fires in the next
// iteration, not again in the same one (no livelock).
TEST(EventLoopTest, TimerRearmedForAPastDeadlineFiresInTheNextIteration) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("past-timer").ok());
  int runs = 0;
  int end_of_iteration_runs = 0;
  bool one_firing_per_iteration = true;
  Latch done;
  FunctionTask end_marker([&] { ++end_of_iteration_runs; });
  FunctionTimer* self = nullptr;
  FunctionTimer timer([&] {
    one_firing_per_iteration &= end_of_iteration_runs == runs;
    loop.RunAtEndOfIteration(&end_marker);
    if (++runs < 50) {
      loop.Schedule(self, loop.Now() - absl::Seconds(1));
    } else {
      done.Notify();
    }
  });
  self = &timer;
  RunOnLoop(loop,
            [&] { loop.Schedule(&timer, MonotonicTime::InfinitePast()); });
  ASSERT_TRUE(done.Wait());
  loop.Stop();
  EXPECT_EQ(runs, 50);
  EXPECT_TRUE(one_firing_per_iteration);
}

TEST(EventLoopTest, NowIsCachedForTheIteration) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("now").ok());
  MonotonicTime first, second, next_iteration;
  RunOnLoop(loop, [&] {
    first = loop.Now();
    // The clock moves on while the task runs.
    while (MonotonicTime::Now() < first + absl::Milliseconds(2)) {
    }
    second = loop.Now();
  });
  RunOnLoop(loop, [&] { next_iteration = loop.Now(); });
  loop.Stop();
  EXPECT_EQ(first, second);
  EXPECT_GE(next_iteration, first + absl::Milliseconds(2));
}

TEST(EventLoopTest, ReportsReadWriteAndHangUpReadiness) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("fd").ok());
  SocketPair pair;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint32_t> events;
  std::string received;
  FunctionWatcher watcher([&](uint32_t ready) {
    EXPECT_TRUE(loop.InLoopThread());
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(ready);
    if (ready & EPOLLIN) received += ReadAll(pair.fds[0]);
    cv.notify_all();
  });
  auto wait_for_events = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, absl::ToChronoSeconds(kHangTimeout),
                       [&] { return events.size() >= n; });
  };

  RunOnLoop(loop, [&] {
    EXPECT_TRUE(loop.AddFd(pair.fds[0], EPOLLIN | EPOLLRDHUP, &watcher).ok());
  });
  ASSERT_EQ(write(pair.fds[1], "ping", 4), 4);
  ASSERT_TRUE(wait_for_events(1));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(events[0] & EPOLLIN);
    EXPECT_FALSE(events[0] & EPOLLOUT);
    EXPECT_EQ(received, "ping");
  }

  // Writable: reported once (edge-triggered), without data to read.
  RunOnLoop(loop, [&] {
    EXPECT_TRUE(
        loop.ModifyFd(pair.fds[0], EPOLLIN | EPOLLOUT | EPOLLET, &watcher)
            .ok());
  });
  ASSERT_TRUE(wait_for_events(2));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(events[1] & EPOLLOUT);
  }

  // The peer hangs up.
  RunOnLoop(loop, [&] {
    EXPECT_TRUE(
        loop.ModifyFd(pair.fds[0], EPOLLIN | EPOLLRDHUP, &watcher).ok());
  });
  close(pair.fds[1]);
  pair.fds[1] = -1;
  ASSERT_TRUE(wait_for_events(3));
  RunOnLoop(loop, [&] { loop.RemoveFd(pair.fds[0]); });
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(events.back() & EPOLLRDHUP);
  }
  // Removed: the still-pending hang-up is no longer reported. The iteration
  // running the next posted task has polled after the removal.
  size_t seen;
  {
    std::lock_guard<std::mutex> lock(mu);
    seen = events.size();
  }
  RunOnLoop(loop, [] {});
  RunOnLoop(loop, [] {});
  loop.Stop();
  EXPECT_EQ(events.size(), seen);
}

TEST(EventLoopTest, FdRegistrationErrorsNameTheDescriptor) {
  EventLoop loop;
  FunctionWatcher watcher([](uint32_t) {});
  Status bad = loop.AddFd(-1, EPOLLIN, &watcher);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);

  SocketPair pair;
  ASSERT_TRUE(loop.AddFd(pair.fds[0], EPOLLIN, &watcher).ok());
  Status twice = loop.AddFd(pair.fds[0], EPOLLIN, &watcher);
  EXPECT_EQ(twice.code(), StatusCode::kUnavailable);
  EXPECT_THAT(twice.message(), HasSubstr("File exists"));
  EXPECT_THAT(twice.message(), HasSubstr(std::to_string(pair.fds[0])));
  loop.RemoveFd(pair.fds[0]);

  const int closed = dup(pair.fds[1]);
  close(closed);
  Status closed_status = loop.AddFd(closed, EPOLLIN, &watcher);
  EXPECT_EQ(closed_status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(closed_status.message(), HasSubstr("Bad file descriptor"));
  EXPECT_EQ(loop.ModifyFd(closed, EPOLLIN, &watcher).code(),
            StatusCode::kUnavailable);
}

// Both descriptors are ready in the first epoll_wait. Whichever callback runs
// first removes the other one, whose already-reported event must be dropped
// (its watcher might have been destroyed).
TEST(EventLoopTest, RemoveFdFromACallbackDropsItsPendingEvent) {
  EventLoop loop;
  SocketPair first, second;
  int calls = 0;
  FunctionWatcher watcher([&](uint32_t) {
    ++calls;
    loop.RemoveFd(first.fds[0]);
    loop.RemoveFd(second.fds[0]);
  });
  ASSERT_EQ(write(first.fds[1], "a", 1), 1);
  ASSERT_EQ(write(second.fds[1], "b", 1), 1);
  ASSERT_TRUE(loop.AddFd(first.fds[0], EPOLLIN, &watcher).ok());
  ASSERT_TRUE(loop.AddFd(second.fds[0], EPOLLIN, &watcher).ok());
  ASSERT_TRUE(loop.Start("remove-fd").ok());
  RunOnLoop(loop, [] {});
  loop.Stop();
  EXPECT_EQ(calls, 1);
}

// As above, but the removed descriptor is closed and its number reused for a
// new registration within the same batch: the stale event must not reach
// the new watcher.
TEST(EventLoopTest, StaleEventDoesNotReachANewWatcherOfTheSameFdNumber) {
  EventLoop loop;
  SocketPair first, second;
  SocketPair idle;  // Never readable.
  int old_calls = 0;
  int new_calls = 0;
  std::vector<int> reused_fds;
  FunctionWatcher new_watcher([&](uint32_t) { ++new_calls; });
  FunctionWatcher old_watcher([&](uint32_t) {
    if (++old_calls > 1) return;
    // Remove and close whichever of the two has not run yet.
    for (int* fd : {&first.fds[0], &second.fds[0]}) {
      loop.RemoveFd(*fd);
      close(*fd);
      *fd = -1;
    }
    // dup() takes the lowest free numbers: the two just closed.
    for (int i = 0; i < 2; ++i) {
      reused_fds.push_back(dup(idle.fds[0]));
      ASSERT_TRUE(loop.AddFd(reused_fds.back(), EPOLLIN, &new_watcher).ok());
    }
  });
  ASSERT_EQ(write(first.fds[1], "a", 1), 1);
  ASSERT_EQ(write(second.fds[1], "b", 1), 1);
  const int first_fd = first.fds[0];
  const int second_fd = second.fds[0];
  ASSERT_TRUE(loop.AddFd(first.fds[0], EPOLLIN, &old_watcher).ok());
  ASSERT_TRUE(loop.AddFd(second.fds[0], EPOLLIN, &old_watcher).ok());
  ASSERT_TRUE(loop.Start("reuse-fd").ok());
  RunOnLoop(loop, [] {});
  loop.Stop();
  EXPECT_EQ(old_calls, 1);
  EXPECT_EQ(new_calls, 0);
  for (int fd : reused_fds) close(fd);
  // Only meaningful if the numbers were indeed reused.
  EXPECT_THAT(reused_fds, UnorderedElementsAre(first_fd, second_fd));
}

// Everything is ready before Start(), so it all happens in the first
// iteration: descriptors, then timers, then posted tasks, then the
// end-of-iteration task, requested four times but run once.
TEST(EventLoopTest, EndOfIterationRunsAfterFdsTimersAndPostedTasks) {
  EventLoop loop;
  std::vector<std::string> log;
  Latch done;
  FunctionTask end([&] {
    log.push_back("end");
    done.Notify();
  });
  SocketPair first, second;
  auto on_ready = [&](int fd) {
    log.push_back("fd");
    ReadAll(fd);
    loop.RemoveFd(fd);
    loop.RunAtEndOfIteration(&end);
  };
  FunctionWatcher first_watcher([&](uint32_t) { on_ready(first.fds[0]); });
  FunctionWatcher second_watcher([&](uint32_t) { on_ready(second.fds[0]); });
  FunctionWatcher replaced_watcher(
      [&](uint32_t) { log.push_back("replaced"); });
  FunctionTimer timer([&] {
    log.push_back("timer");
    loop.RunAtEndOfIteration(&end);
  });
  FunctionTask posted([&] {
    log.push_back("posted");
    loop.RunAtEndOfIteration(&end);
  });
  ASSERT_EQ(write(first.fds[1], "a", 1), 1);
  ASSERT_EQ(write(second.fds[1], "b", 1), 1);
  ASSERT_TRUE(loop.AddFd(first.fds[0], EPOLLIN, &replaced_watcher).ok());
  ASSERT_TRUE(loop.ModifyFd(first.fds[0], EPOLLIN, &first_watcher).ok());
  ASSERT_TRUE(loop.AddFd(second.fds[0], EPOLLIN, &second_watcher).ok());
  loop.Schedule(&timer, MonotonicTime::InfinitePast());
  loop.Post(&posted);
  ASSERT_TRUE(loop.Start("end-of-iteration").ok());
  ASSERT_TRUE(done.Wait());
  loop.Stop();
  EXPECT_THAT(log, ElementsAre("fd", "fd", "timer", "posted", "end"));
}

// Documented choice: a request made while the end-of-iteration tasks run
// (even by the running task itself) runs at the end of the next iteration,
// after that iteration's posted tasks.
TEST(EventLoopTest, EndOfIterationRequestedDuringThatPhaseRunsNextIteration) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("end-next").ok());
  std::vector<std::string> log;
  Latch done;
  FunctionTask posted([&] { log.push_back("posted"); });
  FunctionTask* self = nullptr;
  FunctionTask end([&] {
    if (log.empty()) {
      log.push_back("end1");
      loop.Post(&posted);
      loop.RunAtEndOfIteration(self);
    } else {
      log.push_back("end2");
      done.Notify();
    }
  });
  self = &end;
  loop.Post([&] { loop.RunAtEndOfIteration(&end); });
  ASSERT_TRUE(done.Wait());
  loop.Stop();
  EXPECT_THAT(log, ElementsAre("end1", "posted", "end2"));
}

TEST(EventLoopTest, CancelEndOfIterationWithdrawsTheRequest) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("end-cancel").ok());
  std::vector<std::string> log;
  FunctionTask victim([&] { log.push_back("victim"); });
  FunctionTask killer([&] {
    log.push_back("killer");
    loop.CancelEndOfIteration(&victim);
  });
  FunctionTask withdrawn([&] { log.push_back("withdrawn"); });
  RunOnLoop(loop, [&] {
    loop.RunAtEndOfIteration(&withdrawn);
    loop.RunAtEndOfIteration(&killer);
    loop.RunAtEndOfIteration(&victim);
    loop.CancelEndOfIteration(&withdrawn);
    loop.CancelEndOfIteration(&withdrawn);  // No longer requested: no-op.
  });
  RunOnLoop(loop, [&] { loop.RunAtEndOfIteration(&victim); });
  loop.Stop();
  EXPECT_THAT(log, ElementsAre("killer", "victim"));
}

TEST(EventLoopTest, StopFromInsideATaskEndsTheLoopAfterQueuedWork) {
  EventLoop loop;
  // Signalled by a thread_local's destructor: the loop thread has exited
  // without anyone else calling Stop().
  static Latch* thread_exited;
  Latch exited;
  thread_exited = &exited;
  struct ExitWatch {
    ~ExitWatch() { thread_exited->Notify(); }
  };
  std::vector<std::string> log;
  FunctionTask late([&] { log.push_back("posted after stop"); });
  FunctionTask end([&] { log.push_back("end of iteration"); });
  loop.Post([&] {
    static thread_local ExitWatch watch;
    (void)watch;
    loop.Stop();  // Must return at once: the loop thread cannot join itself.
    log.push_back("stopper");
    loop.Post(&late);
    loop.RunAtEndOfIteration(&end);
  });
  ASSERT_TRUE(loop.Start("stop-inside").ok());
  ASSERT_TRUE(exited.Wait());
  loop.Stop();  // Joins.
  // The current iteration finishes (its end-of-iteration task included), then
  // the task queued for the next one still runs before the thread exits.
  EXPECT_THAT(log,
              ElementsAre("stopper", "end of iteration", "posted after stop"));
}

// Notifies `latch` when destroyed.
class RaisesOnDestruction {
 public:
  explicit RaisesOnDestruction(Latch* latch) : latch_(latch) {}
  ~RaisesOnDestruction() { latch_->Notify(); }

 private:
  Latch* const latch_;
};

TEST(EventLoopTest, DestructorStopsJoinsAndRunsQueuedTasks) {
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  Latch first_running;
  Latch destroying;
  bool destroyed_while_running = false;
  {
    EventLoop loop;
    ASSERT_TRUE(loop.Start("destructor").ok());
    // Runs until the loop's destruction has begun.
    loop.Post([&] {
      first_running.Notify();
      destroyed_while_running = destroying.Wait();
      runs.fetch_add(1);
    });
    ASSERT_TRUE(first_running.Wait());
    // Queued behind the running task when the destructor starts.
    loop.Post([&] {
      ran_on = std::this_thread::get_id();
      runs.fetch_add(1);
    });
    // Destroyed first, right before `loop`.
    RaisesOnDestruction about_to_destroy_loop(&destroying);
  }
  EXPECT_TRUE(destroyed_while_running);
  EXPECT_EQ(runs.load(), 2);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(EventLoopTest, TasksPostedAfterTheThreadExitedAreFreedNotRun) {
  bool ran = false;
  {
    EventLoop loop;
    ASSERT_TRUE(loop.Start("late-post").ok());
    loop.Stop();
    loop.Stop();  // Idempotent.
    // Owns heap memory: LeakSanitizer reports it unless the loop frees it.
    loop.Post([&ran, owned = std::make_unique<int>(7)] { ran = *owned == 7; });
  }
  EXPECT_FALSE(ran);
}

TEST(EventLoopTest, StopBeforeStartRunsQueuedTasksAndExits) {
  EventLoop loop;
  loop.Stop();
  int runs = 0;
  FunctionTask task([&runs] { ++runs; });
  loop.Post(&task);
  ASSERT_TRUE(loop.Start("stopped-early").ok());
  loop.Stop();
  EXPECT_EQ(runs, 1);
}

TEST(EventLoopTest, StartNamesTheThreadAndRejectsASecondStart) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("a-very-long-event-loop-name").ok());
  char name[64] = {};
  RunOnLoop(loop,
            [&] { pthread_getname_np(pthread_self(), name, sizeof(name)); });
  EXPECT_STREQ(name, "a-very-long-eve");
  Status again = loop.Start("again");
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
}

TEST(EventLoopTest, StartPinsToAnAllowedCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  EventLoop loop;
  ASSERT_TRUE(loop.Start("pinned", cpu).ok());
  cpu_set_t pinned;
  CPU_ZERO(&pinned);
  RunOnLoop(loop, [&] {
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(pinned), &pinned),
              0);
  });
  EXPECT_EQ(CPU_COUNT(&pinned), 1);
  EXPECT_TRUE(CPU_ISSET(cpu, &pinned));
}

TEST(EventLoopTest, StartFailsForACpuItCannotPinTo) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpu = CPU_SETSIZE - 1;
  while (cpu >= 0 && CPU_ISSET(cpu, &allowed)) --cpu;
  if (cpu < 0) GTEST_SKIP() << "every CPU is allowed";
  {
    EventLoop loop;
    Status status = loop.Start("unpinnable", cpu);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr("to CPU " + std::to_string(cpu) + ": "));
  }
  EventLoop loop;
  Status status = loop.Start("too-big", CPU_SETSIZE);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

// Longer than any test: a poll with this budget ends only on work or on a
// timer's deadline.
constexpr absl::Duration kEndlessBusyPoll = absl::Hours(1);

TEST(EventLoopBusyPollTest, OffByDefault) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("no-busy-poll").ok());
  Latch fired;
  FunctionTimer timer([&] { fired.Notify(); });
  RunOnLoop(loop,
            [&] { loop.Schedule(&timer, loop.Now() + absl::Milliseconds(1)); });
  ASSERT_TRUE(fired.Wait());
  RunOnLoop(loop, [] {});
  loop.Stop();
  const EventLoop::BusyPollCounts counts = loop.busy_poll_counts();
  EXPECT_EQ(counts.found_work, 0u);
  EXPECT_EQ(counts.ended_idle, 0u);
}

// With a budget no test outlives, the loop never blocks (no poll ends
// idle): every task posted from another thread is found by polling, with no
// eventfd write to wake it.
TEST(EventLoopBusyPollTest, PostedTasksAreFoundWhilePolling) {
  EventLoop loop;
  loop.set_busy_poll(kEndlessBusyPoll);
  ASSERT_TRUE(loop.Start("busy-post").ok());
  std::atomic<int> runs{0};
  FunctionTask task([&runs] { runs.fetch_add(1); });
  // A post may land before the loop has started its poll (then no poll is
  // needed to find it); keep going until one has been found by polling.
  const absl::Time deadline = absl::Now() + kHangTimeout;
  int posted = 0;
  while (loop.busy_poll_counts().found_work == 0 && absl::Now() < deadline) {
    const int before = runs.load();
    loop.Post(&task);
    ++posted;
    while (runs.load() == before && absl::Now() < deadline) {
      std::this_thread::yield();
    }
  }
  EXPECT_EQ(runs.load(), posted);
  EXPECT_GE(loop.busy_poll_counts().found_work, 1u);
  EXPECT_EQ(loop.busy_poll_counts().ended_idle, 0u);
  loop.Stop();  // Found by the poll too: it does not wait out the budget.
  EXPECT_EQ(loop.busy_poll_counts().ended_idle, 0u);
}

TEST(EventLoopBusyPollTest, FdReadinessIsFoundWhilePolling) {
  EventLoop loop;
  loop.set_busy_poll(kEndlessBusyPoll);
  ASSERT_TRUE(loop.Start("busy-fd").ok());
  SocketPair pair;
  Latch ready;
  std::string received;
  uint64_t found_at_callback = 0;
  FunctionWatcher watcher([&](uint32_t events) {
    if (events & EPOLLIN) received += ReadAll(pair.fds[0]);
    found_at_callback = loop.busy_poll_counts().found_work;
    ready.Notify();
  });
  RunOnLoop(loop, [&] {
    EXPECT_TRUE(loop.AddFd(pair.fds[0], EPOLLIN, &watcher).ok());
  });
  // Nothing else is queued: the loop's next step 1 polls, and the poll that
  // finds the data counts after this read.
  const uint64_t found_before = loop.busy_poll_counts().found_work;
  ASSERT_EQ(write(pair.fds[1], "spin", 4), 4);
  ASSERT_TRUE(ready.Wait());
  RunOnLoop(loop, [&] { loop.RemoveFd(pair.fds[0]); });
  loop.Stop();
  EXPECT_EQ(received, "spin");
  EXPECT_GT(found_at_callback, found_before);
  EXPECT_EQ(loop.busy_poll_counts().ended_idle, 0u);
}

// The poll stops at the earliest timer's deadline, however long its budget:
// the timer fires on time, after a poll that ended idle.
TEST(EventLoopBusyPollTest, ATimerEndsThePollAtItsDeadline) {
  EventLoop loop;
  loop.set_busy_poll(kEndlessBusyPoll);
  ASSERT_TRUE(loop.Start("busy-timer").ok());
  Latch fired;
  MonotonicTime deadline;
  MonotonicTime fired_at;
  FunctionTimer timer([&] {
    fired_at = MonotonicTime::Now();
    fired.Notify();
  });
  RunOnLoop(loop, [&] {
    deadline = loop.Now() + absl::Milliseconds(20);
    loop.Schedule(&timer, deadline);
  });
  ASSERT_TRUE(fired.Wait());
  loop.Stop();
  EXPECT_GE(fired_at, deadline);
  EXPECT_GE(loop.busy_poll_counts().ended_idle, 1u);
}

// A short budget: the loop alternates between polling and blocking, and a
// post arriving in either state (or between them) runs. A lost wake-up
// would hang here.
TEST(EventLoopBusyPollTest, PingPongAcrossPollingAndSleepingNeverLosesAWakeUp) {
  EventLoop loop;
  loop.set_busy_poll(absl::Microseconds(50));
  ASSERT_TRUE(loop.Start("busy-ping-pong").ok());
  std::mutex mu;
  std::condition_variable cv;
  int completed = 0;
  FunctionTask task([&] {
    std::lock_guard<std::mutex> lock(mu);
    ++completed;
    cv.notify_all();
  });
  std::mt19937 random(7);
  std::uniform_int_distribution<int> pause_us(0, 120);
  for (int i = 1; i <= 2000; ++i) {
    // Posted before, during or after the loop's 50 us poll.
    const absl::Time until = absl::Now() + absl::Microseconds(pause_us(random));
    while (absl::Now() < until) std::this_thread::yield();
    loop.Post(&task);
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, absl::ToChronoSeconds(kHangTimeout),
                            [&] { return completed == i; }))
        << "task " << i << " never ran";
  }
  loop.Stop();
  const EventLoop::BusyPollCounts counts = loop.busy_poll_counts();
  EXPECT_GE(counts.found_work + counts.ended_idle, 1u);
}

// Once a poll has ended idle the loop blocks in epoll_wait; a post from
// another thread wakes it through the eventfd.
TEST(EventLoopBusyPollTest, AfterAnIdlePollAPostWakesTheSleepingLoop) {
  EventLoop loop;
  loop.set_busy_poll(absl::Microseconds(100));
  ASSERT_TRUE(loop.Start("busy-sleep").ok());
  const absl::Time deadline = absl::Now() + kHangTimeout;
  while (loop.busy_poll_counts().ended_idle == 0 && absl::Now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(loop.busy_poll_counts().ended_idle, 1u)
      << "with nothing to do the loop polls once, then blocks";
  RunOnLoop(loop, [] {});
  // Woken by the eventfd in the blocking wait, not found by a poll.
  EXPECT_EQ(loop.busy_poll_counts().found_work, 0u);
  loop.Stop();
}

TEST(EventLoopBusyPollTest, EveryTaskFromManyThreadsRunsOnce) {
  constexpr int kThreads = 4;
  constexpr int kTasksPerThread = 5000;
  struct CountingTask : Task {
    void Run() override { ++runs; }
    int runs = 0;
  };
  EventLoop loop;
  loop.set_busy_poll(absl::Microseconds(20));
  std::vector<CountingTask> tasks(kThreads * kTasksPerThread);
  ASSERT_TRUE(loop.Start("busy-posters").ok());
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&loop, &tasks, t] {
      for (int i = 0; i < kTasksPerThread; ++i) {
        loop.Post(&tasks[t * kTasksPerThread + i]);
        if (i % 64 == 0) std::this_thread::yield();
      }
    });
  }
  for (std::thread& poster : posters) poster.join();
  loop.Stop();
  for (size_t i = 0; i < tasks.size(); ++i) {
    ASSERT_EQ(tasks[i].runs, 1) << "task " << i;
  }
}

}  // namespace
}  // namespace h2rpc::transport::io
