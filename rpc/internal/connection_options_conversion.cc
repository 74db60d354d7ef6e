#include "rpc/internal/connection_options_conversion.h"

namespace h2rpc::internal {

transport::http2::ConnectionOptions ToTransportOptions(
    const ConnectionOptions& options) {
  transport::http2::ConnectionOptions out;
  out.max_concurrent_streams = options.max_concurrent_streams;
  out.initial_stream_window = options.initial_stream_window;
  out.connection_window = options.connection_window;
  out.max_frame_size = options.max_frame_size;
  out.max_header_list_size = options.max_header_list_size;
  out.max_receive_message_size = options.max_receive_message_size;
  out.memory_quota_share = options.memory_quota_share;
  out.max_send_message_size = options.max_send_message_size;
  out.write_buffer_limit = options.write_buffer_limit;
  out.accepted_compression = options.accepted_compression;
  out.handshake_timeout = options.handshake_timeout;
  out.idle_timeout = options.idle_timeout;
  out.close_linger = options.close_linger;
  return out;
}

}  // namespace h2rpc::internal
