#ifndef H2RPC_TEST_SOAK_ABUSE_PROBES_H_
#define H2RPC_TEST_SOAK_ABUSE_PROBES_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace h2rpc::testing {

// Hostile-peer probes the soak sends to its backends while they serve the
// load, each a small, bounded form of an attack of test/abuse (a few
// seconds, a few MiB at most, so that the other clients of the backend are
// slowed, not starved). A probe runs on the caller's thread, against a
// backend's plaintext port (and TLS port) directly, not through a proxy,
// and returns what the attacker saw, in a few words. Probes that hold
// something (streams, connections) check, while they hold it, that the
// backend answers a fresh call, and say so in what they return: "fresh call
// answered while held", or kNotAnsweredWhileHeld and why.
inline constexpr char kNotAnsweredWhileHeld[] =
    "fresh call NOT answered while held";

struct AbuseProbe {
  const char* name;
  std::string (*run)(int plain_port, int tls_port);
};

// Every probe, in a fixed order.
const std::vector<AbuseProbe>& AbuseProbes();

// A grpc.testing.TestService/UnaryCall on a new plaintext connection to
// 127.0.0.1:port: true if it ended with grpc-status 0 within `timeout`;
// otherwise `*error` says what came back.
bool AnswersFreshCall(int port, absl::Duration timeout, std::string* error);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_ABUSE_PROBES_H_
