#ifndef H2RPC_TEST_UTIL_NOTIFICATION_H_
#define H2RPC_TEST_UTIL_NOTIFICATION_H_

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace h2rpc::testing {

// A one-shot event, like absl::Notification but on Mutex (a
// std::mutex underneath), which ThreadSanitizer can see (Debian's Abseil is
// not TSan-instrumented). Any thread may call any method.
class Notification {
 public:
  void Notify() {
    MutexLock lock(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  bool HasBeenNotified() {
    MutexLock lock(&mu_);
    return notified_;
  }
  void WaitForNotification() {
    MutexLock lock(&mu_);
    while (!notified_) cv_.Wait(&mu_);
  }
  // True if notified within `timeout` (measured on the steady clock, so a
  // step of the wall clock neither shortens nor extends it).
  // Beyond a century (InfiniteDuration included) waits for ever.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    if (timeout >= absl::Hours(24 * 365 * 100)) {
      WaitForNotification();
      return true;
    }
    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline =
        Clock::now() + absl::ToChronoNanoseconds(timeout);
    MutexLock lock(&mu_);
    while (!notified_) {
      const Clock::duration left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      cv_.WaitWithTimeout(&mu_, absl::FromChrono(left));
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;  // notified_ became true
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_NOTIFICATION_H_
