#include "rpc/internal/client/resolver_link.h"

#include <utility>

namespace h2rpc::internal {

ResolverLink::ResolverLink(Sink* sink, std::shared_ptr<LoopGate> gate,
                           transport::io::EventLoop& loop)
    : sink_(sink), gate_(std::move(gate)), loop_(loop), timers_(loop) {}

ResolverLink::~ResolverLink() = default;

void ResolverLink::Detach() {
  loop_.AssertInLoopThread();
  sink_ = nullptr;
  timers_.CancelAll();
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
  // A detached link's timers would never be cancelled: none is started.
  if (sink_ == nullptr) return 0;
  return timers_.Start(delay, std::move(task));
}

void ResolverLink::CancelTimer(uint64_t id) {
  loop_.AssertInLoopThread();
  timers_.Cancel(id);
}

}  // namespace h2rpc::internal
