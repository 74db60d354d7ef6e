#ifndef H2RPC_TRANSPORT_CORE_CALL_SETUP_H_
#define H2RPC_TRANSPORT_CORE_CALL_SETUP_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/header_list.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::transport {

// What a client call puts in its request HEADERS frame. The call owns every
// string and the metadata; they must stay valid until the HEADERS frame has
// been submitted, since the header list points at them without copying.
struct CallDescription {
  // ":path": "/package.Service/Method". Required; must start with '/'.
  absl::string_view method_path;
  // ":authority" (host[:port] of the target). Required: HTTP/2 servers such
  // as nghttp2's reject a request without it.
  absl::string_view authority;
  // ":scheme": "http" or "https".
  absl::string_view scheme = "http";
  // "user-agent", e.g. "h2rpc-cpp/0.1". Empty: omitted.
  absl::string_view user_agent;
  // Absolute deadline on the monotonic clock; sent as the remaining time in
  // "grpc-timeout". InfiniteFuture (the default): no grpc-timeout.
  io::MonotonicTime deadline = io::MonotonicTime::InfiniteFuture();
  // "grpc-encoding" of the messages this call sends. Empty or "identity":
  // omitted.
  absl::string_view send_encoding;
  // "grpc-accept-encoding", e.g. "gzip,deflate". Empty: omitted.
  absl::string_view accept_encodings;
  // "grpc-previous-rpc-attempts" for a retried call. 0: omitted.
  int previous_attempts = 0;
  // W3C trace context: "traceparent" and "tracestate". Empty: omitted.
  // Like the metadata, they must outlive the HEADERS frame.
  absl::string_view traceparent;
  absl::string_view tracestate;
  // A Connect unary call (transport/core/connect_protocol.h) instead of
  // gRPC: content-type application/proto, connect-protocol-version and
  // connect-timeout-ms instead of te and grpc-timeout, content-encoding and
  // accept-encoding instead of grpc-encoding and grpc-accept-encoding, no
  // grpc-previous-rpc-attempts.
  bool connect_unary = false;
  // With connect_unary: the message is JSON (content-type
  // application/json).
  bool connect_json = false;
  // User metadata, sent after the transport's fields. Null: none.
  const Metadata* metadata = nullptr;
  // Metadata from call credentials, sent after the user's, in order; not
  // validated here (their source did). Null: none.
  const Metadata* credential_metadata[2] = {nullptr, nullptr};
};

// The number of header fields BuildRequestHeaders emits for `call`: exact,
// but for a Connect call whose deadline is too far for connect-timeout-ms
// (one fewer is emitted). Absent optional fields are not counted.
size_t CountRequestHeaderFields(const CallDescription& call);

// Fills `headers` with the request header list for `call`, in the order
// PROTOCOL-HTTP2 gives (pseudo-headers first, as HTTP/2 requires):
//   :method POST, :scheme, :path, :authority, te: trailers, [grpc-timeout],
//   content-type: application/grpc, [grpc-encoding], [grpc-accept-encoding],
//   [user-agent], [grpc-previous-rpc-attempts], [traceparent],
//   [tracestate], user metadata..., credential metadata...
// A Connect unary call (`call.connect_unary`) has connect-protocol-version:
// 1 and [connect-timeout-ms] in place of te and grpc-timeout, content-type
// application/proto (application/json with `call.connect_json`), and
// [content-encoding], [accept-encoding] in place of
// the grpc- ones, and no grpc-previous-rpc-attempts.
// Reserves the field vector once with CountRequestHeaderFields(): a fresh
// HeaderList makes one allocation for the fields (plus one for the base64 of
// -bin metadata, if any); a reused one makes none once warm. grpc-timeout is
// rounded up from `deadline - now`. grpc-timeout and traceparent, which
// differ on every call, are marked NGHTTP2_NV_FLAG_NO_INDEX.
//
// Fails before building anything, leaving `headers` untouched:
//   DEADLINE_EXCEEDED if the deadline is at or before `now` (no stream should
//     be opened);
//   INTERNAL if the method path is empty or does not start with '/', the
//     authority is empty, or the user metadata is invalid (the message names
//     the key).
Status BuildRequestHeaders(const CallDescription& call, io::MonotonicTime now,
                           HeaderList* headers);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_CALL_SETUP_H_
