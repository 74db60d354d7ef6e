// Benchmarks of SerializeFramed, the serialization of a message into a
// stream's send buffer, reporting heap allocations per operation
// ("allocs/op") next to time and bytes per second. main() comes from the
// benchmark main library.
#include <cstddef>
#include <string>

#include "benchmark/benchmark.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/internal/common/serialize_framed.h"
#include "test/util/allocation_counter.h"
#include "transport/core/large_buffer_cache.h"

namespace h2rpc::internal {
namespace {

using ::h2rpc::testing::AllocationCounter;

// A SimpleRequest carrying range(0) payload bytes, serialized into an empty
// send buffer that then goes back to the process's LargeBufferCache, as an
// OutgoingData gives its buffer back once the body is written: the steady
// state of a stream of large unary calls.
void BM_SerializeFramedIntoCachedBuffer(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  grpc::testing::SimpleRequest request;
  request.mutable_payload()->set_body(std::string(size, 'b'));
  std::string buffer;
  AllocationCounter counter;
  for (auto _ : state) {
    if (!SerializeFramed(request, CompressionAlgorithm::kIdentity, 1 << 30,
                         &buffer)
             .ok()) {
      state.SkipWithError("serialization failed");
      break;
    }
    benchmark::DoNotOptimize(buffer.data());
    transport::LargeBufferCache::Global().Give(&buffer);
  }
  state.counters["allocs/op"] =
      benchmark::Counter(static_cast<double>(counter.allocations()),
                         benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}
BENCHMARK(BM_SerializeFramedIntoCachedBuffer)
    ->ArgName("size")
    ->Arg(64 * 1024)
    ->Arg(1024 * 1024);

}  // namespace
}  // namespace h2rpc::internal
