#include "rpc/internal/server/server_context_access.h"

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/http2/server_session.h"

namespace h2rpc::internal {

void ServerContextAccess::Bind(ServerContext* context,
                               const transport::http2::ServerStream& stream,
                               CancellableServerCall* call) {
  context->client_metadata_ = &stream.client_metadata();
  context->method_ = stream.method();
  context->authority_ = stream.authority();
  context->monotonic_deadline_ = stream.deadline().since_epoch();
  context->previous_rpc_attempts_ = stream.previous_rpc_attempts();
  context->client_accepted_ = stream.client_accepted_encodings();
  context->client_compression_ = stream.receive_encoding();
  context->call_ = call;
  context->connection_id_ = stream.connection_id();
  context->peer_ = stream.peer();
  context->peer_identity_ = stream.peer_identity();
  context->cancelled_.store(false, std::memory_order_relaxed);
  context->ended_.store(false, std::memory_order_relaxed);
}

void ServerContextAccess::Reset(ServerContext* context) {
  // Sequentially consistent with ContextLink::Link's.
  context->ended_.store(true, std::memory_order_seq_cst);
  if (context->first_child_.load(std::memory_order_seq_cst) != nullptr) {
    ContextLink::EndChildren(*context);
  }
  context->client_metadata_ = nullptr;
  context->method_ = absl::string_view();
  context->authority_ = absl::string_view();
  context->monotonic_deadline_ = absl::InfiniteDuration();
  context->previous_rpc_attempts_ = 0;
  context->client_accepted_ = CompressionAlgorithmSet();
  context->client_compression_ = CompressionAlgorithm::kIdentity;
  context->connection_id_ = 0;
  context->peer_.clear();
  context->peer_identity_.reset();
  context->auth_context_.reset();
  context->compression_.reset();
  context->last_message_compressed_ = false;
  context->initial_metadata_.Clear();
  context->trailing_metadata_.Clear();
}

}  // namespace h2rpc::internal
