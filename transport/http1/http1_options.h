#ifndef H2RPC_TRANSPORT_HTTP1_HTTP1_OPTIONS_H_
#define H2RPC_TRANSPORT_HTTP1_HTTP1_OPTIONS_H_

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"

namespace h2rpc::transport::http1 {

// The bounds of a server connection that speaks HTTP/1.1 (ServerBridge).
// Whatever the request carries (its messages, deadline, memory) is bounded
// by the HTTP/2 session's options as on an HTTP/2 connection.
struct Http1Options {
  // The request line's target. Longer: 414.
  size_t max_target_bytes = 8 * 1024;
  // The header section (names and values, 32 bytes per field besides).
  // Larger: 431.
  size_t max_header_bytes = 16 * 1024;
  // A connection waits this long for the first byte of its next request
  // (keep-alive), then closes.
  absl::Duration idle_timeout = absl::Seconds(60);
  // A request's head (request line and header section) must be complete
  // this long after its first byte: longer is answered 408 and the
  // connection closes (slow-loris).
  absl::Duration header_timeout = absl::Seconds(10);
  // Requests a connection answers; the last answer says Connection: close.
  uint32_t max_requests_per_connection = 10000;
  // Input held while the request before it is answered (pipelined requests)
  // or while its body waits for flow control; past it the connection reads
  // nothing until that input has gone on. Bytes.
  size_t max_buffered_input = 64 * 1024;
};

}  // namespace h2rpc::transport::http1

#endif  // H2RPC_TRANSPORT_HTTP1_HTTP1_OPTIONS_H_
