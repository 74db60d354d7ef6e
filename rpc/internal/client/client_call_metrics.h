#ifndef H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CALL_METRICS_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CALL_METRICS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "rpc/internal/call_metric_shards.h"
#include "rpc/status.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

// A client call's record in CallMetrics (rpc/call_metrics.h): the call
// starts when the application starts it (before its request is
// serialized), and its first attempt with it; a later attempt when the
// channel's loop takes it up (a retry's after its backoff, a transparent
// retry's at once); an attempt ends when its stream closes, is refused or
// fails to start; the call ends when its result is known. Part of a pooled
// call object. Without metrics (a null shard) each step is one branch.
class ClientCallMetrics {
 public:
  // The thread starting the call. `generic`: a call of the generic API,
  // recorded as "other" unless the metrics record generic methods.
  void StartCall(ClientMetricShard* shard, bool generic) {
    shard_ = shard;
    stats_ = nullptr;
    attempt_open_ = false;
    attempt_just_ended_ = false;
    retries_ = transparent_retries_ = 0;
    retry_delay_ = absl::ZeroDuration();
    if (shard == nullptr) return;
    generic_ = generic && !shard->record_generic_methods();
    call_start_ = transport::io::MonotonicTime::Now();
  }

  // Loop thread (the shard's writer): an attempt of the call to `method`
  // starts.
  void StartAttempt(absl::string_view method) {
    if (shard_ == nullptr) return;
    if (stats_ == nullptr) {
      // The first attempt is made with the call, as gRPC makes it: it
      // starts when the call does.
      stats_ = &shard_->methods().For(generic_ ? kOtherMethod : method);
      attempt_start_ = call_start_;
    } else {
      attempt_start_ = transport::io::MonotonicTime::Now();
      retry_delay_ += attempt_start_ - attempt_end_;
    }
    stats_->attempts_started.Add(1);
    attempt_open_ = true;
    attempt_just_ended_ = false;
  }

  // Loop thread: the attempt under way, if any, ended with `code`, having
  // sent and received message bytes as given (on the wire, prefixes not
  // included).
  void EndAttempt(StatusCode code, uint64_t sent, uint64_t received) {
    if (!attempt_open_) return;
    attempt_open_ = false;
    attempt_just_ended_ = true;
    attempt_end_ = transport::io::MonotonicTime::Now();
    ClientStatusStats& by_code = stats_->by_status.For(code);
    by_code.attempt_duration.Record(Nanos(attempt_end_ - attempt_start_));
    by_code.attempt_sent.Record(sent);
    by_code.attempt_rcvd.Record(received);
  }

  // Loop thread: the attempt that just ended is followed by another (a
  // retry after its backoff, or a `transparent` retry), not by the call's
  // end.
  void Retrying(bool transparent) {
    attempt_just_ended_ = false;
    ++(transparent ? transparent_retries_ : retries_);
  }

  // Loop thread: the call to `method` has its result, `code` (with or
  // without an attempt). A call that never reached the loop ends through
  // EndCallOffLoop instead.
  void EndCall(StatusCode code, absl::string_view method) {
    if (shard_ == nullptr) return;
    if (stats_ == nullptr) {
      stats_ = &shard_->methods().For(generic_ ? kOtherMethod : method);
    }
    // A result that follows the end of the last attempt within the same
    // loop task takes that attempt's end time.
    Record(*stats_, code,
           attempt_just_ended_ ? attempt_end_
                               : transport::io::MonotonicTime::Now());
    if (retries_ > 0) stats_->retries.Record(retries_);
    if (transparent_retries_ > 0) {
      stats_->transparent_retries.Record(transparent_retries_);
    }
    if (retries_ + transparent_retries_ > 0) {
      stats_->retry_delay.Record(Nanos(retry_delay_));
    }
    shard_ = nullptr;
  }

  // The thread that started the call, which failed before reaching the
  // loop: records it into `shard`, whose writer the caller is (the
  // channel's shard for such calls, under its lock).
  void EndCallOffLoop(ClientMetricShard& shard, absl::string_view method,
                      StatusCode code) {
    if (shard_ == nullptr) return;
    Record(shard.methods().For(generic_ ? kOtherMethod : method), code,
           transport::io::MonotonicTime::Now());
    shard_ = nullptr;
  }

  bool on() const { return shard_ != nullptr; }

 private:
  static uint64_t Nanos(absl::Duration elapsed) {
    return static_cast<uint64_t>(absl::ToInt64Nanoseconds(elapsed));
  }
  void Record(ClientMethodStats& stats, StatusCode code,
              transport::io::MonotonicTime end) {
    stats.by_status.For(code).call_duration.Record(Nanos(end - call_start_));
  }

  ClientMetricShard* shard_ = nullptr;
  ClientMethodStats* stats_ = nullptr;  // found by the first attempt
  bool generic_ = false;
  bool attempt_open_ = false;
  // The attempt ended in the loop task now running: its end time is now.
  bool attempt_just_ended_ = false;
  uint32_t retries_ = 0;
  uint32_t transparent_retries_ = 0;
  absl::Duration retry_delay_;
  transport::io::MonotonicTime call_start_;
  transport::io::MonotonicTime attempt_start_;
  transport::io::MonotonicTime attempt_end_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CALL_METRICS_H_
