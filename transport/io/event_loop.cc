#include "transport/io/event_loop.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::transport::io {
namespace {

// Ready events taken per epoll_wait; more stay ready for the next call.
constexpr size_t kMaxEventsPerWait = 256;
constexpr size_t kInitialWatcherSlots = 256;
// Linux limits thread names to 16 bytes including the terminating NUL.
constexpr size_t kMaxThreadNameLength = 15;

std::string ErrnoText(int error) {
  char buffer[256];
  // GNU strerror_r: returns a pointer to the message (maybe not `buffer`).
  return strerror_r(error, buffer, sizeof(buffer));
}

// Post(AnyInvocable): the one allocating kind of Task; deletes itself.
class FunctionTask final : public Task {
 public:
  explicit FunctionTask(absl::AnyInvocable<void()> fn) : fn_(std::move(fn)) {}

  void Run() override {
    absl::AnyInvocable<void()> fn = std::move(fn_);
    delete this;
    fn();
  }

 private:
  absl::AnyInvocable<void()> fn_;
};

}  // namespace

// Start() waits on this until the loop thread has pinned and named itself.
struct EventLoop::StartSignal {
  Mutex mu;
  CondVar cv;  // done became true
  bool done ABSL_GUARDED_BY(mu) = false;
  Status status ABSL_GUARDED_BY(mu);
};

EventLoop::EventLoop() : now_(MonotonicTime::Now()) {
  events_.resize(kMaxEventsPerWait);
  watchers_.resize(kInitialWatcherSlots, nullptr);

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    init_status_ =
        Status(StatusCode::kUnavailable,
               absl::StrCat("epoll_create1 failed: ", ErrnoText(errno)));
    return;
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    init_status_ = Status(
        StatusCode::kUnavailable,
        absl::StrCat("eventfd for the event loop failed: ", ErrnoText(errno)));
    return;
  }
  epoll_event event = {};
  event.events = EPOLLIN;
  event.data.fd = wake_fd_;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) {
    init_status_ =
        Status(StatusCode::kUnavailable,
               absl::StrCat("epoll_ctl(ADD) of the wake-up eventfd failed: ",
                            ErrnoText(errno)));
  }
}

EventLoop::~EventLoop() {
  if (InLoopThread()) {
    std::fprintf(stderr, "h2rpc: EventLoop destroyed on its own thread\n");
    std::abort();
  }
  Stop();
  // Tasks posted after the loop thread exited (or with no thread ever
  // started) never run: unqueue them, and free the ones Post() allocated.
  Task* task;
  {
    MutexLock lock(&mu_);
    task = posted_head_;
    posted_head_ = posted_tail_ = nullptr;
    has_posted_.store(false);
  }
  if (own_posted_.tail != nullptr) {
    own_posted_.tail->next_ = task;
    task = own_posted_.head;
    own_posted_ = TaskList();
  }
  while (task != nullptr) {
    Task* next = task->next_;
    task->next_ = nullptr;
    task->queued_.store(false, std::memory_order_release);
    delete dynamic_cast<FunctionTask*>(task);
    task = next;
  }
  for (TaskList& list : end_lists_) {
    while (list.head != nullptr) UnlinkEndTask(list.head);
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

Status EventLoop::Start(absl::string_view name, int cpu) {
  if (!init_status_.ok()) return init_status_;
  if (cpu >= CPU_SETSIZE) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("cannot pin event loop thread '", name, "' to CPU ", cpu,
                     ": at most ", CPU_SETSIZE, " CPUs are supported"));
  }
  MutexLock lock(&thread_mu_);
  if (started_) {
    return Status(StatusCode::kFailedPrecondition,
                  absl::StrCat("event loop '", name, "' started twice"));
  }
  started_ = true;
  StartSignal started;
  thread_ =
      std::thread(&EventLoop::Run, this, std::string(name), cpu, &started);
  MutexLock wait_lock(&started.mu);
  while (!started.done) started.cv.Wait(&started.mu);
  if (!started.status.ok()) thread_.join();
  return started.status;
}

void EventLoop::Stop() {
  stop_requested_.store(true);
  MaybeWake();
  if (InLoopThread()) return;
  MutexLock lock(&thread_mu_);
  if (thread_.joinable()) thread_.join();
}

