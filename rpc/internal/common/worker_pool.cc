#include "rpc/internal/common/worker_pool.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace h2rpc::internal {
namespace {

// Sleeps while `*word` holds `expected`, at most `timeout` (InfiniteDuration:
// no limit). Returns early on a wake-up, a changed value, a signal or
// spuriously: callers re-check their condition.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               absl::Duration timeout) {
  timespec ts;
  timespec* limit = nullptr;
  if (timeout < absl::Hours(24 * 365 * 100)) {
    ts = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
    limit = &ts;
  }
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE,
          expected, limit, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE,
          count, nullptr, nullptr, 0);
}

// The CPUs this thread may run on; false if the system does not say.
bool ThisThreadsCpus(cpu_set_t* set) {
  CPU_ZERO(set);
  return pthread_getaffinity_np(pthread_self(), sizeof(*set), set) == 0;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a thread that finished a task polls for the next one before
// sleeping (when it may run on several CPUs): about a handler's round trip
// through an event loop, so a steady stream of calls is handed over without
// a wake-up. Once per task, never while idle.
constexpr absl::Duration kPollTime = absl::Microseconds(20);

// What a new thread starts with.
struct ThreadStart {
  WorkerPool* pool;
  WorkerTask* first_task;  // run before taking handed-out tasks; may be null
};

}  // namespace

WorkerPool::WorkerPool(int min_threads, int max_threads,
                       absl::Duration idle_time)
    : min_threads_(min_threads),
      max_threads_(max_threads),
      idle_time_(idle_time),
      has_cpus_(ThisThreadsCpus(&cpus_)),
      poll_(has_cpus_ && CPU_COUNT(&cpus_) > 1) {
  for (int i = 0; i < min_threads_; ++i) {
    {
      MutexLock lock(&mu_);
      ++threads_;
      ++idle_;
    }
    int error;
    if (!StartThread(nullptr, &error)) break;  // TrySubmit() tries again
  }
}

WorkerPool::~WorkerPool() {
  bool join_last;
  pthread_t last;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    wake_sequence_.fetch_add(1);
    FutexWake(&wake_sequence_, INT_MAX);
    while (threads_ > 0) all_exited_.Wait(&mu_);
    join_last = has_exited_thread_;
    last = exited_thread_;
    has_exited_thread_ = false;
  }
  // Each exited thread joined the one before it before ending.
  if (join_last) pthread_join(last, nullptr);
}

Status WorkerPool::TrySubmit(WorkerTask* task) {
  Status status = TrySubmitDeferred(task);
  WakeForHandedOut();
  return status;
}

Status WorkerPool::TrySubmitDeferred(WorkerTask* task) {
  {
    MutexLock lock(&mu_);
    if (idle_ > handed_out_count_ && !stopping_) {
      task->next_handed_out_ = nullptr;
      if (handed_out_tail_ != nullptr) {
        handed_out_tail_->next_handed_out_ = task;
      } else {
        handed_out_head_ = task;
      }
      handed_out_tail_ = task;
      ++handed_out_count_;
      handed_out_hint_.store(handed_out_count_, std::memory_order_relaxed);
      return Status();
    }
    if (threads_ >= max_threads_ || stopping_) {
      return Status(StatusCode::kResourceExhausted,
                    absl::StrCat("all ", max_threads_,
                                 " synchronous handler threads are busy "
                                 "(ServerOptions::max_sync_threads)"));
    }
    ++threads_;
  }
  int error;
  if (!StartThread(task, &error)) {
    return Status(StatusCode::kResourceExhausted,
                  absl::StrCat("cannot start a synchronous handler thread: ",
                               std::strerror(error)));
  }
  return Status();
}

int WorkerPool::WakeForHandedOut(int max_wakes) {
  // The caller's own hand-over is visible to it; a task taken meanwhile
  // needs no wake-up.
  if (handed_out_hint_.load(std::memory_order_relaxed) == 0) return 0;
  int count;
  int more;
  {
    MutexLock lock(&mu_);
    // Idle threads awake (or being woken) take handed-out tasks before they
    // sleep; only the tasks beyond them need a sleeper woken.
    const int awake = idle_ - sleepers_ + wakes_in_flight_;
    const int needed =
        std::min(handed_out_count_ - awake, sleepers_ - wakes_in_flight_);
    if (needed <= 0) return 0;
    count = std::min(needed, max_wakes);
    more = needed - count;
    if (count <= 0) return more;
    wakes_in_flight_ += count;
    wake_sequence_.fetch_add(1);
  }
  // After releasing mu_: a woken thread may run at once, and wants mu_.
  FutexWake(&wake_sequence_, count);
  return more;
}

