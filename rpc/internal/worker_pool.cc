#include "rpc/internal/worker_pool.h"

#include <pthread.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {

struct WorkerPool::Worker {
  explicit Worker(WorkerPool* pool, WorkerTask* first_task)
      : pool(pool), task(first_task) {}

  WorkerPool* const pool;
  pthread_t thread;  // written by pthread_create before the thread starts
  // The three below are guarded by pool->mu_. (Not annotated: the pool's
  // code reaches them as worker->task under its own mu_, which the analysis
  // cannot match with worker->pool->mu_.)
  // The task handed to this thread and not yet taken up.
  WorkerTask* task;
  // Links in the pool's idle list.
  Worker* idle_prev = nullptr;
  Worker* idle_next = nullptr;
  // Signalled when `task` is set or the pool stops.
  CondVar wake;
};

WorkerPool::WorkerPool(int min_threads, int max_threads,
                       absl::Duration idle_time)
    : min_threads_(min_threads),
      max_threads_(max_threads),
      idle_time_(idle_time) {
  for (int i = 0; i < min_threads_; ++i) {
    auto* worker = new Worker(this, nullptr);
    {
      MutexLock lock(&mu_);
      ++threads_;
      PushIdle(worker);
    }
    int error;
    if (!StartThread(worker, &error)) break;  // TrySubmit() tries again
  }
}

WorkerPool::~WorkerPool() {
  Worker* last;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    for (Worker* w = idle_head_; w != nullptr; w = w->idle_next) {
      w->wake.Signal();
    }
    while (threads_ > 0) all_exited_.Wait(&mu_);
    last = exited_;
    exited_ = nullptr;
  }
  // Each exited thread joined the one before it before ending.
  if (last != nullptr) Join(last);
}

Status WorkerPool::TrySubmit(WorkerTask* task) {
  {
    MutexLock lock(&mu_);
    if (Worker* worker = idle_head_; worker != nullptr && !stopping_) {
      RemoveIdle(worker);
      worker->task = task;
      worker->wake.Signal();
      return Status();
    }
    if (threads_ >= max_threads_ || stopping_) {
      return Status(StatusCode::kResourceExhausted,
                    absl::StrCat("all ", max_threads_,
                                 " synchronous handler threads are busy "
                                 "(ServerOptions::max_sync_threads)"));
    }
    ++threads_;
  }
  int error;
  if (!StartThread(new Worker(this, task), &error)) {
    return Status(StatusCode::kResourceExhausted,
                  absl::StrCat("cannot start a synchronous handler thread: ",
                               std::strerror(error)));
  }
  return Status();
}

int WorkerPool::threads() {
  MutexLock lock(&mu_);
  return threads_;
}

int WorkerPool::idle_threads() {
  MutexLock lock(&mu_);
  return idle_count_;
}

bool WorkerPool::StartThread(Worker* worker, int* error) {
  *error =
      pthread_create(&worker->thread, nullptr, &WorkerPool::ThreadMain, worker);
  if (*error == 0) return true;
  {
    MutexLock lock(&mu_);
    if (worker->task == nullptr) RemoveIdle(worker);
    --threads_;
    if (threads_ == 0) all_exited_.SignalAll();
  }
  delete worker;
  return false;
}

void* WorkerPool::ThreadMain(void* worker) {
  // First, so that allocation counters see the thread's role from the start.
  pthread_setname_np(pthread_self(), "h2rpc-worker");
  auto* self = static_cast<Worker*>(worker);
  self->pool->Work(self);
  return nullptr;
}

void WorkerPool::Work(Worker* self) {
  mu_.Lock();
  for (;;) {
    if (WorkerTask* task = self->task; task != nullptr) {
      self->task = nullptr;
      mu_.Unlock();
      task->Run();
      mu_.Lock();
      PushIdle(self);
      mu_.Unlock();
      task->Done();
      mu_.Lock();
      continue;
    }
    if (stopping_) break;
    const bool timed_out = self->wake.WaitWithTimeout(&mu_, idle_time_);
    if (timed_out && self->task == nullptr && !stopping_ &&
        threads_ > min_threads_) {
      break;
    }
  }
  // Idle (no task), leaving.
  RemoveIdle(self);
  --threads_;
  Worker* previous = exited_;
  exited_ = self;
  if (threads_ == 0) all_exited_.SignalAll();
  mu_.Unlock();
  // `self` now belongs to whoever joins it: the next thread to exit, or the
  // destructor.
  if (previous != nullptr) Join(previous);
}

void WorkerPool::Join(Worker* worker) {
  pthread_join(worker->thread, nullptr);
  delete worker;
}

void WorkerPool::PushIdle(Worker* worker) {
  worker->idle_prev = nullptr;
  worker->idle_next = idle_head_;
  if (idle_head_ != nullptr) idle_head_->idle_prev = worker;
  idle_head_ = worker;
  ++idle_count_;
}

void WorkerPool::RemoveIdle(Worker* worker) {
  if (worker->idle_prev != nullptr) {
    worker->idle_prev->idle_next = worker->idle_next;
  } else {
    idle_head_ = worker->idle_next;
  }
  if (worker->idle_next != nullptr) {
    worker->idle_next->idle_prev = worker->idle_prev;
  }
  worker->idle_prev = nullptr;
  worker->idle_next = nullptr;
  --idle_count_;
}

}  // namespace h2rpc::internal
