#ifndef H2RPC_TEST_LB_CALL_RUNNER_H_
#define H2RPC_TEST_LB_CALL_RUNNER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/channel.h"
#include "rpc/status.h"

namespace h2rpc::testing {

// One grpc.testing.TestService/UnaryCall made by a CallRunner.
struct CallRecord {
  // When the call was handed to the channel (wall clock).
  absl::Time start;
  bool done = false;
  // Once done: the status, and the answering backend's name (the
  // response's `hostname`; empty when the call failed).
  StatusCode code = StatusCode::kOk;
  std::string message;
  std::string backend;
};

// Keeps a number of asynchronous UnaryCalls in flight on a channel, each
// started as the one before it completes, and records every call: when it
// started and which backend answered. For load-balancing tests that count
// calls per backend over time.
//
// Threads: the constructor starts the first calls on the caller's thread;
// later calls start from the completions, on the channel's loop thread.
// Every method may be called from any thread but the loop's (the waits
// block). Each call allocates its context and messages, freed when it
// completes.
class CallRunner {
 public:
  struct Options {
    // Calls kept in flight.
    int in_flight = 64;
    // Calls to make in all; -1: until Stop().
    int64_t total = -1;
    // ClientContext::set_wait_for_ready of every call.
    bool wait_for_ready = false;
    // Each call's deadline, from its start.
    absl::Duration call_timeout = absl::Seconds(30);
  };

  // Starts the first min(in_flight, total) calls.
  CallRunner(std::shared_ptr<Channel> channel, Options options);
  // Stop()s and waits up to 30 s for the calls in flight; calls that are
  // still in flight then complete into state they share, never into freed
  // memory.
  ~CallRunner();
  CallRunner(const CallRunner&) = delete;
  CallRunner& operator=(const CallRunner&) = delete;

  // No call starts from now on.
  void Stop();

  // Calls started so far. A call's index (in Records()) is the number of
  // calls started before it, and start times grow with the index.
  int64_t started() const;
  // Calls completed so far.
  int64_t completed() const;
  // Waits up to `timeout` for `n` calls to have completed; true if they
  // have.
  bool WaitForCompleted(int64_t n, absl::Duration timeout) const;
  // Waits up to `timeout` for every started call to complete, and for no
  // call to be left to start (total reached, or stopped); true if so.
  bool WaitAllDone(absl::Duration timeout) const;
  // Waits up to `timeout` for `n` calls started at or after `time` to have
  // completed; true if they have.
  bool WaitForCompletedStartedAfter(absl::Time time, int64_t n,
                                    absl::Duration timeout) const;

  // Waits up to `timeout` for `backend` to answer a call started at or
  // after `time`; true if it has.
  bool WaitForAnswerFrom(absl::string_view backend, absl::Time time,
                         absl::Duration timeout) const;

  // A copy of every call's record, in start order.
  std::vector<CallRecord> Records() const;

 private:
  struct State;

  // Starts the next call unless none may start. Any thread.
  static void StartNext(const std::shared_ptr<State>& state);

  const std::shared_ptr<State> state_;
};

// Makes blocking calls of TestService/UnaryCall (wait_for_ready) on
// `channel` until each of `names` has answered one (true) or `timeout`
// passes (false, with `*seen` listing who answered). Round-robin picks only
// READY backends, so this waits until all are.
bool AllAnswer(Channel& channel, const std::set<std::string>& names,
               absl::Duration timeout, std::string* seen);

// Successful calls per backend among `records[from, to)`.
std::map<std::string, int64_t> CountByBackend(
    const std::vector<CallRecord>& records, size_t from, size_t to);

// "name=count, ..."
std::string Describe(const std::map<std::string, int64_t>& counts);

// The failed (or unfinished) calls among `records`: how many, and the first
// few; empty if none.
std::string Failures(const std::vector<CallRecord>& records);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_LB_CALL_RUNNER_H_
