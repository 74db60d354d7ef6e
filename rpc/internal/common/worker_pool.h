#ifndef H2RPC_RPC_INTERNAL_COMMON_WORKER_POOL_H_
#define H2RPC_RPC_INTERNAL_COMMON_WORKER_POOL_H_

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <climits>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/status.h"

namespace h2rpc::internal {

// Work for a WorkerPool thread, embedded in the object it belongs to, so
// submitting it never allocates.
class WorkerTask {
 public:
  // The work itself, on a pool thread; may block.
  virtual void Run() = 0;
  // Runs right after Run(), on the same thread, once the pool counts that
  // thread as idle again: publishes the outcome (e.g. posts a completion to
  // an event loop). Whatever that outcome lets happen next, such as the
  // client's next call, finds this thread available. The pool does not
  // touch the task afterwards.
  virtual void Done() = 0;

 protected:
  ~WorkerTask() = default;

 private:
  friend class WorkerPool;
  // Link in the pool's list of handed-out tasks not yet taken up.
  WorkerTask* next_handed_out_ = nullptr;
};

// Threads that run blocking work (the server's synchronous handlers, the
// client's call credentials plugins), so it never stalls an event loop. The
// refusal messages name the server's option (max_sync_threads). A task is
// accepted only while an idle thread is free for it (each accepted task not yet
// taken up has an idle thread of its own), or with a new thread while there are
// fewer than `max_threads`; otherwise it is refused. So a task never waits for
// another task to finish, only for an idle thread to take it up, once the
// threads it needs are woken (at once by TrySubmit(); when the caller chooses,
// after TrySubmitDeferred(): until then, an awake thread may take it after
// finishing its own task, which is the point of deferring). Threads beyond
// `min_threads` exit after `idle_time` without work; the others sleep until
// woken. The pool joins every thread that exits (one exiting thread joins the
// one before it, the destructor joins the last), so none outlives the pool.
//
// Hand-off: accepted tasks go on a list that idle threads take from, first
// in first out. A thread that finishes a task takes the next one from the
// list before sleeping; sleeping threads wait on one futex word, and are
// woken (one system call for as many as the list needs) only for tasks that
// no awake idle thread will take. Which sleeping thread wakes is the
// kernel's choice (the one asleep longest, usually). Once the wake-ups a
// task needs are issued, it cannot be left behind: every thread counted on
// to take it (awake and idle, or asleep and being woken) looks at the list
// before it sleeps again, and each thread whose wait ends, however it ends,
// uses up one wake-up of the count (details at wakes_in_flight_).
//
// CPU: a thread that finishes a task and may run on more than one CPU polls
// the list for up to 20 microseconds before sleeping, so a steady stream of
// tasks is handed over without wake-ups: up to 20 us of CPU per task that
// no next task follows, none while the pool stays idle (a thread polls once
// per task it ran, then sleeps). A thread confined to a single CPU sleeps at
// once (polling could only delay the threads it waits for). Every thread
// runs on the CPUs the constructing thread may run on, whichever thread's
// submission starts it (a submitter pinned to one CPU does not pin the
// threads it starts).
//
// Allocation: starting a thread allocates (its stack); handing a task over
// does not.
class WorkerPool {
 public:
  // Starts `min_threads` threads (as many as the system allows). Requires
  // 0 <= min_threads <= max_threads and max_threads >= 1.
  WorkerPool(int min_threads, int max_threads, absl::Duration idle_time);
  // Waits for the tasks handed out to finish (Run and Done), then joins every
  // thread. No TrySubmit() or TrySubmitDeferred() may run concurrently or
  // afterwards.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Any thread. Hands non-null `task` to a thread, which runs it once an
  // idle thread takes it up (at once if one is awake, else after a wake-up):
  // OK. When all max_threads threads are busy or spoken for,
  // RESOURCE_EXHAUSTED ("all 256 synchronous handler threads are busy
  // (ServerOptions::max_sync_threads)"); when no thread can be started,
  // RESOURCE_EXHAUSTED naming the system error. `task` is not run then.
  // `task` must stay valid until its Done() returns.
  Status TrySubmit(WorkerTask* task);
  // TrySubmit() without waking a sleeping thread: the caller must then call
  // WakeForHandedOut() (e.g. once per event loop iteration), so that one
  // system call wakes the threads for several tasks and the submitting
  // thread is not preempted by a woken thread between tasks. Until then, the
  // task waits only if no idle thread is awake.
  Status TrySubmitDeferred(WorkerTask* task);
  // Any thread (after its own TrySubmitDeferred() calls). Wakes up to
  // `max_wakes` of the sleeping threads the handed-out tasks need (beyond
  // the idle threads awake or being woken); returns how many more they need.
  // Cheap when none are needed.
  int WakeForHandedOut(int max_wakes = INT_MAX);