EventLoop::BusyPollCounts EventLoop::busy_poll_counts() const {
  BusyPollCounts counts;
  counts.found_work = busy_polls_found_work_.load(std::memory_order_relaxed);
  counts.ended_idle = busy_polls_ended_idle_.load(std::memory_order_relaxed);
  return counts;
}

bool EventLoop::InLoopThread() const {
  return loop_thread_id_.load(std::memory_order_relaxed) ==
         std::this_thread::get_id();
}

void EventLoop::CheckInLoopThread() const {
  const std::thread::id loop_thread =
      loop_thread_id_.load(std::memory_order_relaxed);
  if (loop_thread != std::thread::id() &&
      loop_thread != std::this_thread::get_id()) {
    std::fprintf(stderr,
                 "h2rpc: a loop-thread-only function ran on another thread "
                 "while the event loop runs\n");
    std::abort();
  }
}

void EventLoop::Post(Task* task) {
  if (task->queued_.exchange(true, std::memory_order_acq_rel)) return;
  task->next_ = nullptr;
  // The loop thread's own tasks, while no other thread's waits, go to its
  // own queue: no lock, no wake-up. Each of them was posted before every
  // task in the shared queue (a task another thread posted before is seen
  // here), so running them first keeps the posting order.
  if (InLoopThread() && !has_posted_.load(std::memory_order_acquire)) {
    if (own_posted_.tail != nullptr) {
      own_posted_.tail->next_ = task;
    } else {
      own_posted_.head = task;
    }
    own_posted_.tail = task;
    return;
  }
  {
    MutexLock lock(&mu_);
    if (posted_tail_ != nullptr) {
      posted_tail_->next_ = task;
    } else {
      posted_head_ = task;
    }
    posted_tail_ = task;
    // Sequentially consistent: pairs with the loop's sleeping_ store.
    has_posted_.store(true);
  }
  MaybeWake();
}

void EventLoop::Post(absl::AnyInvocable<void()> fn) {
  Post(new FunctionTask(std::move(fn)));
}

void EventLoop::MaybeWake() {
  // If the loop is not (about to be) asleep, it checks has_posted_ and
  // stop_requested_ after announcing sleep, so no write is needed. If a
  // wake-up is pending, its write lands after the loop's last drain.
  if (!sleeping_.load()) return;
  if (wake_pending_.exchange(true)) return;
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = write(wake_fd_, &one, sizeof(one));
  } while (n < 0 && errno == EINTR);
}

void EventLoop::DrainWakeFd() {
  uint64_t count;
  ssize_t n;
  do {
    n = read(wake_fd_, &count, sizeof(count));
  } while (n < 0 && errno == EINTR);
  // Only a read that consumed a write may re-arm Post()'s write: at most one
  // write is outstanding while wake_pending_ is set.
  if (n == static_cast<ssize_t>(sizeof(count))) wake_pending_.store(false);
}

Status EventLoop::AddFd(int fd, uint32_t events, FdWatcher* watcher) {
  if (!init_status_.ok()) return init_status_;
  if (fd < 0) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("cannot watch invalid file descriptor ", fd));
  }
  if (static_cast<size_t>(fd) >= watchers_.size()) {
    watchers_.resize(
        std::max(static_cast<size_t>(fd) + 1, 2 * watchers_.size()), nullptr);
  }
  epoll_event event = {};
  event.events = events;
  event.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("epoll_ctl(ADD) of fd ", fd,
                               " failed: ", ErrnoText(errno)));
  }
  watchers_[fd] = watcher;
  return Status();
}

Status EventLoop::ModifyFd(int fd, uint32_t events, FdWatcher* watcher) {
  if (!init_status_.ok()) return init_status_;
  if (fd < 0 || static_cast<size_t>(fd) >= watchers_.size()) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("cannot modify unwatched file descriptor ", fd));
  }
  epoll_event event = {};
  event.events = events;
  event.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event) != 0) {
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("epoll_ctl(MOD) of fd ", fd,
                               " failed: ", ErrnoText(errno)));
  }
  watchers_[fd] = watcher;
  return Status();
}

void EventLoop::RemoveFd(int fd) {
  if (fd < 0 || static_cast<size_t>(fd) >= watchers_.size()) return;
  // Errors (fd already closed, never added) leave nothing to undo.
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  watchers_[fd] = nullptr;
  for (int i = 0; i < ready_count_; ++i) {
    if (events_[i].data.fd == fd) events_[i].data.fd = -1;
  }
}

