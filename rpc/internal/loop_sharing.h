#ifndef H2RPC_RPC_INTERNAL_LOOP_SHARING_H_
#define H2RPC_RPC_INTERNAL_LOOP_SHARING_H_

#include <vector>

#include "rpc/channel.h"
#include "rpc/server.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// A server on the event loops of channels: a handler's calls on the channel
// whose loop serves its call start, run and end on the handler's own thread,
// with no task crossing threads and no thread to wake (h2rpc_proxy).

// The loop `channel`'s connections and calls run on; it lives as long as
// the channel. Any thread.
transport::io::EventLoop& ChannelLoop(Channel& channel);

class ServerBuilderAccess {
 public:
  // The server `builder` builds serves its connections on `loops`, one
  // ServerLoop each, instead of on loops of its own (ServerOptions'
  // num_loops, loop_cpus and busy_poll_us then do not apply). The loops must
  // run from BuildAndStart until the server has shut down, and the server
  // must not be shut down or destroyed on one of their threads.
  static void RunOnLoops(Server::Builder& builder,
                         std::vector<transport::io::EventLoop*> loops) {
    builder.loops_ = std::move(loops);
  }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LOOP_SHARING_H_
