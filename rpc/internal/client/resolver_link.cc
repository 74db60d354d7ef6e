#include "rpc/internal/client/resolver_link.h"

#include <algorithm>
#include <utility>

#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

class ResolverLink::TaskTimer final : public transport::io::Timer {
 public:
  TaskTimer(ResolverLink* link, uint64_t id, absl::AnyInvocable<void()> task)
      : link_(link), id_(id), task_(std::move(task)) {}

  void OnTimer() override {
    link_->loop_.AssertInLoopThread();
    // Erasing destroys this timer: the task runs from the stack.
    absl::AnyInvocable<void()> task = std::move(task_);
    link_->timers_.erase(id_);
    task();
  }

 private:
  ResolverLink* const link_;
  const uint64_t id_;
  absl::AnyInvocable<void()> task_;
};

ResolverLink::ResolverLink(Sink* sink, std::shared_ptr<LoopGate> gate,
                           transport::io::EventLoop& loop)
    : sink_(sink), gate_(std::move(gate)), loop_(loop) {}

ResolverLink::~ResolverLink() = default;

void ResolverLink::Detach() {
  sink_ = nullptr;
  for (auto& [id, timer] : timers_) loop_.Cancel(timer.get());
  timers_.clear();
}

void ResolverLink::PostIfAttached(absl::AnyInvocable<void(Sink*)> task) {
  gate_->Post([link = shared_from_this(), task = std::move(task)]() mutable {
    link->loop_.AssertInLoopThread();
    if (link->sink_ != nullptr) task(link->sink_);
  });
}

void ResolverLink::Update(ResolverResult result) {
  PostIfAttached([result = std::move(result)](Sink* sink) mutable {
    sink->OnResolverResult(std::move(result));
  });
}

void ResolverLink::Error(const Status& error) {
  PostIfAttached([error](Sink* sink) { sink->OnResolverError(error); });
}

void ResolverLink::Post(absl::AnyInvocable<void()> task) {
  PostIfAttached([task = std::move(task)](Sink*) mutable { task(); });
}

uint64_t ResolverLink::StartTimer(absl::Duration delay,
                                  absl::AnyInvocable<void()> task) {
  loop_.AssertInLoopThread();
  const uint64_t id = next_timer_id_++;
  auto timer = std::make_unique<TaskTimer>(this, id, std::move(task));
  if (sink_ != nullptr) {
    loop_.Schedule(timer.get(),
                   loop_.Now() + std::max(delay, absl::ZeroDuration()));
    timers_.emplace(id, std::move(timer));
  }
  return id;
}

void ResolverLink::CancelTimer(uint64_t id) {
  loop_.AssertInLoopThread();
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  loop_.Cancel(it->second.get());
  timers_.erase(it);
}

}  // namespace h2rpc::internal
