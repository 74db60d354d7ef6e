#include "rpc/internal/common/connection_options_conversion.h"

#include <memory>

#include "rpc/internal/common/protobuf_connect_codec.h"
#include "rpc/server_options.h"

namespace h2rpc::internal {

transport::http2::ConnectionOptions ToTransportOptions(
    const ConnectionOptions& options) {
  transport::http2::ConnectionOptions out;
  out.max_concurrent_streams = options.max_concurrent_streams;
  out.initial_stream_window = options.initial_stream_window;
  out.connection_window = options.connection_window;
  out.bdp_probe = options.bdp_probe;
  out.max_receive_window = options.max_receive_window;
  out.max_frame_size = options.max_frame_size;
  out.max_header_list_size = options.max_header_list_size;
  out.max_receive_message_size = options.max_receive_message_size;
  out.memory_quota_share = options.memory_quota_share;
  out.max_send_message_size = options.max_send_message_size;
  out.write_buffer_limit = options.write_buffer_limit;
  out.accepted_compression = options.accepted_compression;
  out.handshake_timeout = options.handshake_timeout;
  out.close_linger = options.close_linger;
  return out;
}

transport::http2::ConnectionOptions ToServerTransportOptions(
    const ServerOptions& options) {
  transport::http2::ConnectionOptions out =
      ToTransportOptions(options.connection);
  transport::http2::KeepaliveOptions& keepalive = out.keepalive;
  keepalive.time = options.keepalive_time;
  keepalive.timeout = options.keepalive_timeout;
  keepalive.permit_without_calls = options.keepalive_permit_without_calls;
  keepalive.min_time = options.keepalive_min_time;
  keepalive.permit_pings_without_calls = options.keepalive_permit_without_calls;
  keepalive.max_ping_strikes = options.max_ping_strikes;
  keepalive.max_connection_idle = options.max_connection_idle;
  keepalive.max_connection_age = options.max_connection_age;
  keepalive.max_connection_age_grace = options.max_connection_age_grace;
  out.web.grpc_web = options.web.grpc_web;
  out.web.connect = options.web.connect;
  out.web.http1.max_header_bytes = options.connection.max_header_list_size;
  out.web.http1.idle_timeout = options.web.http1_idle_timeout;
  out.web.http1.header_timeout = options.web.http1_header_timeout;
  out.web.http1.max_requests_per_connection =
      static_cast<uint32_t>(options.web.http1_max_requests_per_connection);
  out.web.http1.max_target_bytes =
      static_cast<size_t>(options.web.http1_max_target_bytes);
  out.web.http1.max_buffered_input =
      static_cast<size_t>(options.web.http1_max_buffered_input_bytes);
  if (options.web.connect) {
    out.web.connect_codec = std::make_shared<const ProtobufConnectCodec>();
  }
  if (!options.web.cors_allowed_origins.empty()) {
    out.web.cors = std::make_shared<const transport::CorsPolicy>(
        options.web.cors_allowed_origins, options.web.cors_max_age_seconds,
        /*allow_get=*/options.web.connect, options.web.cors_exposed_headers);
  }
  return out;
}

}  // namespace h2rpc::internal
