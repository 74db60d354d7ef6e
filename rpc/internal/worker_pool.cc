#include "rpc/internal/worker_pool.h"

#include <pthread.h>

namespace h2rpc::internal {

WorkerPool::WorkerPool(int threads) {
  queue_.reserve(256);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "h2rpc-worker");
      Work();
    });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::Submit(transport::io::Task* task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(task);
  }
  ready_.notify_one();
}

void WorkerPool::Work() {
  for (;;) {
    transport::io::Task* task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return head_ < queue_.size() || stopping_; });
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
