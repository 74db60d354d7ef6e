#include "rpc/internal/worker_pool.h"

namespace h2rpc::internal {

WorkerPool::WorkerPool(int threads) {
  queue_.reserve(256);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::Submit(transport::io::Task* task) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(task);
}

void WorkerPool::Work() {
  for (;;) {
    transport::io::Task* task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return head_ < queue_.size() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (head_ == queue_.size()) return;  // stopping, nothing left
      task = queue_[head_++];
      if (head_ == queue_.size()) {
        queue_.clear();
        head_ = 0;
      }
    }
    task->Run();
  }
}

}  // namespace h2rpc::internal