  // Threads running or idle (those that exited no longer count). Any thread.
  int threads();
  // Of those, the ones not running a task. Any thread.
  int idle_threads();

 private:
  static void* ThreadMain(void* start);
  // A thread's life: runs `first_task` (if not null), then takes handed-out
  // tasks until idle too long or stopping.
  void Work(WorkerTask* first_task);
  // Starts a thread already counted in threads_ (and, without `task`, in
  // idle_) that runs `task` first; false (counts taken back, `error` set) if
  // the system refuses.
  bool StartThread(WorkerTask* task, int* error);
  WorkerTask* TakeHandedOut() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int min_threads_;
  const int max_threads_;
  const absl::Duration idle_time_;
  // The CPUs of the constructing thread, given to every thread (if
  // has_cpus_: the system told them).
  cpu_set_t cpus_;
  const bool has_cpus_;
  // Whether threads poll for a task before sleeping: they may run on more
  // than one CPU.
  const bool poll_;

  Mutex mu_;
  // Threads started and not yet exited (including any being started).
  int threads_ ABSL_GUARDED_BY(mu_) = 0;
  // Of those, the ones not running a task (awake, asleep or being woken).
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  // Of the idle, the ones that counted themselves asleep and have not yet
  // counted themselves awake again.
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
  // Wake-ups issued and not yet used up. Each thread whose wait ends, for
  // any reason, uses up one (none if there is none left) as it counts
  // itself awake, and then looks at the list before sleeping again; so
  // whoever uses up a wake-up takes a task if one is waiting. The count
  // never exceeds the sleepers whose wait has ended or will end without a
  // further wake-up: a wake-up of n bumps wake_sequence_ (so every sleeper
  // that has not yet entered its wait returns at once) and wakes n of those
  // in the kernel (or all, if fewer), and n <= sleepers_ minus the wake-ups
  // already in flight. This holds whichever waiters the kernel picks;
  // counting a wake-up as used only by a sleeper that saw the sequence move
  // on would also need the kernel to pick those that began their wait
  // before the bump (it orders waiters by priority first).
  int wakes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Tasks accepted and not yet taken up, first in first out. Never more than
  // idle_.
  WorkerTask* handed_out_head_ ABSL_GUARDED_BY(mu_) = nullptr;
  WorkerTask* handed_out_tail_ ABSL_GUARDED_BY(mu_) = nullptr;
  int handed_out_count_ ABSL_GUARDED_BY(mu_) = 0;
  // handed_out_count_, also readable without mu_ (by polling threads).
  std::atomic<int> handed_out_hint_{0};
  // Futex word that sleeping threads wait on; bumped (under mu_) before each
  // wake-up.
  std::atomic<uint32_t> wake_sequence_{0};
  // The last thread that exited, not yet joined (if has_exited_thread_).
  pthread_t exited_thread_ ABSL_GUARDED_BY(mu_);
  bool has_exited_thread_ ABSL_GUARDED_BY(mu_) = false;
  // Set once, under mu_, by the destructor.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  CondVar all_exited_;  // threads_ reached 0 while stopping_
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_WORKER_POOL_H_
