#include "rpc/client_context.h"

#include "absl/time/clock.h"
#include "rpc/internal/channel_call.h"

namespace h2rpc {

ClientContext::~ClientContext() = default;

void ClientContext::set_timeout(absl::Duration timeout) {
  deadline_ = absl::Now() + timeout;
}

void ClientContext::TryCancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (call_ != nullptr) call_->RequestCancel();
}

}  // namespace h2rpc
