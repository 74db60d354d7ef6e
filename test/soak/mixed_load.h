#ifndef H2RPC_TEST_SOAK_MIXED_LOAD_H_
#define H2RPC_TEST_SOAK_MIXED_LOAD_H_

#include <memory>

#include "absl/time/time.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "test/soak/call_tally.h"

namespace h2rpc::testing {

// Keeps a fixed number of calls of each kind (call_tally.h) in flight on a
// channel to soak backends: each call, once it ends, starts the next of its
// kind. Every call has a deadline, and its outcome is counted by kind and
// status (with a check of what came back).
//
// Threads: the constructor starts the first calls on the caller's thread;
// later ones start from completions, on the channel's loop thread. Stop,
// WaitAllEnded and Tally may be called from any other thread. The load
// does not own the channel; the caller keeps it until the load is
// destroyed.
class MixedLoad {
 public:
  struct Options {
    // Calls of each kind kept in flight.
    int unary = 8;
    int unary_wait_for_ready = 4;
    int server_streaming = 2;
    int bidi_streaming = 2;
    // Responses a StreamingOutputCall asks for; request/response rounds of a
    // FullDuplexCall.
    int stream_messages = 8;
    // Deadlines: of calls failing fast, and of wait_for_ready calls.
    absl::Duration call_timeout = absl::Seconds(20);
    absl::Duration wait_for_ready_timeout = absl::Seconds(120);
  };

  MixedLoad(std::shared_ptr<Channel> channel, Options options);
  // Stop()s and waits for the calls in flight (up to their deadline).
  ~MixedLoad();
  MixedLoad(const MixedLoad&) = delete;
  MixedLoad& operator=(const MixedLoad&) = delete;

  // No call starts from now on.
  void Stop();
  // Waits up to `timeout` for every started call to have ended; true if
  // they have.
  bool WaitAllEnded(absl::Duration timeout) const;
  // The outcomes so far.
  CallTally Tally() const;

 private:
  struct State;
  class Unary;
  class ServerStreaming;
  class BidiStreaming;

  // Starts a call of `kind` unless the load has stopped.
  static void StartNext(const std::shared_ptr<State>& state, CallKind kind);

  const std::unique_ptr<grpc::testing::TestService::Stub> stub_;
  const std::shared_ptr<State> state_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_MIXED_LOAD_H_
