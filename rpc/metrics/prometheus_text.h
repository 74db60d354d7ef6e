#ifndef H2RPC_RPC_METRICS_PROMETHEUS_TEXT_H_
#define H2RPC_RPC_METRICS_PROMETHEUS_TEXT_H_

#include <string>

#include "rpc/call_metrics.h"

namespace h2rpc {

// Appends `snapshot` to `*out` in Prometheus's text exposition format
// (0.0.4), named as OpenTelemetry's Prometheus exporter names gRPC's
// instruments: dots become underscores, histograms get their unit as a
// suffix and counters `_total` (grpc_client_attempt_started_total,
// grpc_server_call_duration_seconds,
// grpc_client_attempt_sent_total_compressed_message_size_bytes), labels
// grpc_method, grpc_target and grpc_status. Histograms come as cumulative
// `_bucket` series with `le`, then `_sum` and `_count`. A metric with no
// series is left out. Any thread; allocates what it appends.
void AppendPrometheusText(const CallMetricsSnapshot& snapshot,
                          std::string* out);

// The content type of that text.
inline constexpr char kPrometheusTextContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

}  // namespace h2rpc

#endif  // H2RPC_RPC_METRICS_PROMETHEUS_TEXT_H_
