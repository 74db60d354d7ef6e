// What CallMetrics costs a call, per side: the recording of a warm call (a
// method and status seen before) on a shard, clock reads included.
#include <cstdint>

#include "benchmark/benchmark.h"
#include "rpc/call_metrics.h"
#include "rpc/internal/call_metric_shards.h"
#include "rpc/internal/client/client_call_metrics.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {
namespace {

using transport::io::MonotonicTime;

constexpr char kMethod[] = "/grpc.testing.BenchmarkService/UnaryCall";

uint64_t Nanos(absl::Duration elapsed) {
  return static_cast<uint64_t>(absl::ToInt64Nanoseconds(elapsed));
}

// A unary call on the client, through ClientCallMetrics: the call starts,
// one attempt starts and ends, the call ends (two clock reads).
void BM_ClientCallRecording(benchmark::State& state) {
  CallMetrics metrics;
  ClientMetricShard* shard =
      CallMetricsAccess::AcquireClientShard(metrics, "dns:///localhost:1");
  ClientCallMetrics call;
  for (auto _ : state) {
    call.StartCall(shard, /*generic=*/false);
    call.StartAttempt(kMethod);
    call.EndAttempt(StatusCode::kOk, 1030, 1030);
    call.EndCall(StatusCode::kOk, kMethod);
  }
}
BENCHMARK(BM_ClientCallRecording);

// A call on the server: what ServerCallMetrics does, started at dispatch
// (its method looked up, a clock read) and ended with its status and sizes
// (ServerCallMetrics itself reads those from a transport stream).
void BM_ServerCallRecording(benchmark::State& state) {
  CallMetrics metrics;
  ServerMetricShard* shard = CallMetricsAccess::AcquireServerShard(metrics, nullptr);
  for (auto _ : state) {
    ServerMethodStats& stats = shard->methods().For(kMethod);
    stats.calls_started.Add(1);
    const MonotonicTime start = MonotonicTime::Now();
    ServerStatusStats& ok = stats.by_status.For(StatusCode::kOk);
    ok.call_duration.Record(Nanos(MonotonicTime::Now() - start));
    ok.call_sent.Record(1030);
    ok.call_rcvd.Record(1030);
  }
}
BENCHMARK(BM_ServerCallRecording);

// A snapshot of one method on each side (what a scrape reads).
void BM_Snapshot(benchmark::State& state) {
  CallMetrics metrics;
  CallMetricsAccess::AcquireClientShard(metrics, "dns:///localhost:1")
      ->methods()
      .For(kMethod)
      .by_status.For(StatusCode::kOk)
      .call_duration.Record(1000);
  CallMetricsAccess::AcquireServerShard(metrics, nullptr)
      ->methods()
      .For(kMethod)
      .by_status.For(StatusCode::kOk)
      .call_duration.Record(1000);
  for (auto _ : state) benchmark::DoNotOptimize(metrics.Snapshot());
}
BENCHMARK(BM_Snapshot);

}  // namespace
}  // namespace h2rpc::internal
