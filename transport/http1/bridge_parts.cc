#include "transport/http1/bridge_parts.h"

#include <algorithm>
#include <cstring>

namespace h2rpc::transport::http1 {

void FeedSessionOutput(nghttp2_session* session, io::ByteSession* inner,
                       const bool* inner_closed) {
  while (!*inner_closed) {
    const uint8_t* data;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n <= 0) return;
    inner->Feed(absl::string_view(reinterpret_cast<const char*>(data), n));
  }
}

bool IsConnectionSpecific(absl::string_view name) {
  return name == "connection" || name == "keep-alive" ||
         name == "proxy-connection" || name == "transfer-encoding" ||
         name == "upgrade";
}

void PendingBody::Reset() {
  DropHeld();
  complete_ = false;
}

ssize_t PendingBody::Take(uint8_t* buf, size_t length, uint32_t* data_flags,
                          size_t full, bool* drained_full) {
  *drained_full = false;
  const size_t n = std::min(length, held());
  if (n == 0 && !complete_) return NGHTTP2_ERR_DEFERRED;
  memcpy(buf, bytes_.data() + taken_, n);
  taken_ += n;
  if (taken_ == bytes_.size()) {
    *drained_full = bytes_.size() >= full;
    bytes_.clear();
    taken_ = 0;
    if (complete_) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  }
  return static_cast<ssize_t>(n);
}

}  // namespace h2rpc::transport::http1
