#ifndef H2RPC_RPC_INTERNAL_REACTOR_ACCESS_H_
#define H2RPC_RPC_INTERNAL_REACTOR_ACCESS_H_

#include "rpc/client_stream.h"

namespace h2rpc::internal {

// The one way to a ClientStreamReactor's call: the channel binds the call
// when it creates it, the blocking stream reaches it to cancel and release.
class ClientReactorAccess {
 public:
  // User thread, before the reactor can start anything.
  static void Bind(ClientStreamReactor* reactor, ClientStreamCall* call) {
    reactor->call_ = call;
  }
  static ClientStreamCall* Call(const ClientStreamReactor& reactor) {
    return reactor.call_;
  }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_REACTOR_ACCESS_H_
