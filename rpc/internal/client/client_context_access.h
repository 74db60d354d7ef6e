#ifndef H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CONTEXT_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CONTEXT_ACCESS_H_

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "rpc/client_context.h"
#include "rpc/metadata.h"
#include "rpc/status.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

// The one way into a ClientContext's call state, for the channel's calls
// (and test/util/client_call_peer.h). Static functions only; none allocates.
class ClientContextAccess {
 public:
  // Whether set_wait_for_ready was called.
  static bool WaitForReadySet(const ClientContext& context) {
    return context.wait_for_ready_set_;
  }
  // The call's deadline on the monotonic clock: the earlier of the
  // context's own and the one it inherited.
  static transport::io::MonotonicTime Deadline(const ClientContext& context) {
    return transport::io::MonotonicTime::FromSinceEpoch(
        std::min(context.monotonic_deadline_, context.inherited_deadline_));
  }
  // User thread, as the call starts: links `call` to `context` for
  // TryCancel. CANCELLED (and not linked) if the context was cancelled
  // already.
  static Status Bind(ClientContext* context, CancellableClientCall* call);
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
  // Loop thread: the response's grpc-encoding.
  static void SetServerCompression(ClientContext* context,
                                   CompressionAlgorithm algorithm) {
    context->server_compression_ = algorithm;
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

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CONTEXT_ACCESS_H_
