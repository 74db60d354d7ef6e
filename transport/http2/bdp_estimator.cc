#include "transport/http2/bdp_estimator.h"

#include <algorithm>
#include <utility>

namespace h2rpc::transport::http2 {

BdpEstimator::BdpEstimator(uint32_t initial_window, uint32_t max_window)
    : initial_window_(initial_window),
      max_window_(std::max(initial_window, max_window)),
      enabled_(max_window > initial_window) {
  Reset();
}

void BdpEstimator::Reset() {
  window_ = initial_window_;
  estimate_ = initial_window_ / 2.0;
  rate_ = 0;
  backoff_ = absl::ZeroDuration();
  next_ping_ = io::MonotonicTime::InfinitePast();
}

bool BdpEstimator::OnPingAck(io::MonotonicTime now) {
  if (!ping_outstanding_) return false;
  ping_outstanding_ = false;
  const size_t sample_bytes = std::exchange(sample_bytes_, 0);
  const double seconds =
      std::max(absl::ToDoubleSeconds(now - ping_sent_), 1e-6);
  const double sample = static_cast<double>(sample_bytes);
  const double rate = sample / seconds;
  if (sample > estimate_ * 2 / 3 && rate > rate_ && window_ < max_window_) {
    estimate_ = std::max(sample, estimate_ * 2);
    rate_ = rate;
    window_ =
        static_cast<uint32_t>(std::min<double>(estimate_ * 2, max_window_));
    backoff_ = absl::ZeroDuration();
    next_ping_ = now;
    return true;
  }
  backoff_ = std::min(kMaxBackoff, std::max(kFirstBackoff, backoff_ * 2));
  next_ping_ = now + backoff_;
  return false;
}

bool BdpEstimator::ResetIfIdle(io::MonotonicTime now) {
  if (!enabled_ || now - last_data_ < kIdleReset ||
      window_ == initial_window_) {
    return false;
  }
  Reset();
  return true;
}

}  // namespace h2rpc::transport::http2