void EventLoop::Schedule(Timer* timer, MonotonicTime deadline) {
  timers_.Schedule(timer, deadline);
}

void EventLoop::Cancel(Timer* timer) { timers_.Cancel(timer); }

void EventLoop::RunAtEndOfIteration(Task* task) {
  if (task->end_list_ >= 0) return;
  TaskList& list = end_lists_[end_add_];
  task->end_list_ = static_cast<int8_t>(end_add_);
  task->end_prev_ = list.tail;
  task->end_next_ = nullptr;
  if (list.tail != nullptr) {
    list.tail->end_next_ = task;
  } else {
    list.head = task;
  }
  list.tail = task;
}

char* EventLoop::read_buffer() {
  if (read_buffer_ == nullptr) {
    read_buffer_ = std::make_unique<char[]>(kReadBufferSize);
  }
  return read_buffer_.get();
}

char* EventLoop::large_read_buffer() {
  if (large_read_buffer_ == nullptr) {
    large_read_buffer_ = std::make_unique<char[]>(kLargeReadBufferSize);
  }
  return large_read_buffer_.get();
}

void EventLoop::CancelEndOfIteration(Task* task) {
  if (task->end_list_ >= 0) UnlinkEndTask(task);
}

void EventLoop::UnlinkEndTask(Task* task) {
  TaskList& list = end_lists_[task->end_list_];
  if (task->end_prev_ != nullptr) {
    task->end_prev_->end_next_ = task->end_next_;
  } else {
    list.head = task->end_next_;
  }
  if (task->end_next_ != nullptr) {
    task->end_next_->end_prev_ = task->end_prev_;
  } else {
    list.tail = task->end_prev_;
  }
  task->end_prev_ = task->end_next_ = nullptr;
  task->end_list_ = -1;
}

namespace {
// The loop whose thread this is (EventLoop::Current).
thread_local EventLoop* current_loop = nullptr;
}  // namespace

EventLoop* EventLoop::Current() { return current_loop; }

void EventLoop::Run(std::string name, int cpu, StartSignal* started) {
  loop_thread_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  current_loop = this;
  Status status;
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (rc != 0) {
      status = Status(StatusCode::kInvalidArgument,
                      absl::StrCat("cannot pin event loop thread '", name,
                                   "' to CPU ", cpu, ": ", ErrnoText(rc)));
    }
  }
  if (status.ok()) {
    name.resize(std::min(name.size(), kMaxThreadNameLength));
    pthread_setname_np(pthread_self(), name.c_str());
    now_ = MonotonicTime::Now();
  }
  const bool ok = status.ok();
  {
    MutexLock lock(&started->mu);
    started->status = std::move(status);
    started->done = true;
    started->cv.Signal();
  }
  // `started` is gone once Start() has seen `done`.
  if (ok) {
    do {
      RunIteration();
    } while (!stop_requested_.load());
    while (has_posted_.load() || own_posted_.head != nullptr ||
           end_lists_[end_add_].head != nullptr) {
      RunPostedTasks();
      RunEndOfIterationTasks();
    }
  }
  current_loop = nullptr;
  loop_thread_id_.store(std::thread::id(), std::memory_order_relaxed);
}

int EventLoop::ComputeTimeoutMs() const {
  if (end_lists_[end_add_].head != nullptr || own_posted_.head != nullptr ||
      has_posted_.load(std::memory_order_relaxed) ||
      stop_requested_.load(std::memory_order_relaxed)) {
    return 0;
  }
  if (timers_.empty()) return -1;
  const absl::Duration remaining = timers_.earliest() - MonotonicTime::Now();
  if (remaining <= absl::ZeroDuration()) return 0;
  if (remaining >= absl::Milliseconds(INT_MAX)) return INT_MAX;
  // Round up: waking before the deadline would only spin.
  return static_cast<int>(
      absl::ToInt64Milliseconds(absl::Ceil(remaining, absl::Milliseconds(1))));
}

