#ifndef H2RPC_TRANSPORT_IO_EVENT_LOOP_H_
#define H2RPC_TRANSPORT_IO_EVENT_LOOP_H_

#include <sys/epoll.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/status.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/scheduler.h"

namespace h2rpc::transport::io {

// Reacts to readiness of one file descriptor registered with AddFd().
class FdWatcher {
 public:
  // Runs on the loop thread. `events` is the epoll mask (EPOLLIN, EPOLLOUT,
  // EPOLLERR, EPOLLHUP, EPOLLRDHUP).
  virtual void OnFdReady(uint32_t events) = 0;

 protected:
  ~FdWatcher() = default;
};

// One thread running epoll: file-descriptor readiness, timers, and work
// posted from other threads (queue + eventfd wake-up). Everything that
// touches a connection runs on its loop's thread.
//
// Each iteration of the loop:
//   1. waits in epoll_wait: not at all if posted or end-of-iteration tasks
//      are pending or Stop() was called, otherwise until the earliest timer
//      (rounded up to the next millisecond) or forever if there is none
//      (with set_busy_poll(), after polling without blocking first);
//   2. sets Now() from the monotonic clock;
//   3. calls OnFdReady() for every ready descriptor;
//   4. fires the timers whose deadline is at or before Now(), earliest first
//      (equal deadlines in scheduling order);
//   5. runs the tasks posted so far, in posting order (tasks posted while they
//      run, even by themselves, run in the next iteration);
//   6. runs the RunAtEndOfIteration() tasks, in request order (tasks
//      requested while they run, even by themselves, run at the end of the
//      next iteration, which does not wait in epoll);
//   7. exits if Stop() was called.
//
// Thread safety: Post(), Stop(), InLoopThread() and busy_poll_counts() may
// be called from any thread; every other method only from the loop thread
// (or before Start()).
//
// The loop thread is a capability for Clang's thread-safety analysis
// (--config=tsa): a member only the loop thread may touch is
// ABSL_GUARDED_BY(loop), a function only it may run
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop), and code the loop thread runs
// without the analysis knowing it (a posted task, a transport callback, a
// descriptor or timer handler) starts with loop.AssertInLoopThread(), which
// a debug build checks.
//
// Under ThreadSanitizer: the loop synchronizes with Mutex (a
// std::mutex underneath) and atomics, which TSan sees; Debian's libabsl is
// not built with TSan, so absl::Mutex would produce false race reports.
class ABSL_LOCKABLE EventLoop final : public Scheduler {
 public:
  // Creates the epoll instance and the wake-up eventfd; a failure is
  // reported by Start() (and AddFd()).
  EventLoop();
  // Stop()s and joins. Must not run on the loop thread.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Starts the loop thread, named `name` (truncated to 15 characters, the
  // kernel's limit). `cpu` >= 0 pins it to that CPU. Call at most once.
  // Returns once the thread runs; UNAVAILABLE if epoll or the eventfd could
  // not be created, INVALID_ARGUMENT if the thread cannot be pinned to `cpu`
  // (then no thread is left running).
  Status Start(absl::string_view name, int cpu = -1);
  // Owner thread, before Start() only. Bounded busy-polling, for latency
  // at the price of CPU: whenever step 1 would block, the loop first polls
  // without blocking (epoll_wait with timeout 0, and the posted-task queue,
  // and Stop()) for up to `duration` on the monotonic clock, and never past
  // the earliest timer's deadline. Work found ends the poll and the
  // iteration goes on at step 2 without blocking; otherwise the loop then
  // blocks as step 1 says. While it polls, the loop counts as awake: Post()
  // and Stop() make no eventfd write. The loop's thread keeps its core busy
  // for up to `duration` after each moment it runs out of work. Zero or
  // negative (the default): never polls.
  void set_busy_poll(absl::Duration duration) { busy_poll_ = duration; }

  // What the busy-polling of set_busy_poll() has done so far: polls that
  // found work (a ready descriptor, a posted task or Stop()), and polls that
  // ended without (the budget spent or the earliest timer due; the loop then
  // went on to block). Any thread; each count only grows.
  struct BusyPollCounts {
    uint64_t found_work = 0;
    uint64_t ended_idle = 0;
  };
  BusyPollCounts busy_poll_counts() const;

