#ifndef H2RPC_TRANSPORT_HTTP2_KEEPALIVE_H_
#define H2RPC_TRANSPORT_HTTP2_KEEPALIVE_H_

// The timing rules of gRPC's keepalive (A8) and connection management (A9)
// for one HTTP/2 connection, without I/O: when to send a keepalive PING and
// when its peer is dead (KeepalivePinger), which received PINGs are abuse
// (PingAbusePolicy), and a connection's jittered maximum age. The session
// (session.h) wires them to nghttp2; everything here runs on the session's
// scheduler thread and never allocates.

#include <cstdint>

#include "absl/time/time.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/scheduler.h"

namespace h2rpc::transport::http2 {

// Sends a PING after `time` without a byte from the peer, and declares the
// peer dead when nothing arrives within `timeout` of it. Any byte received
// counts as life, an ACK or not (as in grpc-go). Without open streams no
// PING is sent unless `permit_without_calls`.
//
// The hot path costs a store: OnRead() records the time of the last read,
// and the one timer is re-armed lazily when it fires (at the last read plus
// `time`), never per read. SetActive() costs a store and a branch; it
// schedules only when the pinger had stopped for lack of streams.
class KeepalivePinger final : private io::Timer {
 public:
  class Delegate {
   public:
    // Queue a keepalive PING now. False if it could not be queued (the
    // connection is ending): the pinger stops.
    virtual bool SendKeepalivePing() = 0;
    // Nothing arrived within `timeout` of the PING: the peer is gone. The
    // pinger has stopped.
    virtual void OnKeepaliveTimeout() = 0;

   protected:
    ~Delegate() = default;
  };

  // `time` InfiniteDuration: disabled (Start() does nothing). `time` and
  // `timeout` must be positive.
  KeepalivePinger(io::Scheduler* scheduler, absl::Duration time,
                  absl::Duration timeout, bool permit_without_calls,
                  Delegate* delegate)
      : scheduler_(scheduler),
        delegate_(delegate),
        time_(time),
        timeout_(timeout),
        permit_without_calls_(permit_without_calls) {}
  ~KeepalivePinger() { Stop(); }
  KeepalivePinger(const KeepalivePinger&) = delete;
  KeepalivePinger& operator=(const KeepalivePinger&) = delete;

  bool enabled() const { return time_ != absl::InfiniteDuration(); }
  // Starts watching, counting now as the last read: the first PING is due
  // `time` from now.
  void Start();
  // Stops for good (the connection is ending). Idempotent.
  void Stop();

  // Bytes arrived from the peer at `now`.
  void OnRead(io::MonotonicTime now) { last_read_ = now; }
  // The peer acknowledged a PING (read at `now`): the keepalive PING, if
  // one is out, is answered, and the next is due `time` from now.
  void OnPingAck(io::MonotonicTime now);
  // Whether the connection has open streams (calls).
  void SetActive(bool active) {
    active_ = active;
    if (active && parked_) Unpark();
  }

  // A keepalive PING is out and nothing has been seen to arrive since.
  bool ping_outstanding() const { return outstanding_; }
  absl::Duration time() const { return time_; }
  absl::Duration timeout() const { return timeout_; }

 private:
  void OnTimer() override;
  // Streams opened while the pinger waited for them: the next PING is due
  // `time` after the last read (at once if that has passed).
  void Unpark();

  io::Scheduler* const scheduler_;
  Delegate* const delegate_;
  const absl::Duration time_;
  const absl::Duration timeout_;
  const bool permit_without_calls_;
  io::MonotonicTime last_read_;
  io::MonotonicTime ping_sent_;
  bool running_ = false;
  bool active_ = false;
  // A PING was due with no stream open and !permit_without_calls: the
  // timer is off until a stream opens.
  bool parked_ = false;
  bool outstanding_ = false;
};

// Server-side PING enforcement, as gRPC C++ (Chttp2PingAbusePolicy) and
// grpc-go (handlePing) do it. A received PING (not an ACK) is a strike when
// it comes sooner than `min_time` after the previous one, or sooner than
// two hours (kIdlePingInterval) while no stream is open and
// !permit_without_calls. Sending HEADERS or DATA forgives everything: the
// strikes go back to zero and the next PING is never a strike. More than
// `max_strikes` strikes is abuse; `max_strikes` 0 allows any number.
class PingAbusePolicy {
 public:
  // TCP keepalive's minimum interval (RFC 1122), which gRPC applies to a
  // connection without calls.
  static constexpr absl::Duration kIdlePingInterval = absl::Hours(2);

  PingAbusePolicy(absl::Duration min_time, bool permit_without_calls,
                  int max_strikes)
      : min_time_(min_time),
        permit_without_calls_(permit_without_calls),
        max_strikes_(max_strikes) {}

  // A PING arrived at `now` while `streams_open`. True once the strikes
  // exceed max_strikes (and on every abusive PING after that).
  bool OnPingReceived(io::MonotonicTime now, bool streams_open);
  // The server sent HEADERS or DATA.
  void OnDataSent() {
    last_ping_ = io::MonotonicTime::InfinitePast();
    strikes_ = 0;
  }
  int strikes() const { return strikes_; }

 private:
  const absl::Duration min_time_;
  const bool permit_without_calls_;
  const int max_strikes_;
  io::MonotonicTime last_ping_ = io::MonotonicTime::InfinitePast();
  int strikes_ = 0;
};

// `age` changed by a random factor in [0.9, 1.1], from the 64 random bits
// `random`, as gRPC jitters max_connection_age so that connections opened
// together do not all end together. InfiniteDuration stays infinite.
absl::Duration JitteredAge(absl::Duration age, uint64_t random);
// 64 random bits from a per-thread generator (seeded once per thread from
// std::random_device). Never allocates after the first call on a thread.
uint64_t JitterBits();

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_KEEPALIVE_H_
