#include "rpc/client_context.h"

#include "transport/io/monotonic_time.h"

namespace h2rpc {

ClientContext::~ClientContext() = default;

void ClientContext::set_deadline(absl::Time deadline) {
  monotonic_deadline_ =
      transport::io::MonotonicFromWall(deadline).since_epoch();
}

void ClientContext::set_timeout(absl::Duration timeout) {
  monotonic_deadline_ =
      (transport::io::MonotonicTime::Now() + timeout).since_epoch();
}

absl::Time ClientContext::deadline() const {
  return transport::io::WallFromMonotonic(
      transport::io::MonotonicTime::FromSinceEpoch(monotonic_deadline_));
}

void ClientContext::TryCancel() {
  MutexLock lock(&mu_);
  if (call_ != nullptr) {
    call_->RequestCancel();
  } else if (!call_ended_) {
    cancelled_ = true;
  }
}

}  // namespace h2rpc
