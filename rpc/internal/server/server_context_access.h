#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_CONTEXT_ACCESS_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_CONTEXT_ACCESS_H_

#include <atomic>

#include "rpc/compression.h"
#include "rpc/internal/context_link.h"
#include "rpc/metadata.h"
#include "rpc/server_context.h"

namespace h2rpc {

namespace transport::http2 {
class ServerStream;
}  // namespace transport::http2

namespace internal {

// The one way into a ServerContext's call state, for the server's calls.
// Static functions only, loop thread unless stated; none allocates except
// Bind (the peer's address, when longer than a short string).
class ServerContextAccess {
 public:
  // A context for a call object to own (bound to nothing yet).
  static ServerContext Make() { return ServerContext(); }
  // The context serves a new call on `stream` (before the handler can see
  // it): copies what the accessors show. `stream` must outlive the binding
  // (until Reset).
  static void Bind(ServerContext* context,
                   const transport::http2::ServerStream& stream,
                   CancellableServerCall* call);
  // Any thread: the call was cancelled. So are the client calls made from
  // the context that inherit its cancellation.
  static void MarkCancelled(ServerContext* context) {
    // Sequentially consistent with ContextLink::Link's.
    context->cancelled_.store(true, std::memory_order_seq_cst);
    if (context->first_child_.load(std::memory_order_seq_cst) != nullptr) {
      ContextLink::CancelChildren(*context);
    }
  }
  // The call is over: cancels the client calls made from the context that
  // still run and inherit its cancellation, and clears the context for the
  // next call.
  static void Reset(ServerContext* context);
  // The auth context the processor writes (built now if need be).
  static AuthContext* MutableAuthContext(ServerContext* context) {
    context->auth_context();
    return context->auth_context_.get();
  }
  // The response's encoding: the chosen one (or `server_default`) if the
  // client accepts it, else identity.
  static CompressionAlgorithm ResponseCompression(
      const ServerContext& context, CompressionAlgorithm server_default) {
    const CompressionAlgorithm chosen =
        context.compression_.value_or(server_default);
    return context.client_accepted_.Contains(chosen)
               ? chosen
               : CompressionAlgorithm::kIdentity;
  }
  // The call's span and the request's tracestate (a view into the
  // stream's metadata, valid while the call runs).
  static void SetTrace(ServerContext* context, const TraceContext& span,
                       absl::string_view trace_state) {
    context->trace_context_ = span;
    context->trace_state_ = trace_state;
  }
  static void SetLastMessageCompressed(ServerContext* context,
                                       bool compressed) {
    context->last_message_compressed_ = compressed;
  }
  // The metadata the handler added, to send.
  static Metadata& InitialMetadata(ServerContext* context) {
    return context->initial_metadata_;
  }
  static Metadata& TrailingMetadata(ServerContext* context) {
    return context->trailing_metadata_;
  }
};

}  // namespace internal
}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_CONTEXT_ACCESS_H_