int WorkerPool::threads() {
  MutexLock lock(&mu_);
  return threads_;
}

int WorkerPool::idle_threads() {
  MutexLock lock(&mu_);
  return idle_;
}

bool WorkerPool::StartThread(WorkerTask* task, int* error) {
  auto* start = new ThreadStart{this, task};
  pthread_t thread;
  *error = EINVAL;
  if (has_cpus_) {
    // The pool's CPUs, not those of the thread that happens to start this
    // one (an event loop pinned to one CPU, say).
    pthread_attr_t attributes;
    if (pthread_attr_init(&attributes) == 0) {
      if (pthread_attr_setaffinity_np(&attributes, sizeof(cpus_), &cpus_) ==
          0) {
        *error = pthread_create(&thread, &attributes, &WorkerPool::ThreadMain,
                                start);
      }
      pthread_attr_destroy(&attributes);
    }
  }
  // EINVAL: no affinity to give, or the set is no longer allowed (the
  // process's CPUs changed): the thread keeps its creator's CPUs.
  if (*error == EINVAL) {
    *error = pthread_create(&thread, nullptr, &WorkerPool::ThreadMain, start);
  }
  if (*error == 0) return true;
  delete start;
  MutexLock lock(&mu_);
  --threads_;
  if (task == nullptr) --idle_;
  if (threads_ == 0) all_exited_.SignalAll();
  return false;
}

void* WorkerPool::ThreadMain(void* start) {
  // First, so that allocation counters see the thread's role from the start.
  pthread_setname_np(pthread_self(), "h2rpc-worker");
  const ThreadStart how = *static_cast<ThreadStart*>(start);
  delete static_cast<ThreadStart*>(start);
  how.pool->Work(how.first_task);
  return nullptr;
}

WorkerTask* WorkerPool::TakeHandedOut() {
  WorkerTask* task = handed_out_head_;
  if (task == nullptr) return nullptr;
  handed_out_head_ = task->next_handed_out_;
  if (handed_out_head_ == nullptr) handed_out_tail_ = nullptr;
  task->next_handed_out_ = nullptr;
  --handed_out_count_;
  handed_out_hint_.store(handed_out_count_, std::memory_order_relaxed);
  --idle_;
  return task;
}

void WorkerPool::Work(WorkerTask* task) {
  mu_.Lock();
  absl::Time idle_end = absl::Now() + idle_time_;
  for (;;) {
    if (task == nullptr) task = TakeHandedOut();
    if (task != nullptr) {
      mu_.Unlock();
      task->Run();
      mu_.Lock();
      ++idle_;
      mu_.Unlock();
      task->Done();
      task = nullptr;
      if (poll_) {
        const absl::Time poll_end = absl::Now() + kPollTime;
        do {
          for (int i = 0;
               i < 64 && handed_out_hint_.load(std::memory_order_relaxed) == 0;
               ++i) {
            CpuRelax();
          }
        } while (handed_out_hint_.load(std::memory_order_relaxed) == 0 &&
                 absl::Now() < poll_end);
      }
      idle_end = absl::Now() + idle_time_;
      mu_.Lock();
      continue;
    }
    if (stopping_) break;
    // A thread the pool keeps sleeps until woken; one beyond the minimum
    // until its idle time is up.
    absl::Duration timeout = absl::InfiniteDuration();
    if (threads_ > min_threads_) {
      const absl::Time now = absl::Now();
      if (now >= idle_end) break;
      timeout = idle_end - now;
    }
    const uint32_t sequence = wake_sequence_.load();
    ++sleepers_;
    mu_.Unlock();
    FutexWait(&wake_sequence_, sequence, timeout);
    mu_.Lock();
    --sleepers_;
    // Whatever ended the wait (a wake-up, the sequence moving on, the
    // timeout, a signal), this thread now looks at the list before sleeping
    // again, so it stands for one wake-up in flight (see wakes_in_flight_).
    if (wakes_in_flight_ > 0) --wakes_in_flight_;
  }
  // Idle with nothing handed out (so every handed-out task keeps an idle
  // thread), leaving.
  --idle_;
  --threads_;
  const bool join_previous = has_exited_thread_;
  const pthread_t previous = exited_thread_;
  exited_thread_ = pthread_self();
  has_exited_thread_ = true;
  if (threads_ == 0) all_exited_.SignalAll();
  mu_.Unlock();
  // This thread now belongs to whoever joins it: the next thread to exit, or
  // the destructor.
  if (join_previous) pthread_join(previous, nullptr);
}

}  // namespace h2rpc::internal
