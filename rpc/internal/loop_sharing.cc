#include "rpc/internal/loop_sharing.h"

#include "rpc/internal/client/channel_core.h"

namespace h2rpc::internal {

transport::io::EventLoop& ChannelLoop(Channel& channel) {
  return channel.core_->loop();
}

}  // namespace h2rpc::internal
