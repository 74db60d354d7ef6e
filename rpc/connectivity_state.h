#ifndef H2RPC_RPC_CONNECTIVITY_STATE_H_
#define H2RPC_RPC_CONNECTIVITY_STATE_H_

#include "absl/strings/string_view.h"

namespace h2rpc {

// A Channel's connectivity state, as gRPC defines it
// (doc/connectivity-semantics-and-api.md; Channel::GetState).
enum class ConnectivityState {
  // No connection and no attempt under way: initially, after
  // ChannelOptions::idle_timeout without calls, and after the connection
  // was closed or the server sent GOAWAY. A call (or GetState(true))
  // starts connecting.
  kIdle,
  // An attempt is under way: resolving the target, the TCP connect, the TLS
  // handshake and the server's HTTP/2 handshake (its SETTINGS frame). Calls
  // wait for it.
  kConnecting,
  // The server completed its HTTP/2 handshake: calls go out at once.
  kReady,
  // The last attempt failed; the channel waits out its reconnect backoff,
  // then tries again. Calls fail at once with UNAVAILABLE and the attempt's
  // error, except wait_for_ready calls, which wait for kReady.
  kTransientFailure,
  // The channel is being destroyed. Final.
  kShutdown,
};

// "IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE" or "SHUTDOWN" (gRPC's
// names). Never allocates.
constexpr absl::string_view ConnectivityStateName(ConnectivityState state) {
  switch (state) {
    case ConnectivityState::kIdle:
      return "IDLE";
    case ConnectivityState::kConnecting:
      return "CONNECTING";
    case ConnectivityState::kReady:
      return "READY";
    case ConnectivityState::kTransientFailure:
      return "TRANSIENT_FAILURE";
    case ConnectivityState::kShutdown:
      return "SHUTDOWN";
  }
  return "UNKNOWN";
}

}  // namespace h2rpc

#endif  // H2RPC_RPC_CONNECTIVITY_STATE_H_
