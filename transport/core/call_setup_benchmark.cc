// Header building for one call (seed 002): fresh lists allocate the field
// vector exactly once; pooled (reused) lists allocate nothing.
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "test/util/allocation_counter.h"
#include "transport/core/call_setup.h"
#include "transport/core/response_setup.h"

namespace h2rpc::transport {
namespace {

using ::h2rpc::testing::AllocationCounter;

Metadata MakeMetadata(int64_t entries) {
  Metadata md;
  for (int64_t i = 0; i < entries; ++i) {
    md.Add(absl::StrCat("x-key-", i), absl::StrCat("value-", i));
  }
  return md;
}

CallDescription MakeCall(const Metadata* md, io::MonotonicTime now) {
  CallDescription call;
  call.method_path = "/grpc.testing.BenchmarkService/UnaryCall";
  call.authority = "localhost:50051";
  call.user_agent = "h2rpc-cpp/0.1";
  call.deadline = now + absl::Seconds(10);
  call.accept_encodings = "gzip,deflate";
  call.metadata = md;
  return call;
}

void ReportAllocations(benchmark::State& state,
                       const AllocationCounter& counter) {
  state.counters["allocs/op"] =
      benchmark::Counter(static_cast<double>(counter.allocations()),
                         benchmark::Counter::kAvgIterations);
  state.counters["bytes/op"] = benchmark::Counter(
      static_cast<double>(counter.bytes()), benchmark::Counter::kAvgIterations);
}

void BM_BuildRequestHeaders_Fresh(benchmark::State& state) {
  const Metadata md = MakeMetadata(state.range(0));
  const io::MonotonicTime now = io::MonotonicTime::Now();
  const CallDescription call = MakeCall(&md, now);
  AllocationCounter counter;
  for (auto _ : state) {
    HeaderList headers;
    benchmark::DoNotOptimize(BuildRequestHeaders(call, now, &headers));
    benchmark::DoNotOptimize(headers.fields().data());
  }
  ReportAllocations(state, counter);
}
BENCHMARK(BM_BuildRequestHeaders_Fresh)->Arg(0)->Arg(10)->Arg(100);

void BM_BuildRequestHeaders_Reused(benchmark::State& state) {
  const Metadata md = MakeMetadata(state.range(0));
  const io::MonotonicTime now = io::MonotonicTime::Now();
  const CallDescription call = MakeCall(&md, now);
  HeaderList headers;
  AllocationCounter counter;
  for (auto _ : state) {
    benchmark::DoNotOptimize(BuildRequestHeaders(call, now, &headers));
    benchmark::DoNotOptimize(headers.fields().data());
  }
  ReportAllocations(state, counter);
}
BENCHMARK(BM_BuildRequestHeaders_Reused)->Arg(0)->Arg(10)->Arg(100);

void BM_BuildResponseAndTrailers_Reused(benchmark::State& state) {
  const Metadata md = MakeMetadata(state.range(0));
  ResponseDescription response;
  response.accept_encodings = "gzip,deflate";
  response.metadata = &md;
  const Status status(StatusCode::kNotFound, "no such entry");
  HeaderList headers, trailers;
  AllocationCounter counter;
  for (auto _ : state) {
    benchmark::DoNotOptimize(BuildResponseHeaders(response, &headers));
    benchmark::DoNotOptimize(BuildTrailers(status, &md, &trailers));
  }
  ReportAllocations(state, counter);
}
BENCHMARK(BM_BuildResponseAndTrailers_Reused)->Arg(0)->Arg(10)->Arg(100);

}  // namespace
}  // namespace h2rpc::transport