  // Asks the loop to exit after the current iteration and joins it (unless
  // called from the loop thread itself, which only asks). Tasks still queued
  // (and tasks they post or request at end of iteration) are run before the
  // thread exits; descriptors and timers are no longer serviced. Tasks posted
  // after the thread has exited never run (Post(AnyInvocable) ones are
  // destroyed by ~EventLoop). Idempotent; may be called before Start().
  void Stop();

  // True on the loop thread while it runs.
  bool InLoopThread() const;
  // The loop whose thread calls (while it runs), or null on any other
  // thread. Any thread; a thread-local read.
  static EventLoop* Current();
  // Tells the thread-safety analysis that the caller runs on the loop
  // thread (see the class comment). A debug build aborts with a message
  // when the loop thread runs and the caller is another thread; before
  // Start() and after the thread has exited, the owner may call it. An
  // optimized build compiles it to nothing.
  void AssertInLoopThread() const ABSL_ASSERT_EXCLUSIVE_LOCK() {
#ifndef NDEBUG
    CheckInLoopThread();
#endif
  }

  // Queues `task` to run on the loop thread; wakes the loop (one eventfd
  // write, skipped when the loop is known to be awake or a wake-up is
  // already on its way). Never allocates. A task already queued is not
  // queued twice. On the loop thread itself, it takes no lock and makes no
  // wake-up while no other thread's task is queued.
  void Post(Task* task);
  // Convenience for cold paths; allocates.
  void Post(absl::AnyInvocable<void()> fn);

  // Loop thread only. Registers `fd` for `events` (epoll mask; level- or
  // edge-triggered as the caller asks). `watcher` must outlive the
  // registration. UNAVAILABLE with the errno text if epoll_ctl fails.
  Status AddFd(int fd, uint32_t events, FdWatcher* watcher);
  // Loop thread only. Changes the mask and watcher of a registered `fd`.
  // INVALID_ARGUMENT if `fd` was never added, UNAVAILABLE with the errno
  // text if epoll_ctl fails.
  Status ModifyFd(int fd, uint32_t events, FdWatcher* watcher);
  // Loop thread only. Unregisters `fd`; call it before closing `fd`. Events
  // of `fd` already reported by the current epoll_wait but not yet
  // delivered are dropped, so the watcher may be destroyed right after.
  void RemoveFd(int fd);

  // Loop thread only. (Re)schedules `timer` for `deadline` (monotonic clock:
  // a step of the wall clock neither fires nor delays it). A deadline
  // already passed fires in the next timer phase: this iteration's if called
  // from an fd callback, else the next iteration's. O(log n).
  void Schedule(Timer* timer, MonotonicTime deadline) override;
  // Loop thread only. Unschedules `timer`; cancelling an unscheduled timer
  // is a no-op. O(log n).
  void Cancel(Timer* timer) override;

  // Loop thread only. Runs `task` once after the current iteration has
  // handled every ready descriptor, timer and posted task: connections flush
  // their coalesced writes here, one send per connection per iteration.
  // Requesting a task already requested is a no-op. Never allocates.
  void RunAtEndOfIteration(Task* task);
  // Loop thread only. Asks the descriptor handler in progress to return
  // after the input in hand, so that this iteration's posted and
  // end-of-iteration tasks run before more input is read: work was handed
  // to other threads (calls for worker threads, woken at the end of the
  // iteration) that would otherwise wait for every readable byte to be
  // read first. Lasts until the next iteration.
  void RequestYield() { yield_requested_ = true; }
  // Loop thread only. Whether RequestYield() was called in this iteration.
  bool yield_requested() const { return yield_requested_; }
  // Loop thread only. Read buffers shared by the loop's connections
  // (SocketDriver), so that an idle connection holds none: kReadBufferSize
  // bytes for ordinary reads, kLargeReadBufferSize for reading the body of a
  // large message in fewer, larger reads. Their contents last only until the
  // descriptor handler using them returns. Each is allocated on first use,
  // once.
  static constexpr size_t kReadBufferSize = 32 * 1024;
  static constexpr size_t kLargeReadBufferSize = 256 * 1024;
  char* read_buffer();
  char* large_read_buffer();
  // Loop thread only. Withdraws a RunAtEndOfIteration() request (no-op if
  // there is none): call it before destroying an object whose task may still
  // be pending, e.g. a connection closed from another connection's flush.
  void CancelEndOfIteration(Task* task);

