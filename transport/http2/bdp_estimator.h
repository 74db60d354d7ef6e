#ifndef H2RPC_TRANSPORT_HTTP2_BDP_ESTIMATOR_H_
#define H2RPC_TRANSPORT_HTTP2_BDP_ESTIMATOR_H_

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::transport::http2 {

// Sizes a connection's receive windows by the bandwidth-delay product (BDP)
// of the path from the peer, measured with PINGs as gRPC's transports do:
// while DATA arrives, the connection sends a PING; the DATA bytes that
// arrive before its ACK are one round trip's worth. A window is the limit
// when such a sample fills most of what the window allows, so the estimate
// then grows (at least doubling), provided the bandwidth grew too (a
// round trip inflated by queueing is not a larger path). window() is twice
// the estimate: with WINDOW_UPDATE sent once a quarter of a window is
// consumed, a sender with data then always holds more than a round trip's
// worth of credit.
//
// Bounds: window() stays within [initial_window, max_window]; one PING at a
// time, only after a full frame's worth of DATA, and after a sample that does
// not grow the estimate the next waits 100 ms, doubling up to 10 s while
// nothing grows; only the ACK of the connection's own PING is a sample (the
// caller tells them apart). After kIdleReset without DATA the estimate returns
// to the initial window's (ResetIfIdle, which the connection asks before it
// counts new DATA).
//
// Pure bookkeeping on times the caller passes (tests drive it with a fake
// clock); no allocation. Not thread-safe: the connection's thread.
class BdpEstimator {
 public:
  // No DATA for this long: the path is forgotten.
  static constexpr absl::Duration kIdleReset = absl::Seconds(10);
  static constexpr absl::Duration kFirstBackoff = absl::Milliseconds(100);
  static constexpr absl::Duration kMaxBackoff = absl::Seconds(10);
  // DATA bytes that must arrive before a PING is sent: one full frame.
  static constexpr size_t kSampleStart = 16384;

  // `max_window` at or below `initial_window`: the windows stay fixed and
  // no PING is ever asked for.
  BdpEstimator(uint32_t initial_window, uint32_t max_window);

  // `bytes` of DATA (flow-controlled payload) arrived at `now`. True when
  // the caller should send the estimator's PING now, and call OnPingSent():
  // no PING is outstanding, the window is below the max, the backoff is
  // over, and at least kSampleStart bytes arrived since the last sample
  // (so the PING goes out near the start of a burst, and a connection that
  // carries a few small messages never sends one).
  [[nodiscard]] bool OnDataReceived(size_t bytes, io::MonotonicTime now) {
    if (!enabled_) return false;
    last_data_ = now;
    sample_bytes_ += bytes;
    return !ping_outstanding_ && window_ < max_window_ &&
           sample_bytes_ >= kSampleStart && now >= next_ping_;
  }
  // The PING asked for went out at `now`; bytes from here to its ACK are
  // the sample.
  void OnPingSent(io::MonotonicTime now) {
    ping_outstanding_ = true;
    ping_sent_ = now;
    sample_bytes_ = 0;
  }
  // The ACK of the estimator's PING arrived at `now`. True if window()
  // grew.
  [[nodiscard]] bool OnPingAck(io::MonotonicTime now);

  // No DATA since kIdleReset before `now`: the estimate goes back to the
  // initial window's. True if window() shrank.
  [[nodiscard]] bool ResetIfIdle(io::MonotonicTime now);

  // The receive window the path asks for, in [initial, max] window. Bytes.
  uint32_t window() const { return window_; }
  bool enabled() const { return enabled_; }
  bool ping_outstanding() const { return ping_outstanding_; }

 private:
  void Reset();

  uint32_t initial_window_;
  uint32_t max_window_;
  bool enabled_;
  uint32_t window_;
  // Bytes per round trip the path has shown; window_ is twice it.
  double estimate_;
  // The best rate a growing sample showed (bytes per second).
  double rate_ = 0;
  bool ping_outstanding_ = false;
  io::MonotonicTime ping_sent_;
  // DATA bytes since the PING went out; before it, since the last sample.
  size_t sample_bytes_ = 0;
  io::MonotonicTime next_ping_ = io::MonotonicTime::InfinitePast();
  absl::Duration backoff_ = absl::ZeroDuration();
  io::MonotonicTime last_data_ = io::MonotonicTime::InfinitePast();
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_BDP_ESTIMATOR_H_
