#include "rpc/server_context.h"

#include "transport/http2/server_connection.h"

namespace h2rpc {

const Metadata& ServerContext::client_metadata() const {
  return stream_->client_metadata();
}

absl::Time ServerContext::deadline() const { return stream_->deadline(); }

absl::string_view ServerContext::method() const { return stream_->method(); }

absl::string_view ServerContext::authority() const {
  return stream_->authority();
}

bool ServerContext::IsCancelled() const { return stream_->cancelled(); }

void ServerContext::Reset() {
  stream_ = nullptr;
  peer_.clear();
  initial_metadata_.Clear();
  trailing_metadata_.Clear();
}

}  // namespace h2rpc
