#ifndef H2RPC_TRANSPORT_IO_SCHEDULER_H_
#define H2RPC_TRANSPORT_IO_SCHEDULER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/io/monotonic_time.h"

namespace h2rpc::transport::io {

// Work handed to an EventLoop without allocating: embed a Task in a pooled
// object (a call, a stream) and Post() it. A Task may be queued at most once
// at a time in each of the two queues (Post() and RunAtEndOfIteration()); it
// may be queued again as soon as its Run() has started. A posted task must
// stay alive until it has run.
class Task {
 public:
  // Runs on the loop thread.
  virtual void Run() = 0;

 protected:
  ~Task() = default;

 private:
  friend class EventLoop;
  // Posted-task queue: `next_` is guarded by the loop's mutex while queued and
  // owned by the loop thread once the queue has been taken; `queued_` is set
  // by the poster and cleared by the loop thread just before Run().
  Task* next_ = nullptr;
  std::atomic<bool> queued_{false};
  // End-of-iteration queues (loop thread only): a doubly-linked list so that
  // CancelEndOfIteration() is O(1); `end_list_` is the list index or -1.
  Task* end_prev_ = nullptr;
  Task* end_next_ = nullptr;
  int8_t end_list_ = -1;
};

// A one-shot timer embedded in its owner, scheduled on a Scheduler;
// scheduling and cancelling never allocate once the scheduler's TimerHeap
// has grown to its working size. The owner must Cancel() a scheduled timer
// before destroying it.
class Timer {
 public:
  // Runs on the scheduler's thread when the deadline passes (unless cancelled).
  // The timer is no longer scheduled when this runs, so it may Schedule()
  // itself again.
  virtual void OnTimer() = 0;
  // True from Schedule() until the timer fires or is cancelled.
  bool scheduled() const { return heap_index_ != kNotScheduled; }
  // The deadline of the last Schedule() (monotonic clock).
  MonotonicTime deadline() const { return deadline_; }

 protected:
  ~Timer() = default;

 private:
  friend class TimerHeap;
  static constexpr size_t kNotScheduled = static_cast<size_t>(-1);
  MonotonicTime deadline_;
  // Breaks ties between equal deadlines (first scheduled fires first) and
  // keeps a timer re-armed from a callback for a past deadline from firing
  // again in the same iteration.
  uint64_t sequence_ = 0;
  size_t heap_index_ = kNotScheduled;
};

// Timers ordered by deadline, equal deadlines in scheduling order: the
// binary heap behind every Scheduler. Not thread-safe (its owner's thread).
class TimerHeap {
 public:
  explicit TimerHeap(size_t initial_capacity = 1024);
  // Leaves every timer still scheduled unscheduled.
  ~TimerHeap();
  TimerHeap(const TimerHeap&) = delete;
  TimerHeap& operator=(const TimerHeap&) = delete;

  // (Re)schedules `timer` for `deadline`. O(log n).
  void Schedule(Timer* timer, MonotonicTime deadline);
  // No-op for an unscheduled timer. O(log n).
  void Cancel(Timer* timer);

  bool empty() const { return timers_.empty(); }
  // The earliest deadline; InfiniteFuture when empty.
  MonotonicTime earliest() const {
    return timers_.empty() ? MonotonicTime::InfiniteFuture()
                           : timers_[0]->deadline_;
  }
  // Stamps the next Schedule(); timers scheduled from now on compare at or
  // above it. PopDue() with the value read before firing leaves timers
  // (re)scheduled by the callbacks for the next round.
  uint64_t next_sequence() const { return next_sequence_; }
  // Unschedules and returns the earliest timer due at `now` that was
  // scheduled before `sequence_limit`, or null.
  Timer* PopDue(MonotonicTime now, uint64_t sequence_limit);

 private:
  static bool Earlier(const Timer* a, const Timer* b);
  void Set(size_t index, Timer* timer);
  void SiftUp(size_t index);
  void SiftDown(size_t index);
  void Remove(size_t index);

  std::vector<Timer*> timers_;
  uint64_t next_sequence_ = 0;
};

// The clock and timers a transport component runs on: an EventLoop, or a
// fake clock in tests. Nothing that takes a Scheduler reads the real clock
// or sleeps. All methods on the scheduler's thread (an EventLoop's loop
// thread).
class Scheduler {
 public:
  // The current time on the monotonic clock (an EventLoop: the start of the
  // current iteration).
  virtual MonotonicTime Now() const = 0;
  // (Re)schedules `timer` to fire at `deadline` (OnTimer() on this
  // scheduler's thread, never from inside Schedule()).
  virtual void Schedule(Timer* timer, MonotonicTime deadline) = 0;
  // Unschedules `timer`; a no-op if it is not scheduled.
  virtual void Cancel(Timer* timer) = 0;

 protected:
  ~Scheduler() = default;
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_SCHEDULER_H_
