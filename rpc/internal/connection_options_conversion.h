#ifndef H2RPC_RPC_INTERNAL_CONNECTION_OPTIONS_CONVERSION_H_
#define H2RPC_RPC_INTERNAL_CONNECTION_OPTIONS_CONVERSION_H_

#include "rpc/connection_options.h"
#include "transport/http2/session.h"

namespace h2rpc::internal {

// The transport's copy of `options`, field by field: the only place where
// the public ConnectionOptions and transport::http2::ConnectionOptions meet.
// Called once per Channel or Server; copies a few dozen bytes.
transport::http2::ConnectionOptions ToTransportOptions(
    const ConnectionOptions& options);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CONNECTION_OPTIONS_CONVERSION_H_
