#include "rpc/internal/common/stream_quota.h"

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {

Status StreamQuota::Acquire(uint64_t connection_id) {
  if (open_ >= max_total_) {
    return Status(StatusCode::kResourceExhausted,
                  absl::StrCat(open_, " ", streams_, " are open, the limit (",
                               option_, ")"));
  }
  auto it = per_connection_.find(connection_id);
  const size_t on_connection = it == per_connection_.end() ? 0 : it->second;
  if (on_connection >= max_per_connection_) {
    return Status(StatusCode::kResourceExhausted,
                  absl::StrCat(on_connection, " ", streams_,
                               " are open on this connection, the limit (",
                               option_, "_per_connection)"));
  }
  ++open_;
  ++per_connection_[connection_id];
  return Status();
}

void StreamQuota::Release(uint64_t connection_id) {
  --open_;
  auto it = per_connection_.find(connection_id);
  if (--it->second == 0) per_connection_.erase(it);
}

}  // namespace h2rpc::internal
