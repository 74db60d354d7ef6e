#ifndef H2RPC_RPC_INTERNAL_OP_WAITER_H_
#define H2RPC_RPC_INTERNAL_OP_WAITER_H_

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace h2rpc::internal {

// The completion of one blocking stream operation: the thread that started
// it waits in Wait(); the loop thread calls Complete(). Arm() before each
// start (an operation that happens once, like initial metadata, needs none).
class OpWaiter {
 public:
  void Arm() {
    MutexLock lock(&mu_);
    done_ = false;
  }
  void Complete(bool ok) {
    MutexLock lock(&mu_);
    done_ = true;
    ok_ = ok;
    completed_.SignalAll();
  }
  // Returns the `ok` of the completion.
  bool Wait() {
    MutexLock lock(&mu_);
    while (!done_) completed_.Wait(&mu_);
    return ok_;
  }

 private:
  Mutex mu_;
  CondVar completed_;  // done_ became true
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool ok_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_OP_WAITER_H_
