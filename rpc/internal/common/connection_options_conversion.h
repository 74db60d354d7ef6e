#ifndef H2RPC_RPC_INTERNAL_COMMON_CONNECTION_OPTIONS_CONVERSION_H_
#define H2RPC_RPC_INTERNAL_COMMON_CONNECTION_OPTIONS_CONVERSION_H_

#include "rpc/connection_options.h"
#include "transport/http2/session.h"

namespace h2rpc {
struct ServerOptions;

namespace internal {

// The transport's copy of `options`, field by field: the only place where
// the public ConnectionOptions and transport::http2::ConnectionOptions meet.
// The keepalive settings keep the transport's defaults (all off). Called
// once per Channel or Server; copies a few dozen bytes.
transport::http2::ConnectionOptions ToTransportOptions(
    const ConnectionOptions& options);

// A server's connection options: options.connection, and the keepalive
// settings from options' connection-management fields
// (keepalive_permit_without_calls governs both the server's own PINGs and
// PING enforcement, as GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS does in gRPC
// C++). Called once per Server.
transport::http2::ConnectionOptions ToServerTransportOptions(
    const ServerOptions& options);

}  // namespace internal
}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERNAL_COMMON_CONNECTION_OPTIONS_CONVERSION_H_
