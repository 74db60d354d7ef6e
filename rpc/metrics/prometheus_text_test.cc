#include "rpc/metrics/prometheus_text.h"

#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/call_metrics.h"
#include "rpc/internal/call_metric_shards.h"
#include "transport/core/memory_quota.h"

namespace h2rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Text(const CallMetrics& metrics) {
  std::string text;
  AppendPrometheusText(metrics.Snapshot(), &text);
  return text;
}

TEST(PrometheusTextTest, NothingRecordedIsAnEmptyExposition) {
  EXPECT_EQ(Text(CallMetrics()), "");
}

TEST(PrometheusTextTest, ServerCallsAsOpenTelemetryNamesThem) {
  CallMetrics metrics;
  internal::ServerMethodStats& stats =
      internal::CallMetricsAccess::AcquireServerShard(metrics, nullptr)
          ->methods()
          .For("/echo.Echo/Say");
  stats.calls_started.Add(3);
  internal::ServerStatusStats& ok = stats.by_status.For(StatusCode::kOk);
  ok.call_duration.Record(700'000);    // le 0.0008
  ok.call_duration.Record(2'000'000);  // le 0.002
  ok.call_sent.Record(4294967296);     // the largest bound
  stats.by_status.For(StatusCode::kNotFound).call_duration.Record(1);

  const std::string text = Text(metrics);
  EXPECT_THAT(text, HasSubstr("# TYPE grpc_server_call_started_total counter\n"
                              "grpc_server_call_started_total{grpc_method="
                              "\"/echo.Echo/Say\"} 3\n"));
  EXPECT_THAT(text,
              HasSubstr("# TYPE grpc_server_call_duration_seconds histogram\n"
                        "grpc_server_call_duration_seconds_bucket{grpc_method="
                        "\"/echo.Echo/Say\",grpc_status=\"OK\",le=\"0\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("grpc_status=\"OK\",le=\"0.0006\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("grpc_status=\"OK\",le=\"0.0008\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_status=\"OK\",le=\"0.002\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("grpc_status=\"OK\",le=\"1e-05\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("grpc_status=\"OK\",le=\"+Inf\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("grpc_server_call_duration_seconds_sum{grpc_"
                              "method=\"/echo.Echo/Say\",grpc_status=\"OK\"} "
                              "0.0027"));
  EXPECT_THAT(text, HasSubstr("grpc_server_call_duration_seconds_count{grpc_"
                              "method=\"/echo.Echo/Say\",grpc_status=\"OK\"} "
                              "2\n"));
  EXPECT_THAT(text, HasSubstr("grpc_status=\"NOT_FOUND\",le=\"+Inf\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("grpc_server_call_sent_total_compressed_message_"
                        "size_bytes_bucket{grpc_method=\"/echo.Echo/"
                        "Say\",grpc_status=\"OK\",le=\"4.294967296e+09\"} 1"));
  // The size histograms of NOT_FOUND recorded nothing: no series.
  EXPECT_THAT(text, Not(HasSubstr("grpc_server_call_rcvd_total_compressed_"
                                  "message_size_bytes_count{grpc_method=\"/"
                                  "echo.Echo/Say\",grpc_status=\"NOT_FOUND")));
  // Each metric's TYPE line once.
  const size_t first = text.find("# TYPE grpc_server_call_duration_seconds");
  EXPECT_EQ(text.find("# TYPE grpc_server_call_duration_seconds", first + 1),
            std::string::npos);
}

TEST(PrometheusTextTest, ClientSeriesCarryTheTargetAndEscapeLabelValues) {
  CallMetrics metrics;
  internal::ClientMethodStats& stats =
      internal::CallMetricsAccess::AcquireClientShard(metrics,
                                                      "unix:/tmp/a\"b\\c")
          ->methods()
          .For("/s.S/M");
  stats.attempts_started.Add(1);
  stats.by_status.For(StatusCode::kOk).call_duration.Record(1);
  const std::string text = Text(metrics);
  EXPECT_THAT(text, HasSubstr("grpc_client_attempt_started_total{grpc_method="
                              "\"/s.S/M\",grpc_target=\"unix:/tmp/a\\\"b\\\\c"
                              "\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_call_duration_seconds_count{grpc_"
                              "method=\"/s.S/M\",grpc_status=\"OK\",grpc_"
                              "target=\"unix:/tmp/a\\\"b\\\\c\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("grpc_client_attempt_duration_seconds")));
}

TEST(PrometheusTextTest, ServerConnectionsAsH2rpcNamesThem) {
  CallMetrics metrics;
  transport::MemoryQuota quota(1 << 20);
  quota.ForceReserve(4096);
  internal::ServerMetricShard* shard =
      internal::CallMetricsAccess::AcquireServerShard(metrics, &quota);
  ConnectionEventCounts& events = shard->connection_events();
  events.opened.Add(3);
  events.closed.Add(1);
  events.streams_opened.Add(10);
  events.streams_closed.Add(7);
  events.keepalive_timeouts.Add(1);
  events.goaways_sent[0].Add(2);   // NO_ERROR
  events.goaways_sent[11].Add(1);  // ENHANCE_YOUR_CALM
  const std::string text = Text(metrics);
  EXPECT_THAT(text, HasSubstr("# TYPE h2rpc_server_connections gauge\n"
                              "h2rpc_server_connections 2\n"));
  EXPECT_THAT(text, HasSubstr("h2rpc_server_streams 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE h2rpc_server_keepalive_timeouts_total "
                              "counter\nh2rpc_server_keepalive_timeouts_total "
                              "1\n"));
  EXPECT_THAT(text,
              HasSubstr("h2rpc_server_goaways_sent_total{h2rpc_goaway_error="
                        "\"NO_ERROR\"} 2\nh2rpc_server_goaways_sent_total{"
                        "h2rpc_goaway_error=\"ENHANCE_YOUR_CALM\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("h2rpc_server_memory_quota_used_bytes 4096\n"));
  // A released shard's server is gone: its quota is no longer read, its
  // counts stay.
  internal::CallMetricsAccess::ReleaseServerShard(metrics, shard);
  EXPECT_THAT(Text(metrics),
              HasSubstr("h2rpc_server_memory_quota_used_bytes 0\n"));
  EXPECT_THAT(Text(metrics), HasSubstr("h2rpc_server_connections 2\n"));
  quota.Release(4096);
}

TEST(PrometheusTextTest, RetriesAsA96NamesThem) {
  CallMetrics metrics;
  internal::ClientMethodStats& stats =
      internal::CallMetricsAccess::AcquireClientShard(metrics, "dns:///a:1")
          ->methods()
          .For("/echo.Echo/Say");
  stats.retries.Record(2);
  stats.transparent_retries.Record(7);
  stats.retry_delay.Record(30'000'000);  // le 0.03
  const std::string text = Text(metrics);
  EXPECT_THAT(text, HasSubstr("# TYPE grpc_client_call_retries histogram\n"
                              "grpc_client_call_retries_bucket{grpc_method="
                              "\"/echo.Echo/Say\",grpc_target=\"dns:///a:1\","
                              "le=\"1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("grpc_target=\"dns:///a:1\",le=\"2\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_call_transparent_retries_bucket{"
                              "grpc_method=\"/echo.Echo/Say\",grpc_target="
                              "\"dns:///a:1\",le=\"10\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_call_retry_delay_seconds_sum{"
                              "grpc_method=\"/echo.Echo/Say\",grpc_target="
                              "\"dns:///a:1\"} 0.03\n"));
}

TEST(PrometheusTextTest, ConnectionsAsA94NamesThem) {
  CallMetrics metrics;
  internal::ConnectionStats& connections =
      internal::CallMetricsAccess::AcquireClientShard(metrics, "dns:///a:1")
          ->connections();
  connections.attempts_succeeded.Add(2);
  connections.attempts_failed.Add(3);
  connections.disconnections[0].Add(1);  // GOAWAY NO_ERROR
  const std::string text = Text(metrics);
  EXPECT_THAT(text, HasSubstr("# TYPE grpc_subchannel_connection_attempts_"
                              "succeeded_total counter\ngrpc_subchannel_"
                              "connection_attempts_succeeded_total{grpc_"
                              "target=\"dns:///a:1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("grpc_subchannel_connection_attempts_failed_"
                              "total{grpc_target=\"dns:///a:1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("grpc_subchannel_disconnections_total{grpc_"
                              "disconnect_error=\"GOAWAY NO_ERROR\",grpc_"
                              "target=\"dns:///a:1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE grpc_subchannel_open_connections gauge\n"
                              "grpc_subchannel_open_connections{grpc_target="
                              "\"dns:///a:1\"} 1\n"));
}

}  // namespace
}  // namespace h2rpc
