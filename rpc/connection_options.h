#ifndef H2RPC_RPC_CONNECTION_OPTIONS_H_
#define H2RPC_RPC_CONNECTION_OPTIONS_H_

#include <climits>
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "rpc/compression.h"

namespace h2rpc {

// Most busy-polling ChannelOptions::busy_poll_us and
// ServerOptions::busy_poll_us accept: one second. Microseconds.
inline constexpr int kMaxBusyPollUs = 1000000;

// Limits and HTTP/2 settings of one connection, for ChannelOptions::connection
// and ServerOptions::connection. Every field: default, unit. The transport
// has a struct of the same shape (transport::http2::ConnectionOptions); the
// two meet in one conversion
// (rpc/internal/common/connection_options_conversion.h), whose test checks that
// every field and default carries over.
struct ConnectionOptions {
  // SETTINGS_MAX_CONCURRENT_STREAMS we advertise (servers); a stream past
  // it is refused alone with RST_STREAM(REFUSED_STREAM). Streams.
  uint32_t max_concurrent_streams = 1024;
  // SETTINGS_INITIAL_WINDOW_SIZE we advertise. Bytes per stream.
  uint32_t initial_stream_window = 1 << 20;
  // Our connection-level receive window. Bytes.
  uint32_t connection_window = 16 << 20;
  // Receive windows sized by the path's bandwidth-delay product (gRPC's
  // BDP probing, GRPC_ARG_HTTP2_BDP_PROBE): while DATA arrives the
  // connection times PING round trips and, when a round trip's worth of
  // DATA fills most of the window, raises SETTINGS_INITIAL_WINDOW_SIZE (the
  // window of every open and new stream) to twice that, up to
  // max_receive_window, and the connection window with it when it is
  // smaller; after 10 s without DATA both go back. false: the windows stay
  // initial_stream_window and connection_window.
  bool bdp_probe = true;
  // The largest stream window BDP probing grows to: by default four times
  // connection_window, so that one stream carries about 4 Gbit/s across a
  // path of 100 ms round trip (three quarters of the window in flight, see
  // docs/design.md). Servers grow no stream window past a quarter of
  // connection_window (4 MiB by default) and never grow connection_window,
  // so a server's memory bounds (see memory_quota_share) do not change.
  // At or below initial_stream_window: no probing. Bytes.
  uint32_t max_receive_window = 64 << 20;
  // SETTINGS_MAX_FRAME_SIZE we advertise. Bytes.
  uint32_t max_frame_size = 16384;
  // SETTINGS_MAX_HEADER_LIST_SIZE we advertise (decoded size, 32 bytes of
  // overhead per field). A larger request header list is answered
  // RESOURCE_EXHAUSTED (servers); a larger response header list fails the
  // call with RESOURCE_EXHAUSTED (clients). Bytes.
  uint32_t max_header_list_size = 16384;
  // Largest message accepted (max_receive_message_size). Bytes.
  size_t max_receive_message_size = 4 << 20;
  // Servers: the most bytes of the server's memory quota
  // (ServerOptions::memory_quota) this connection may hold at once: received
  // messages that span DATA frames (each takes its declared length while it
  // is gathered) and response bytes waiting to be written. A message the
  // quota cannot grant yet waits with its flow-control credit withheld, so
  // the peer stalls, and is granted when memory frees up; a response that
  // does not fit fails its call with RESOURCE_EXHAUSTED. A received message
  // larger than this (or than the server's quota) is refused with
  // RESOURCE_EXHAUSTED, so a server refuses to start when it is smaller
  // than max_receive_message_size plus the 5-byte prefix, or larger than
  // ServerOptions::memory_quota.
  // How the bounds combine: outside the quota, a connection holds only what
  // its peer sent without credit, at most connection_window bytes (messages
  // queued unread, and messages waiting for a grant, which may hold at most
  // a quarter of it: a stream whose waiting bytes would pass that fails with
  // RESOURCE_EXHAUSTED; their gather buffers may take twice their bytes). So
  // one connection holds at most memory_quota_share + 2 x connection_window
  // of message bytes, and a server memory_quota + 2 x connection_window per
  // connection. Clients have no quota. Bytes.
  size_t memory_quota_share = 32 << 20;
  // Largest message sent (max_send_message_size); a larger one fails its
  // call with RESOURCE_EXHAUSTED and is never serialized. Bytes. The
  // default, 2147483647 (INT_MAX), is the largest message protobuf
  // serializes: a protobuf message above it is refused whatever this says.
  size_t max_send_message_size = INT_MAX;
  // The transport stops producing frames while this many bytes wait to be
  // written; besides them a connection keeps at most 16 times this in
  // finished bodies whose last bytes wait to be written (past that, those
  // bytes are copied and the body freed). Bytes.
  size_t write_buffer_limit = 256 << 10;
  // Message encodings this side decompresses, advertised in every call's
  // grpc-accept-encoding. A request in another encoding is answered
  // UNIMPLEMENTED (servers); a response in another encoding fails the call
  // with INTERNAL (clients). identity is always accepted.
  CompressionAlgorithmSet accepted_compression = CompressionAlgorithmSet::All();
  // The peer must complete its side of the handshake (the connection preface
  // and its first SETTINGS frame) within this time of the connection's
  // start, or the connection is closed (a server sends GOAWAY first).
  // Duration.
  absl::Duration handshake_timeout = absl::Seconds(5);
  // Servers: a connection that has written its last frame (a GOAWAY after
  // a protocol violation, a flood or a handshake timeout, or the end of a
  // graceful shutdown) half-closes and keeps its socket until the peer
  // closes too, at most this long, reading and discarding what the peer
  // still sends, so the GOAWAY is not lost to a TCP reset; then it closes
  // and fails its calls. Duration.
  absl::Duration close_linger = absl::Seconds(1);
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CONNECTION_OPTIONS_H_