  // The monotonic time at the start of the current iteration (loop thread).
  // Timers and deadlines on the loop are computed from it; a wall-clock
  // deadline (absl::Time) is converted with MonotonicFromWall() first.
  MonotonicTime Now() const override { return now_; }

 private:
  struct StartSignal;
  struct TaskList {
    Task* head = nullptr;
    Task* tail = nullptr;
  };

  // Loop thread body.
  void Run(std::string name, int cpu, StartSignal* started);
  // Steps 1-6 of an iteration.
  void RunIteration();
  int ComputeTimeoutMs() const;
  // Step 1 with busy-polling: polls without blocking until work turns up
  // (true, with the number of ready events in events_ in `*count`) or until
  // the budget or the earliest timer's deadline is reached (false).
  bool BusyPoll(int* count);
  // Step 1's blocking wait of up to `timeout_ms`; epoll_wait's result.
  int Wait(int timeout_ms);
  void DispatchFdEvents(int count);
  void RunExpiredTimers();
  void RunPostedTasks();
  void RunEndOfIterationTasks();
  void UnlinkEndTask(Task* task);
  // Writes the eventfd if the loop may be sleeping and no wake-up is pending.
  void MaybeWake();
  void DrainWakeFd();
  // AssertInLoopThread()'s check.
  void CheckInLoopThread() const;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  Status init_status_;

  // Loop thread state (or owner state before Start()).
  MonotonicTime now_;
  std::vector<epoll_event> events_;
  // Index: file descriptor. The watcher of each registered descriptor.
  std::vector<FdWatcher*> watchers_;
  // Ready events of the current epoll_wait, for RemoveFd() to scrub.
  int ready_count_ = 0;
  TimerHeap timers_;
  // set_busy_poll(); written before the loop thread starts.
  absl::Duration busy_poll_ = absl::ZeroDuration();
  // End-of-iteration tasks: requests go to end_lists_[end_add_]; while one
  // list runs, new requests go to the other one (the next iteration).
  TaskList end_lists_[2];
  int end_add_ = 0;
  // Tasks the loop thread posted while the shared queue was empty (Post()).
  TaskList own_posted_;
  bool yield_requested_ = false;               // loop thread
  std::unique_ptr<char[]> read_buffer_;        // loop thread
  std::unique_ptr<char[]> large_read_buffer_;  // loop thread

  // Posted tasks: an intrusive FIFO.
  Mutex mu_;
  Task* posted_head_ ABSL_GUARDED_BY(mu_) = nullptr;
  Task* posted_tail_ ABSL_GUARDED_BY(mu_) = nullptr;
  // True while the posted queue may be non-empty (written under mu_).
  std::atomic<bool> has_posted_{false};
  // Set by the loop just before it may block in epoll_wait, cleared when it
  // returns. Together with has_posted_ (Dekker-style, sequentially
  // consistent) it lets Post() skip the eventfd write while the loop is
  // awake: either Post() sees the loop asleep, or the loop sees the task.
  // Clear while the loop busy-polls, which reads has_posted_ and
  // stop_requested_ itself before it may set it.
  std::atomic<bool> sleeping_{false};
  // An eventfd write has been made (or is about to be) and not yet drained.
  std::atomic<bool> wake_pending_{false};
  std::atomic<bool> stop_requested_{false};
  // busy_poll_counts(); written by the loop thread only.
  std::atomic<uint64_t> busy_polls_found_work_{0};
  std::atomic<uint64_t> busy_polls_ended_idle_{0};

  std::atomic<std::thread::id> loop_thread_id_{std::thread::id()};
  Mutex thread_mu_;
  bool started_ ABSL_GUARDED_BY(thread_mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(thread_mu_);
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_EVENT_LOOP_H_
