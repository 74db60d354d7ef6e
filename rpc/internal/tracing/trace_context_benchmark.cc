// What tracing costs an unsampled call, per side, in h2rpc's own code (the
// header's HPACK coding is nghttp2's): the client draws the call's and the
// attempt's ids and formats the attempt's traceparent; the server parses
// it and draws its span's id.
#include "benchmark/benchmark.h"
#include "rpc/internal/tracing/trace_context.h"

namespace h2rpc::internal {
namespace {

void BM_UnsampledClientTraceContext(benchmark::State& state) {
  char traceparent[kTraceparentSize];
  for (auto _ : state) {
    TraceContext call = NewSpanContext(TraceContext(), /*probability=*/0.01);
    call.span_id = NewSpanId();  // the attempt's
    FormatTraceparent(call, traceparent);
    benchmark::DoNotOptimize(traceparent);
  }
}
BENCHMARK(BM_UnsampledClientTraceContext);

void BM_UnsampledServerTraceContext(benchmark::State& state) {
  const absl::string_view traceparent =
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
  for (auto _ : state) {
    TraceContext parent;
    const bool parsed = ParseTraceparent(traceparent, &parent);
    TraceContext span = NewSpanContext(parent, /*probability=*/0.01);
    benchmark::DoNotOptimize(parsed);
    benchmark::DoNotOptimize(span);
  }
}
BENCHMARK(BM_UnsampledServerTraceContext);

}  // namespace
}  // namespace h2rpc::internal
