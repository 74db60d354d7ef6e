#ifndef H2RPC_RPC_INTERNAL_CLIENT_CONNECTION_BACKOFF_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CONNECTION_BACKOFF_H_

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/scheduler.h"

namespace h2rpc::internal {

// When a channel may start its next connection attempt, and how long each
// attempt may take, exactly as gRPC's connection-backoff.md says:
//
//   ConnectWithBackoff()
//     current_backoff = INITIAL_BACKOFF
//     current_deadline = now() + INITIAL_BACKOFF
//     while (TryConnect(Max(current_deadline, now() + MIN_CONNECT_TIMEOUT))
//            != SUCCESS)
//       SleepUntil(current_deadline)
//       current_backoff = Min(current_backoff * MULTIPLIER, MAX_BACKOFF)
//       current_deadline = now() + current_backoff +
//         UniformRandom(-JITTER * current_backoff, JITTER * current_backoff)
//
// The caller runs the loop: BeginAttempt() at each TryConnect, and waits
// until next_attempt_time() after a failure, so attempts start at most once
// per backoff period. Reset() (a connection completed its HTTP/2
// handshake, when the server's SETTINGS arrived) starts the schedule over.
//
// Time comes from the injected Scheduler's Now(), randomness from the
// injected function, so tests run it on a fake clock. Not thread-safe: the
// scheduler's thread. Allocates nothing after construction.
class ConnectionBackoff {
 public:
  struct Options {
    // INITIAL_BACKOFF, MULTIPLIER, JITTER, MAX_BACKOFF, MIN_CONNECT_TIMEOUT.
    // Valid values: initial_backoff > 0, multiplier >= 1, 0 <= jitter < 1,
    // max_backoff >= initial_backoff, min_connect_timeout > 0, all finite.
    absl::Duration initial_backoff = absl::Seconds(1);
    double multiplier = 1.6;
    double jitter = 0.2;
    absl::Duration max_backoff = absl::Seconds(120);
    absl::Duration min_connect_timeout = absl::Seconds(20);
  };
  // A uniformly distributed number in [0, 1).
  using Uniform01 = absl::AnyInvocable<double()>;

  // `clock` must outlive the object. `random` null: a generator of its own,
  // seeded from std::random_device, so that channels started together
  // disperse.
  ConnectionBackoff(const Options& options,
                    const transport::io::Scheduler* clock,
                    Uniform01 random = nullptr);

  // An attempt starts now. Returns its deadline, Max(current_deadline,
  // now + min_connect_timeout), and moves next_attempt_time() on.
  transport::io::MonotonicTime BeginAttempt();
  // The spec's current_deadline: the earliest start of the attempt after
  // the one begun last. InfinitePast before the first attempt and after
  // Reset(): the next attempt may start at once.
  transport::io::MonotonicTime next_attempt_time() const {
    return current_deadline_;
  }
  // The spec's current_backoff of the attempt begun last.
  absl::Duration current_backoff() const { return current_backoff_; }
  // A connection completed its handshake: the next attempt may start at
  // once, and starts the schedule over from initial_backoff.
  void Reset();

 private:
  const Options options_;
  const transport::io::Scheduler* const clock_;
  Uniform01 random_;
  bool first_ = true;
  absl::Duration current_backoff_;
  transport::io::MonotonicTime current_deadline_ =
      transport::io::MonotonicTime::InfinitePast();
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CONNECTION_BACKOFF_H_
