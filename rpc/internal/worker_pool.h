#ifndef H2RPC_RPC_INTERNAL_WORKER_POOL_H_
#define H2RPC_RPC_INTERNAL_WORKER_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// Threads that run synchronous handlers, so a blocking handler never stalls
// an event loop. Tasks run in FIFO order; Submit() does not allocate once
// the queue has grown to its working size.
class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  // Runs the tasks already submitted, then joins.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(transport::io::Task* task);

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable ready_;
  std::vector<transport::io::Task*> queue_;  // guarded by mu_
  size_t head_ = 0;                          // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_WORKER_POOL_H_
