#include "transport/http2/keepalive.h"

#include <algorithm>
#include <random>

namespace h2rpc::transport::http2 {

void KeepalivePinger::Start() {
  if (!enabled() || running_) return;
  running_ = true;
  last_read_ = scheduler_->Now();
  scheduler_->Schedule(this, last_read_ + time_);
}

void KeepalivePinger::Stop() {
  running_ = false;
  parked_ = false;
  outstanding_ = false;
  scheduler_->Cancel(this);
}

void KeepalivePinger::Unpark() {
  parked_ = false;
  if (!running_) return;
  scheduler_->Schedule(this, std::max(last_read_ + time_, scheduler_->Now()));
}

void KeepalivePinger::OnPingAck(io::MonotonicTime now) {
  last_read_ = now;
  if (!running_ || !outstanding_) return;
  outstanding_ = false;
  scheduler_->Schedule(this, now + time_);
}

void KeepalivePinger::OnTimer() {
  if (!running_) return;
  const io::MonotonicTime now = scheduler_->Now();
  if (outstanding_) {
    // The timer was set for ping_sent_ + timeout_. A read at the very time
    // the PING went out came after it: a loop reads before it runs timers,
    // and a read before the PING would have made it unnecessary.
    if (last_read_ < ping_sent_) {
      Stop();
      delegate_->OnKeepaliveTimeout();
      return;
    }
    outstanding_ = false;
  }
  const io::MonotonicTime due = last_read_ + time_;
  if (now < due) {
    scheduler_->Schedule(this, due);
    return;
  }
  if (!active_ && !permit_without_calls_) {
    parked_ = true;
    return;
  }
  if (!delegate_->SendKeepalivePing()) {
    Stop();
    return;
  }
  if (!running_) return;  // the delegate stopped the pinger
  outstanding_ = true;
  ping_sent_ = now;
  scheduler_->Schedule(this, now + timeout_);
}

bool PingAbusePolicy::OnPingReceived(io::MonotonicTime now, bool streams_open) {
  const absl::Duration interval =
      !streams_open && !permit_without_calls_ ? kIdlePingInterval : min_time_;
  const io::MonotonicTime next_allowed = last_ping_ + interval;
  last_ping_ = now;
  if (next_allowed <= now) return false;
  ++strikes_;
  return max_strikes_ != 0 && strikes_ > max_strikes_;
}

absl::Duration JitteredAge(absl::Duration age, uint64_t random) {
  if (age == absl::InfiniteDuration()) return age;
  // The top 53 bits as a fraction in [0, 1).
  const double unit = static_cast<double>(random >> 11) * 0x1.0p-53;
  return age * (0.9 + 0.2 * unit);
}

uint64_t JitterBits() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

}  // namespace h2rpc::transport::http2
