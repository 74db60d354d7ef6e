#ifndef H2RPC_TEST_SOAK_CALL_TALLY_H_
#define H2RPC_TEST_SOAK_CALL_TALLY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "rpc/status.h"

namespace h2rpc::testing {

// The kinds of call the soak's load makes.
enum class CallKind {
  kUnary,              // UnaryCall, failing fast
  kUnaryWaitForReady,  // UnaryCall with wait_for_ready and a long deadline
  kServerStreaming,    // StreamingOutputCall
  kBidiStreaming,      // FullDuplexCall, ping-pong
};
inline constexpr CallKind kCallKinds[] = {
    CallKind::kUnary, CallKind::kUnaryWaitForReady, CallKind::kServerStreaming,
    CallKind::kBidiStreaming};

absl::string_view CallKindName(CallKind kind);

// How the calls of one kind ended. Not thread-safe: the load keeps it under
// its lock.
struct KindTally {
  int64_t started = 0;
  int64_t ended = 0;
  std::map<StatusCode, int64_t> by_status;
  // Calls that ended OK with a response that was not what was asked for
  // (a wrong size, a missing message, no backend name).
  int64_t wrong_answers = 0;
  // The first few messages of calls that did not end OK, by status.
  std::map<StatusCode, std::vector<std::string>> examples;

  void Record(StatusCode code, absl::string_view message, bool wrong_answer);
  // "12345 started, 12345 ended: OK 12000, UNAVAILABLE 345".
  std::string ToString() const;
};

// Every kind's tally.
struct CallTally {
  std::map<CallKind, KindTally> kinds;

  // This tally plus `other`, kind by kind.
  void Add(const CallTally& other);
  int64_t started() const;
  int64_t ended() const;
  // One line per kind.
  std::string ToString() const;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_CALL_TALLY_H_
