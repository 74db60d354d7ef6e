// Parsing one received header block with 0/10/100/1000 user headers (the
// shape of golang.org/x/net's BenchmarkClientRequestHeaders/ResponseHeaders),
// into a fresh Metadata per block or one reused after Clear(). Reports
// allocations and bytes allocated per parse. main() comes from the benchmark
// target's main library.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/metadata.h"
#include "base/status.h"
#include "benchmark/benchmark.h"
#include "test/util/allocation_counter.h"
#include "transport/core/header_field.h"
#include "transport/core/received_headers.h"

namespace h2rpc::transport {
namespace {

// A header block and the strings its fields point into.
class Block {
 public:
  explicit Block(std::vector<std::pair<std::string, std::string>> pairs)
      : pairs_(std::move(pairs)) {
    for (const auto& p : pairs_) {
      fields_.push_back(HeaderField{p.first, p.second});
    }
  }
  absl::Span<const HeaderField> fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
  std::vector<HeaderField> fields_;
};

// Request headers as a gRPC client sends them, plus `n` user headers "a-i: *".
// user-agent is user metadata too, so even n = 0 gives one entry.
Block RequestBlock(int n) {
  std::vector<std::pair<std::string, std::string>> pairs = {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", "/grpc.testing.TestService/UnaryCall"},
      {":authority", "localhost:50051"},
      {"content-type", "application/grpc"},
      {"te", "trailers"},
      {"user-agent", "grpc-c++/1.51.1 grpc-c/29.0.0 (linux; chttp2)"},
      {"grpc-accept-encoding", "identity,deflate,gzip"},
      {"grpc-timeout", "99999u"},
  };
  for (int i = 0; i < n; ++i) pairs.emplace_back(absl::StrCat("a-", i), "*");
  return Block(std::move(pairs));
}

// Response headers as a gRPC server sends them, plus `n` user headers.
Block ResponseBlock(int n) {
  std::vector<std::pair<std::string, std::string>> pairs = {
      {":status", "200"},
      {"content-type", "application/grpc"},
      {"grpc-accept-encoding", "identity,deflate,gzip"},
  };
  for (int i = 0; i < n; ++i) pairs.emplace_back(absl::StrCat("a-", i), "*");
  return Block(std::move(pairs));
}

void Report(benchmark::State& state,
            const h2rpc::testing::AllocationCounter& counter) {
  // Read both before the counters map allocates.
  const double allocations = static_cast<double>(counter.allocations());
  const double bytes = static_cast<double>(counter.bytes());
  state.counters["allocs/op"] =
      benchmark::Counter(allocations, benchmark::Counter::kAvgIterations);
  state.counters["alloc_bytes/op"] =
      benchmark::Counter(bytes, benchmark::Counter::kAvgIterations);
}

void ParseFresh(benchmark::State& state, const Block& block) {
  ReservedHeaderValues reserved;
  h2rpc::testing::AllocationCounter counter;
  for (auto _ : state) {
    Metadata metadata;
    Status status = ParseReceivedHeaders(block.fields(), &reserved, &metadata);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(metadata);
  }
  Report(state, counter);
}

void ParseReused(benchmark::State& state, const Block& block) {
  ReservedHeaderValues reserved;
  Metadata metadata;
  if (!ParseReceivedHeaders(block.fields(), &reserved, &metadata).ok()) {
    state.SkipWithError("block does not parse");
    return;
  }
  h2rpc::testing::AllocationCounter counter;
  for (auto _ : state) {
    metadata.Clear();
    Status status = ParseReceivedHeaders(block.fields(), &reserved, &metadata);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(metadata);
  }
  Report(state, counter);
}

void BM_RequestHeaders_Fresh(benchmark::State& state) {
  ParseFresh(state, RequestBlock(static_cast<int>(state.range(0))));
}
void BM_RequestHeaders_Reused(benchmark::State& state) {
  ParseReused(state, RequestBlock(static_cast<int>(state.range(0))));
}
void BM_ResponseHeaders_Fresh(benchmark::State& state) {
  ParseFresh(state, ResponseBlock(static_cast<int>(state.range(0))));
}
void BM_ResponseHeaders_Reused(benchmark::State& state) {
  ParseReused(state, ResponseBlock(static_cast<int>(state.range(0))));
}

BENCHMARK(BM_RequestHeaders_Fresh)->Arg(0)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_RequestHeaders_Reused)->Arg(0)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_ResponseHeaders_Fresh)->Arg(0)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(BM_ResponseHeaders_Reused)->Arg(0)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace
}  // namespace h2rpc::transport
