#ifndef H2RPC_RPC_INTERNAL_CONTEXT_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CONTEXT_ACCESS_H_

#include <atomic>
#include <cstddef>

#include "rpc/client_context.h"
#include "rpc/compression.h"
#include "rpc/metadata.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc {

namespace transport::http2 {
class ServerStream;
}  // namespace transport::http2

namespace internal {

class ChannelCall;

// The one way into a ClientContext's call state, for the channel's calls
// (and test/util/client_call_peer.h). Static functions only; none allocates.
class ClientContextAccess {
 public:
  // The call's deadline on the monotonic clock.
  // Whether set_wait_for_ready was called.
  static bool WaitForReadySet(const ClientContext& context) {
    return context.wait_for_ready_set_;
  }
  static transport::io::MonotonicTime Deadline(const ClientContext& context) {
    return transport::io::MonotonicTime::FromSinceEpoch(
        context.monotonic_deadline_);
  }
  // User thread, as the call starts: links `call` to `context` for
  // TryCancel. CANCELLED (and not linked) if the context was cancelled
  // already.
  static Status Bind(ClientContext* context, ChannelCall* call);
  // Loop thread: the call's result is known; TryCancel no longer reaches it
  // and does nothing until another call is bound.
  static void Unbind(ClientContext* context);
  // Any thread: whether a call is linked to `context`.
  static bool CallBound(ClientContext* context);

  // Loop thread: where the server's metadata goes.
  static Metadata& InitialMetadata(ClientContext* context) {
    return context->initial_metadata_;
  }
  static Metadata& TrailingMetadata(ClientContext* context) {
    return context->trailing_metadata_;
  }
  // Loop thread.
  static void SetLastMessageCompressed(ClientContext* context,
                                       bool compressed) {
    context->last_message_compressed_ = compressed;
  }
  // Bytes of response messages the streaming call holds unread: written on
  // the loop thread, read from any.
  static std::atomic<size_t>& HeldBytes(ClientContext* context) {
    return context->held_bytes_;
  }
  static const std::atomic<size_t>& HeldBytes(const ClientContext* context) {
    return context->held_bytes_;
  }
};

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
  // Any thread: the call was cancelled.
  static void MarkCancelled(ServerContext* context) {
    context->cancelled_.store(true, std::memory_order_release);
  }
  // The call is over: clears the context for the next one.
  static void Reset(ServerContext* context);
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

#endif  // H2RPC_RPC_INTERNAL_CONTEXT_ACCESS_H_
