#include "rpc/client_context.h"

#include "rpc/internal/channel_call.h"

namespace h2rpc {

ClientContext::~ClientContext() = default;

void ClientContext::set_deadline(absl::Time deadline) {
  deadline_ = transport::io::MonotonicFromWall(deadline);
}

void ClientContext::set_timeout(absl::Duration timeout) {
  deadline_ = transport::io::MonotonicTime::Now() + timeout;
}

absl::Time ClientContext::deadline() const {
  return transport::io::WallFromMonotonic(deadline_);
}

void ClientContext::TryCancel() {
  transport::io::MutexLock lock(&mu_);
  cancelled_ = true;
  if (call_ != nullptr) call_->RequestCancel();
}

}  // namespace h2rpc
