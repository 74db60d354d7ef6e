#ifndef H2RPC_TEST_UTIL_NOTIFICATION_H_
#define H2RPC_TEST_UTIL_NOTIFICATION_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/time/time.h"

namespace h2rpc::testing {

// A one-shot event, like absl::Notification but on std::mutex, which
// ThreadSanitizer can see (Debian's Abseil is not TSan-instrumented).
class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  bool HasBeenNotified() {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }
  void WaitForNotification() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                        [this] { return notified_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_NOTIFICATION_H_
