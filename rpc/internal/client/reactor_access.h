#ifndef H2RPC_RPC_INTERNAL_CLIENT_REACTOR_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CLIENT_REACTOR_ACCESS_H_

#include "rpc/client_stream.h"

namespace h2rpc::internal {

// The one way to bind a ClientStreamReactor to its call, for the channel
// that creates the call.
class ClientReactorAccess {
 public:
  // User thread, before the reactor can start anything.
  static void Bind(ClientStreamReactor* reactor, ClientStreamOperations* call) {
    reactor->call_ = call;
  }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_REACTOR_ACCESS_H_
