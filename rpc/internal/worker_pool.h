#ifndef H2RPC_RPC_INTERNAL_WORKER_POOL_H_
#define H2RPC_RPC_INTERNAL_WORKER_POOL_H_

#include <cstddef>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
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

  absl::Mutex mu_;
  std::vector<transport::io::Task*> queue_ ABSL_GUARDED_BY(mu_);
  size_t head_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_WORKER_POOL_H_
