// Per-message compression cost with pooled (reset between messages) versus
// freshly created (deflateInit2/inflateInit2 and End per message) zlib state:
// time, heap allocations and bytes allocated per message, for a compress and
// decompress round trip of compressible data.
//   tools/bazel run -c opt //transport/compression:codec_benchmark
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "base/compression_algorithm.h"
#include "base/status.h"
#include "benchmark/benchmark.h"
#include "test/util/allocation_counter.h"
#include "transport/compression/zlib_codec.h"

namespace h2rpc::transport::compression {
namespace {

using ::h2rpc::testing::AllocationCounter;

constexpr size_t kLimit = 4 * 1024 * 1024;

// Compressible, protobuf-ish text (compresses about 3-4x).
std::string Compressible(size_t size) {
  static const char* const kWords[] = {"grpc ",   "message ", "compression ",
                                       "stream ", "header ",  "deflate ",
                                       "status ", "payload "};
  std::mt19937 rng(42);
  std::string s;
  s.reserve(size + 16);
  while (s.size() < size) {
    s += kWords[rng() % 8];
    s += static_cast<char>('0' + rng() % 10);
  }
  s.resize(size);
  return s;
}

void Report(benchmark::State& state, const AllocationCounter& counter,
            size_t size) {
  state.counters["allocs/msg"] =
      benchmark::Counter(static_cast<double>(counter.allocations()),
                         benchmark::Counter::kAvgIterations);
  state.counters["alloc_bytes/msg"] = benchmark::Counter(
      static_cast<double>(counter.bytes()), benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(size));
}

CompressionAlgorithm Algorithm(const benchmark::State& state) {
  return static_cast<CompressionAlgorithm>(state.range(1));
}

// Codecs from a ZlibCodecPool, acquired and released for every message as a
// stream would; output buffers reused.
void BM_PooledRoundTrip(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const CompressionAlgorithm algorithm = Algorithm(state);
  const std::string message = Compressible(size);
  ZlibCodecPool pool;
  std::string compressed;
  std::string decompressed;
  compressed.reserve(size + 1024);
  decompressed.reserve(size + 1024);
  {  // Warm the pool.
    auto c = pool.AcquireCompressor(algorithm);
    auto d = pool.AcquireDecompressor(algorithm);
    (void)c->Compress(message, &compressed);
    (void)d->Decompress(compressed, kLimit, &decompressed);
    pool.Release(std::move(c));
    pool.Release(std::move(d));
  }
  AllocationCounter counter;
  for (auto _ : state) {
    auto compressor = pool.AcquireCompressor(algorithm);
    auto decompressor = pool.AcquireDecompressor(algorithm);
    compressed.clear();
    decompressed.clear();
    if (!compressor->Compress(message, &compressed).ok() ||
        !decompressor->Decompress(compressed, kLimit, &decompressed).ok()) {
      state.SkipWithError("round trip failed");
      break;
    }
    benchmark::DoNotOptimize(decompressed.data());
    pool.Release(std::move(compressor));
    pool.Release(std::move(decompressor));
  }
  Report(state, counter, size);
  state.counters["ratio"] =
      static_cast<double>(size) / static_cast<double>(compressed.size());
}

// New codec state for every message (what a codec without reset or pooling
// would do); output buffers reused.
void BM_FreshRoundTrip(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const CompressionAlgorithm algorithm = Algorithm(state);
  const std::string message = Compressible(size);
  std::string compressed;
  std::string decompressed;
  compressed.reserve(size + 1024);
  decompressed.reserve(size + 1024);
  AllocationCounter counter;
  for (auto _ : state) {
    ZlibCompressor compressor(algorithm);
    ZlibDecompressor decompressor(algorithm);
    compressed.clear();
    decompressed.clear();
    if (!compressor.Compress(message, &compressed).ok() ||
        !decompressor.Decompress(compressed, kLimit, &decompressed).ok()) {
      state.SkipWithError("round trip failed");
      break;
    }
    benchmark::DoNotOptimize(decompressed.data());
  }
  Report(state, counter, size);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"size", "algo"});
  for (int algorithm : {static_cast<int>(CompressionAlgorithm::kDeflate),
                        static_cast<int>(CompressionAlgorithm::kGzip)}) {
    for (int size : {1 << 10, 64 << 10, 1 << 20}) b->Args({size, algorithm});
  }
}

BENCHMARK(BM_PooledRoundTrip)->Apply(Args);
BENCHMARK(BM_FreshRoundTrip)->Apply(Args);

}  // namespace
}  // namespace h2rpc::transport::compression

BENCHMARK_MAIN();
