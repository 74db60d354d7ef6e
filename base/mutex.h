#ifndef H2RPC_BASE_MUTEX_H_
#define H2RPC_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace h2rpc {

// std::mutex and std::condition_variable in absl::Mutex's shape, carrying
// Abseil's thread-safety annotations (ABSL_GUARDED_BY and friends apply to
// them). Not absl::Mutex itself: Debian's libabsl is not built with
// ThreadSanitizer, which then cannot see absl::Mutex locking and reports
// false races; it sees these.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable used with a Mutex. Waits may wake spuriously: callers
// re-check their condition.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `*mu`, waits for Signal()/SignalAll(), holds `*mu` again.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Wait() giving up after `timeout` (InfiniteDuration: never); true if it
  // gave up.
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    // Beyond a century is forever (and keeps the clock arithmetic in range).
    if (timeout >= absl::Hours(24 * 365 * 100)) {
      Wait(mu);
      return false;
    }
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const std::cv_status result =
        cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout));
    lock.release();
    return result == std::cv_status::timeout;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace h2rpc

#endif  // H2RPC_BASE_MUTEX_H_
