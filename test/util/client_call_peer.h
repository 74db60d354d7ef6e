#ifndef H2RPC_TEST_UTIL_CLIENT_CALL_PEER_H_
#define H2RPC_TEST_UTIL_CLIENT_CALL_PEER_H_

#include <atomic>
#include <cstddef>

#include "rpc/client_context.h"
#include "rpc/internal/client/client_context_access.h"

namespace h2rpc::testing {

// Test-only views of a client call through its ClientContext, so a test can
// wait for a state of the call instead of sleeping. Any thread may call
// them while the context lives; they allocate nothing.
class ClientCallPeer {
 public:
  // True while a call is bound to `context`: from when a Channel method set
  // the call up (before it returned) until the call's status became known on
  // the channel's loop (the server's trailers, a reset, a cancel, a
  // deadline). A streaming call's OnDone may come later, once its queued
  // messages are read.
  static bool CallBound(ClientContext* context) {
    return internal::ClientContextAccess::CallBound(context);
  }

  // Bytes of response messages the streaming call on `context` holds unread
  // (each message's 5-byte prefix included), counted against the server's
  // flow-control window until read. 0 for a unary call.
  static size_t HeldBytes(const ClientContext* context) {
    return internal::ClientContextAccess::HeldBytes(context).load(
        std::memory_order_relaxed);
  }
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_CLIENT_CALL_PEER_H_
