#include "rpc/server_context.h"

#include "transport/io/monotonic_time.h"

namespace h2rpc {

absl::Time ServerContext::deadline() const {
  return transport::io::WallFromMonotonic(
      transport::io::MonotonicTime::FromSinceEpoch(monotonic_deadline_));
}

}  // namespace h2rpc
