#include "rpc/server_context.h"

#include <memory>

#include "transport/io/monotonic_time.h"

namespace h2rpc {

const AuthContext& ServerContext::auth_context() const {
  if (auth_context_ == nullptr) {
    auth_context_ = std::make_unique<AuthContext>(peer_identity_.get());
  }
  return *auth_context_;
}

absl::Time ServerContext::deadline() const {
  return transport::io::WallFromMonotonic(
      transport::io::MonotonicTime::FromSinceEpoch(monotonic_deadline_));
}

}  // namespace h2rpc