void EventLoop::RunIteration() {
  int timeout_ms = ComputeTimeoutMs();
  int count = 0;
  bool found = false;
  if (timeout_ms != 0 && busy_poll_ > absl::ZeroDuration()) {
    found = BusyPoll(&count);
    // The poll may have reached the earliest timer's deadline.
    if (!found) timeout_ms = ComputeTimeoutMs();
  }
  if (!found) count = Wait(timeout_ms);
  now_ = MonotonicTime::Now();
  yield_requested_ = false;
  if (count > 0) DispatchFdEvents(count);
  RunExpiredTimers();
  RunPostedTasks();
  RunEndOfIterationTasks();
}

bool EventLoop::BusyPoll(int* count) {
  MonotonicTime until = MonotonicTime::Now() + busy_poll_;
  // Timers are scheduled on this thread only: none is added while polling.
  if (!timers_.empty()) until = std::min(until, timers_.earliest());
  for (;;) {
    // sleeping_ stays clear, so Post() and Stop() do not write the eventfd:
    // their stores are seen here. An earlier write still pending makes the
    // eventfd ready, and DispatchFdEvents() drains it.
    const int n = epoll_wait(epoll_fd_, events_.data(),
                             static_cast<int>(events_.size()), 0);
    if (n > 0 || has_posted_.load(std::memory_order_acquire) ||
        stop_requested_.load(std::memory_order_acquire)) {
      *count = std::max(n, 0);
      busy_polls_found_work_.store(
          busy_polls_found_work_.load(std::memory_order_relaxed) + 1,
          std::memory_order_relaxed);
      return true;
    }
    // An error (EINTR) finds nothing: poll on until the budget is spent.
    if (MonotonicTime::Now() >= until) {
      busy_polls_ended_idle_.store(
          busy_polls_ended_idle_.load(std::memory_order_relaxed) + 1,
          std::memory_order_relaxed);
      return false;
    }
  }
}

int EventLoop::Wait(int timeout_ms) {
  const bool may_sleep = timeout_ms != 0;
  if (may_sleep) {
    // Dekker-style with Post()/Stop(): announce, then look. Either they see
    // sleeping_ and write the eventfd, or we see their store here.
    sleeping_.store(true);
    if (has_posted_.load() || stop_requested_.load()) timeout_ms = 0;
  }
  int count;
  do {
    count = epoll_wait(epoll_fd_, events_.data(),
                       static_cast<int>(events_.size()), timeout_ms);
  } while (count < 0 && errno == EINTR);
  if (may_sleep) sleeping_.store(false);
  return count;
}

void EventLoop::DispatchFdEvents(int count) {
  ready_count_ = count;
  for (int i = 0; i < count; ++i) {
    const int fd = events_[i].data.fd;
    if (fd < 0) continue;  // Removed by an earlier callback.
    if (fd == wake_fd_) {
      DrainWakeFd();
      continue;
    }
    FdWatcher* watcher = watchers_[fd];
    if (watcher != nullptr) watcher->OnFdReady(events_[i].events);
  }
  ready_count_ = 0;
}

void EventLoop::RunExpiredTimers() {
  // Timers (re)scheduled by callbacks of this phase wait for the next
  // iteration, even if already due: no livelock on a self-rearming timer.
  const uint64_t sequence_limit = timers_.next_sequence();
  while (Timer* timer = timers_.PopDue(now_, sequence_limit)) {
    timer->OnTimer();
  }
}

void EventLoop::RunPostedTasks() {
  Task* task = own_posted_.head;
  Task* const own_tail = own_posted_.tail;
  own_posted_ = TaskList();
  if (has_posted_.load(std::memory_order_acquire)) {
    Task* shared;
    {
      MutexLock lock(&mu_);
      shared = posted_head_;
      posted_head_ = posted_tail_ = nullptr;
      has_posted_.store(false, std::memory_order_relaxed);
    }
    if (own_tail != nullptr) {
      own_tail->next_ = shared;
    } else {
      task = shared;
    }
  }
  while (task != nullptr) {
    Task* next = task->next_;
    // From here the task may be posted again (and its next_ rewritten).
    task->queued_.store(false, std::memory_order_release);
    task->Run();
    task = next;
  }
}

void EventLoop::RunEndOfIterationTasks() {
  const int run = end_add_;
  end_add_ ^= 1;
  TaskList& list = end_lists_[run];
  while (list.head != nullptr) {
    Task* task = list.head;
    UnlinkEndTask(task);
    task->Run();
  }
}

}  // namespace h2rpc::transport::io
