#ifndef H2RPC_RPC_INTERNAL_CHANNEL_CORE_ACCESS_H_
#define H2RPC_RPC_INTERNAL_CHANNEL_CORE_ACCESS_H_

#include "rpc/channel.h"
#include "rpc/internal/client/channel_core.h"

namespace h2rpc::internal {

// Tests reach a Channel's core through it.
class ChannelCoreAccess {
 public:
  static ChannelCore& Core(Channel& channel) { return *channel.core_; }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CHANNEL_CORE_ACCESS_H_
