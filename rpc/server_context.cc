#include "rpc/server_context.h"

#include "transport/http2/server_session.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc {

const Metadata& ServerContext::client_metadata() const {
  return stream_->client_metadata();
}

absl::Time ServerContext::deadline() const {
  return transport::io::WallFromMonotonic(stream_->deadline());
}

absl::string_view ServerContext::method() const { return stream_->method(); }

absl::string_view ServerContext::authority() const {
  return stream_->authority();
}

CompressionAlgorithmSet ServerContext::client_accepted_compression() const {
  return stream_->client_accepted_encodings();
}

CompressionAlgorithm ServerContext::ResponseCompression(
    CompressionAlgorithm server_default) const {
  const CompressionAlgorithm chosen = compression_.value_or(server_default);
  return stream_->client_accepted_encodings().Contains(chosen)
             ? chosen
             : CompressionAlgorithm::kIdentity;
}

void ServerContext::Bind(transport::http2::ServerStream* stream,
                         internal::CancellableServerCall* call) {
  stream_ = stream;
  call_ = call;
  peer_ = stream->peer();
  cancelled_.store(false, std::memory_order_relaxed);
}

void ServerContext::Reset() {
  stream_ = nullptr;
  peer_.clear();
  compression_.reset();
  last_message_compressed_ = false;
  initial_metadata_.Clear();
  trailing_metadata_.Clear();
}

}  // namespace h2rpc
