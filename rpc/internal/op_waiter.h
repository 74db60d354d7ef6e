#ifndef H2RPC_RPC_INTERNAL_OP_WAITER_H_
#define H2RPC_RPC_INTERNAL_OP_WAITER_H_

#include <condition_variable>
#include <mutex>

namespace h2rpc::internal {

// The completion of one blocking stream operation: the thread that started
// it waits in Wait(); the loop thread calls Complete(). Arm() before each
// start (an operation that happens once, like initial metadata, needs none).
class OpWaiter {
 public:
  void Arm() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = false;
  }
  void Complete(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    ok_ = ok;
    completed_.notify_all();
  }
  // Returns the `ok` of the completion.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    completed_.wait(lock, [this] { return done_; });
    return ok_;
  }

 private:
  std::mutex mu_;
  std::condition_variable completed_;
  bool done_ = false;  // guarded by mu_
  bool ok_ = false;    // guarded by mu_
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_OP_WAITER_H_
