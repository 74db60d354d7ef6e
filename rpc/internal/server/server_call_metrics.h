#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_METRICS_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_METRICS_H_

#include "rpc/internal/call_metric_shards.h"
#include "transport/http2/server_session.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

// A server call's record in CallMetrics (rpc/call_metrics.h): it starts when
// the call is dispatched (its request headers decoded) and ends once, when
// the call lets go of its stream, with how the stream ended and the
// message bytes it carried. Part of a pooled call object; loop thread.
// Without metrics (null stats) each step is one branch.
class ServerCallMetrics {
 public:
  void Start(ServerMethodStats* stats) {
    stats_ = stats;
    if (stats == nullptr) return;
    stats->calls_started.Add(1);
    start_ = transport::io::MonotonicTime::Now();
  }

  // Before the call releases `stream`.
  void End(transport::http2::ServerStream& stream) {
    if (stats_ == nullptr) return;
    // A stream not ended yet is ended by its release, with UNKNOWN.
    const StatusCode code = stream.finished() || stream.cancelled()
                                ? stream.end_code()
                                : StatusCode::kUnknown;
    ServerStatusStats& by_code = stats_->by_status.For(code);
    by_code.call_duration.Record(static_cast<uint64_t>(absl::ToInt64Nanoseconds(
        transport::io::MonotonicTime::Now() - start_)));
    by_code.call_sent.Record(stream.outgoing().message_bytes());
    by_code.call_rcvd.Record(stream.received_message_bytes());
    stats_ = nullptr;
  }

  // A call the server refused before any handler (an unknown method, the
  // memory quota): started and ended at once with `code`.
  static void RecordRefused(ServerMethodStats& stats, StatusCode code) {
    stats.calls_started.Add(1);
    ServerStatusStats& by_code = stats.by_status.For(code);
    by_code.call_duration.Record(0);
    by_code.call_sent.Record(0);
    by_code.call_rcvd.Record(0);
  }

 private:
  ServerMethodStats* stats_ = nullptr;
  transport::io::MonotonicTime start_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_METRICS_H_
