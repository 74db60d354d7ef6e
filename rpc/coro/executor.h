#ifndef H2RPC_RPC_CORO_EXECUTOR_H_
#define H2RPC_RPC_CORO_EXECUTOR_H_

// C++20. Moving a coroutine between threads (//rpc/coro): off an event loop
// for blocking work, and back.
//
//   coro::Executor* loop = coro::CurrentLoop();  // this handler's loop
//   co_await coro::ResumeOn(pool);               // a ThreadPool's thread
//   std::string row = database.Query(key);       // may block here
//   co_await coro::ResumeOn(*loop);              // back on the loop
//   co_await stream->Write(Response(row));

#include <coroutine>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "transport/io/scheduler.h"

namespace h2rpc::coro {

// Threads that run scheduled work, never on the scheduling caller's stack.
class Executor {
 public:
  // What Schedule runs: embedded in its owner (ResumeOn keeps it in the
  // awaiting coroutine's frame), so scheduling allocates nothing. It is an
  // event loop task too, so an event loop is an Executor without a copy.
  class Work : public transport::io::Task {
   protected:
    ~Work() = default;

   private:
    friend class ThreadPool;
    Work* next_work_ = nullptr;
  };

  virtual ~Executor() = default;
  // Any thread. Runs `work->Run()` once, later, on one of the executor's
  // threads. `work` must stay valid until it has run.
  virtual void Schedule(Work* work) = 0;
};

// `co_await ResumeOn(executor)`: the coroutine suspends, and goes on on one
// of `executor`'s threads. Allocates nothing.
class ResumeOn final : public Executor::Work {
 public:
  explicit ResumeOn(Executor& executor) : executor_(executor) {}

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> awaiting) {
    awaiting_ = awaiting;
    executor_.Schedule(this);
  }
  void await_resume() const noexcept {}

 private:
  void Run() override { awaiting_.resume(); }

  Executor& executor_;
  std::coroutine_handle<> awaiting_;
};

// The h2rpc event loop running the calling thread (a channel's, or a server
// connection's: where coroutine calls and handlers resume), as an Executor,
// to come back to after ResumeOn took the coroutine elsewhere; null on any
// other thread. Valid while the loop runs: a channel's while the channel
// lives, a server's until it has shut down.
Executor* CurrentLoop();

// A fixed set of threads for blocking work: each runs scheduled work in
// order, first scheduled first. Schedule never allocates.
class ThreadPool final : public Executor {
 public:
  // Starts `threads` (at least 1) threads, named "h2rpc-coro-pool".
  explicit ThreadPool(int threads);
  // Runs what was scheduled before it, then joins the threads. Nothing may
  // be scheduled concurrently or afterwards.
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(Work* work) override;

 private:
  void RunThread();

  Mutex mu_;
  CondVar work_or_stop_;
  Work* head_ ABSL_GUARDED_BY(mu_) = nullptr;
  Work* tail_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace h2rpc::coro

#endif  // H2RPC_RPC_CORO_EXECUTOR_H_
