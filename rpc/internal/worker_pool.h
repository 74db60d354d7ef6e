#ifndef H2RPC_RPC_INTERNAL_WORKER_POOL_H_
#define H2RPC_RPC_INTERNAL_WORKER_POOL_H_

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "rpc/status.h"
#include "transport/io/mutex.h"

namespace h2rpc::internal {

using transport::io::CondVar;
using transport::io::Mutex;
using transport::io::MutexLock;

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
};

// Threads that run synchronous handlers, so a blocking handler never stalls
// an event loop. A task goes straight to an idle thread, or to a new thread
// while there are fewer than `max_threads`, or is refused: it never waits in
// a queue. Threads beyond `min_threads` exit after `idle_time` without work;
// the pool joins every thread that exits (one exiting thread joins the one
// before it, the destructor joins the last), so none outlives the pool.
//
// Allocation: starting a thread allocates (its stack and bookkeeping);
// handing a task to an idle thread does not.
class WorkerPool {
 public:
  // Starts `min_threads` threads (as many as the system allows). Requires
  // 0 <= min_threads <= max_threads and max_threads >= 1.
  WorkerPool(int min_threads, int max_threads, absl::Duration idle_time);
  // Waits for the tasks handed out to finish (Run and Done), then joins every
  // thread. No TrySubmit() may run concurrently or afterwards.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Any thread. Hands non-null `task` to a thread, which runs it at once
  // (once the previous task's Done() returns, if it is still in it): OK. When
  // all max_threads threads are busy, RESOURCE_EXHAUSTED ("all 256
  // synchronous handler threads are busy
  // (ServerOptions::max_sync_threads)"); when no thread can be started,
  // RESOURCE_EXHAUSTED naming the system error. `task` is not run then.
  // `task` must stay valid until its Done() returns.
  Status TrySubmit(WorkerTask* task);

  // Threads running or idle (those that exited no longer count). Any thread.
  int threads();
  // Of those, the ones waiting for a task. Any thread.
  int idle_threads();

 private:
  struct Worker;

  static void* ThreadMain(void* worker);
  void Work(Worker* self);
  // Starts a thread running `worker`; false (and `worker` deleted) if the
  // system refuses.
  bool StartThread(Worker* worker, int* error);
  // Waits for an exited thread to end and frees it.
  static void Join(Worker* worker);
  void PushIdle(Worker* worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveIdle(Worker* worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int min_threads_;
  const int max_threads_;
  const absl::Duration idle_time_;

  Mutex mu_;
  // Threads started and not yet exited (including any being started).
  int threads_ ABSL_GUARDED_BY(mu_) = 0;
  int idle_count_ ABSL_GUARDED_BY(mu_) = 0;
  // Idle threads, most recently idle first (they are reused first, so the
  // others reach the idle time and exit).
  Worker* idle_head_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The last thread that exited, not yet joined.
  Worker* exited_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  CondVar all_exited_;  // threads_ reached 0 while stopping_
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_WORKER_POOL_H_
