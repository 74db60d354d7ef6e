#ifndef H2RPC_RPC_INTERNAL_CLIENT_CONNECTIVITY_WATCH_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CONNECTIVITY_WATCH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "base/mutex.h"
#include "rpc/connectivity_state.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

// A channel's connectivity state as the world sees it: set by the channel's
// loop thread on each transition, read and waited for from any thread.
// kShutdown is final: Set() ignores anything after it. Allocates nothing.
class ConnectivityWatch {
 public:
  explicit ConnectivityWatch(ConnectivityState initial);
  ConnectivityWatch(const ConnectivityWatch&) = delete;
  ConnectivityWatch& operator=(const ConnectivityWatch&) = delete;

  // Any thread (the channel's loop). A transition to the state it is in
  // already is no transition.
  void Set(ConnectivityState state);
  // Any thread.
  ConnectivityState Get() const;
  // Any thread: returns true as soon as the state is not `last_observed`,
  // or has changed since the call began (even if it changed back), false
  // at `deadline`.
  bool WaitForChange(ConnectivityState last_observed,
                     transport::io::MonotonicTime deadline);
  // Any thread: returns true once the state is kReady, false at `deadline`
  // or at kShutdown. Whenever it finds the state kIdle it calls `connect`
  // (under the watch's mutex: `connect` must not call back into it).
  bool WaitUntilReady(transport::io::MonotonicTime deadline,
                      absl::FunctionRef<void()> connect);
  // Any thread: moves to kShutdown, which releases every waiter, and
  // returns once none is left inside WaitForChange or WaitUntilReady.
  void Shutdown();

  // Any thread: how many times `state` was entered (the initial state
  // counts once); how many threads wait in WaitForChange or WaitUntilReady.
  int64_t entered(ConnectivityState state) const;
  int waiters() const;
  // Any thread: the first kHistory states, in order, the initial one
  // first. Allocates (tests).
  static constexpr size_t kHistory = 64;
  std::vector<ConnectivityState> history() const;

 private:
  // Waits until generation_ moves past `generation`; false at `deadline`.
  bool WaitPast(uint64_t generation, transport::io::MonotonicTime deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Leave() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  CondVar changed_;  // generation_ moved on
  CondVar left_;     // waiters_ dropped to 0
  ConnectivityState state_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  std::array<int64_t, 5> entered_ ABSL_GUARDED_BY(mu_) = {};
  std::array<ConnectivityState, kHistory> history_ ABSL_GUARDED_BY(mu_);
  size_t history_size_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CONNECTIVITY_WATCH_H_
