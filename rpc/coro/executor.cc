#include "rpc/coro/executor.h"

#include <pthread.h>

#include <algorithm>

#include "transport/io/event_loop.h"

namespace h2rpc::coro {
namespace {

// An event loop as an Executor: Work is an event loop task.
class LoopExecutor final : public Executor {
 public:
  explicit LoopExecutor(transport::io::EventLoop* loop) : loop_(loop) {}
  void Schedule(Work* work) override { loop_->Post(work); }

 private:
  transport::io::EventLoop* const loop_;
};

}  // namespace

Executor* CurrentLoop() {
  transport::io::EventLoop* loop = transport::io::EventLoop::Current();
  if (loop == nullptr) return nullptr;
  // One per loop thread, made on first use; a thread runs one loop.
  thread_local LoopExecutor executor(loop);
  return &executor;
}

ThreadPool::ThreadPool(int threads) {
  const int count = std::max(threads, 1);
  threads_.reserve(count);
  for (int i = 0; i < count; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "h2rpc-coro-pool");
      RunThread();
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    work_or_stop_.SignalAll();
  }
  for (std::thread& thread : threads_) thread.join();
}

void ThreadPool::Schedule(Work* work) {
  MutexLock lock(&mu_);
  work->next_work_ = nullptr;
  if (tail_ == nullptr) {
    head_ = work;
  } else {
    tail_->next_work_ = work;
  }
  tail_ = work;
  work_or_stop_.Signal();
}

void ThreadPool::RunThread() {
  while (true) {
    Work* work;
    {
      MutexLock lock(&mu_);
      while (head_ == nullptr && !stopping_) work_or_stop_.Wait(&mu_);
      if (head_ == nullptr) return;  // stopping, and nothing left
      work = head_;
      head_ = work->next_work_;
      if (head_ == nullptr) tail_ = nullptr;
    }
    work->Run();
  }
}

}  // namespace h2rpc::coro
