#include "rpc/internal/client/connectivity_watch.h"

namespace h2rpc::internal {

ConnectivityWatch::ConnectivityWatch(ConnectivityState initial)
    : state_(initial) {
  entered_[static_cast<size_t>(initial)] = 1;
  history_[history_size_++] = initial;
}

void ConnectivityWatch::Set(ConnectivityState state) {
  MutexLock lock(&mu_);
  if (state_ == state || state_ == ConnectivityState::kShutdown) return;
  state_ = state;
  ++generation_;
  ++entered_[static_cast<size_t>(state)];
  if (history_size_ < kHistory) history_[history_size_++] = state;
  if (waiters_ > 0) changed_.SignalAll();
}

ConnectivityState ConnectivityWatch::Get() const {
  MutexLock lock(&mu_);
  return state_;
}

bool ConnectivityWatch::WaitForChange(ConnectivityState last_observed,
                                      transport::io::MonotonicTime deadline) {
  MutexLock lock(&mu_);
  if (state_ != last_observed) return true;
  ++waiters_;
  const bool changed = WaitPast(generation_, deadline);
  Leave();
  return changed;
}

bool ConnectivityWatch::WaitUntilReady(transport::io::MonotonicTime deadline,
                                       absl::FunctionRef<void()> connect) {
  MutexLock lock(&mu_);
  ++waiters_;
  bool ready = false;
  for (;;) {
    if (state_ == ConnectivityState::kReady) {
      ready = true;
      break;
    }
    if (state_ == ConnectivityState::kShutdown) break;
    if (state_ == ConnectivityState::kIdle) connect();
    if (!WaitPast(generation_, deadline)) break;
  }
  Leave();
  return ready;
}

bool ConnectivityWatch::WaitPast(uint64_t generation,
                                 transport::io::MonotonicTime deadline) {
  while (generation_ == generation) {
    const absl::Duration left = deadline - transport::io::MonotonicTime::Now();
    if (left <= absl::ZeroDuration()) return false;
    changed_.WaitWithTimeout(&mu_, left);
  }
  return true;
}

void ConnectivityWatch::Leave() {
  if (--waiters_ == 0) left_.SignalAll();
}

void ConnectivityWatch::Shutdown() {
  Set(ConnectivityState::kShutdown);
  MutexLock lock(&mu_);
  while (waiters_ > 0) left_.Wait(&mu_);
}

int64_t ConnectivityWatch::entered(ConnectivityState state) const {
  MutexLock lock(&mu_);
  return entered_[static_cast<size_t>(state)];
}

int ConnectivityWatch::waiters() const {
  MutexLock lock(&mu_);
  return waiters_;
}

std::vector<ConnectivityState> ConnectivityWatch::history() const {
  MutexLock lock(&mu_);
  return std::vector<ConnectivityState>(history_.begin(),
                                        history_.begin() + history_size_);
}

}  // namespace h2rpc::internal
