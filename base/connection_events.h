#ifndef H2RPC_BASE_CONNECTION_EVENTS_H_
#define H2RPC_BASE_CONNECTION_EVENTS_H_

#include <array>

#include "base/owned_counter.h"

namespace h2rpc {

// The HTTP/2 error codes a GOAWAY may carry that have names (RFC 9113
// section 7: NO_ERROR 0x0 to HTTP_1_1_REQUIRED 0xd).
inline constexpr int kHttp2ErrorCodes = 14;

// What a group of HTTP/2 connections (a server loop's) did, as call
// metrics count it: written by their sessions on the group's loop thread
// (one writer), read by any thread. Plain counters; never allocates.
struct ConnectionEventCounts {
  OwnedCounter opened;  // sessions started
  OwnedCounter closed;
  OwnedCounter streams_opened;
  OwnedCounter streams_closed;
  // Connections closed because the peer did not answer a keepalive PING.
  OwnedCounter keepalive_timeouts;
  // GOAWAY frames sent, by error code; codes without a name are not
  // counted.
  std::array<OwnedCounter, kHttp2ErrorCodes> goaways_sent;
};

}  // namespace h2rpc

#endif  // H2RPC_BASE_CONNECTION_EVENTS_H_
