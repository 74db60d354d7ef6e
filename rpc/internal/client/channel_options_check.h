#ifndef H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_OPTIONS_CHECK_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_OPTIONS_CHECK_H_

#include "rpc/channel_options.h"
#include "rpc/status.h"

namespace h2rpc::internal {

// OK if the connection-management fields of `options` (connecting, backoff,
// idle timeout, keepalive, load balancing) and busy_poll_us hold valid values;
// otherwise INVALID_ARGUMENT naming the first bad field, its value and the rule
// it breaks. Any thread.
Status CheckChannelOptions(const ChannelOptions& options);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_OPTIONS_CHECK_H_
