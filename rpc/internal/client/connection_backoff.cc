#include "rpc/internal/client/connection_backoff.h"

#include <algorithm>
#include <random>
#include <utility>

namespace h2rpc::internal {

ConnectionBackoff::ConnectionBackoff(const Options& options,
                                     const transport::io::Scheduler* clock,
                                     Uniform01 random)
    : options_(options),
      clock_(clock),
      random_(std::move(random)),
      current_backoff_(options.initial_backoff) {
  if (random_ == nullptr) {
    random_ = [engine = std::mt19937_64(std::random_device()()),
               uniform = std::uniform_real_distribution<double>(
                   0.0, 1.0)]() mutable { return uniform(engine); };
  }
}

transport::io::MonotonicTime ConnectionBackoff::BeginAttempt() {
  const transport::io::MonotonicTime now = clock_->Now();
  if (first_) {
    first_ = false;
    current_backoff_ = options_.initial_backoff;
    current_deadline_ = now + current_backoff_;
  } else {
    current_backoff_ =
        std::min(current_backoff_ * options_.multiplier, options_.max_backoff);
    // UniformRandom(-JITTER * current_backoff, JITTER * current_backoff).
    const double jitter = options_.jitter * (2 * random_() - 1);
    current_deadline_ = now + current_backoff_ + current_backoff_ * jitter;
  }
  return std::max(current_deadline_, now + options_.min_connect_timeout);
}

void ConnectionBackoff::Reset() {
  first_ = true;
  current_deadline_ = transport::io::MonotonicTime::InfinitePast();
}

}  // namespace h2rpc::internal
