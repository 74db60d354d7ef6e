#include "rpc/internal/client/loop_timers.h"

#include <algorithm>
#include <utility>

#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

class LoopTimers::TaskTimer final : public transport::io::Timer {
 public:
  TaskTimer(LoopTimers* timers, uint64_t id, absl::AnyInvocable<void()> task)
      : timers_(timers), id_(id), task_(std::move(task)) {}

  void OnTimer() override {
    timers_->loop_.AssertInLoopThread();
    // Erasing destroys this timer: the task runs from the stack.
    absl::AnyInvocable<void()> task = std::move(task_);
    timers_->timers_.erase(id_);
    task();
  }

 private:
  LoopTimers* const timers_;
  const uint64_t id_;
  absl::AnyInvocable<void()> task_;
};

LoopTimers::LoopTimers(transport::io::EventLoop& loop) : loop_(loop) {}

LoopTimers::~LoopTimers() {
  loop_.AssertInLoopThread();  // or after the loop thread has exited
  CancelAll();
}

uint64_t LoopTimers::Start(absl::Duration delay,
                           absl::AnyInvocable<void()> task) {
  loop_.AssertInLoopThread();
  const uint64_t id = next_id_++;
  auto timer = std::make_unique<TaskTimer>(this, id, std::move(task));
  loop_.Schedule(timer.get(),
                 loop_.Now() + std::max(delay, absl::ZeroDuration()));
  timers_.emplace(id, std::move(timer));
  return id;
}

void LoopTimers::Cancel(uint64_t id) {
  loop_.AssertInLoopThread();
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  loop_.Cancel(it->second.get());
  timers_.erase(it);
}

void LoopTimers::CancelAll() {
  loop_.AssertInLoopThread();
  for (auto& [id, timer] : timers_) loop_.Cancel(timer.get());
  timers_.clear();
}

}  // namespace h2rpc::internal
