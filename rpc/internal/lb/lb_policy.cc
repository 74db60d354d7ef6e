#include "rpc/internal/lb/lb_policy.h"

#include <cstring>

namespace h2rpc::internal {

bool SameAddress(const transport::io::SocketAddress& a,
                 const transport::io::SocketAddress& b) {
  return a.size == b.size && std::memcmp(&a.storage, &b.storage, a.size) == 0;
}

}  // namespace h2rpc::internal
