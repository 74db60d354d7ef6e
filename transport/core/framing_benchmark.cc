// Benchmarks of gRPC message framing and deframing, reporting heap
// allocations per operation ("allocs/op", counted by
// //test/util:allocation_counter) next to time and bytes per second.
// main() comes from the benchmark main library.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "benchmark/benchmark.h"
#include "test/util/allocation_counter.h"
#include "transport/core/large_buffer_cache.h"
#include "transport/core/message_deframer.h"
#include "transport/core/message_framer.h"

namespace h2rpc::transport {
namespace {

using ::h2rpc::testing::AllocationCounter;

constexpr size_t kLimit = 64 * 1024 * 1024;

// Consumes messages without copying them.
class SinkListener : public MessageDeframer::Listener {
 public:
  Status OnMessage(absl::string_view message, bool compressed) override {
    bytes_ += message.size();
    benchmark::DoNotOptimize(message.data());
    return Status();
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

MessageDeframer::Options LargeLimit() {
  MessageDeframer::Options options;
  options.max_message_size = kLimit;
  return options;
}

// Feeds `wire` to `deframer` in chunks of `chunk_size` bytes (0: whole).
void FeedInChunks(absl::string_view wire, size_t chunk_size,
                  MessageDeframer& deframer, SinkListener& listener,
                  benchmark::State& state) {
  if (chunk_size == 0) chunk_size = wire.size();
  for (size_t offset = 0; offset < wire.size(); offset += chunk_size) {
    if (!deframer.Feed(wire.substr(offset, chunk_size), listener).ok()) {
      state.SkipWithError("deframing failed");
      return;
    }
  }
}

void ReportAllocations(benchmark::State& state,
                       const AllocationCounter& counter) {
  state.counters["allocs/op"] =
      benchmark::Counter(static_cast<double>(counter.allocations()),
                         benchmark::Counter::kAvgIterations);
}

// One message of range(0) bytes framed into a reused buffer, then deframed
// by a long-lived deframer (one stream), fed whole (range(1) == 0) or in
// range(1)-byte chunks, without (range(2) == 0) or with (1) a
// LargeBufferCache for gather buffers. The steady state of a busy stream.
void BM_FrameAndDeframe(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const size_t chunk_size = static_cast<size_t>(state.range(1));
  const std::string message(size, 'm');
  std::string wire;
  wire.reserve(kMessagePrefixSize + size);
  LargeBufferCache cache;
  MessageDeframer::Options options = LargeLimit();
  if (state.range(2) != 0) options.buffer_cache = &cache;
  MessageDeframer deframer(options);
  SinkListener listener;
  AllocationCounter counter;
  for (auto _ : state) {
    wire.clear();
    if (!AppendFramedMessage(message, false, kLimit, &wire).ok()) {
      state.SkipWithError("framing failed");
      break;
    }
    FeedInChunks(wire, chunk_size, deframer, listener, state);
  }
  ReportAllocations(state, counter);
  benchmark::DoNotOptimize(listener.bytes());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}
BENCHMARK(BM_FrameAndDeframe)
    ->ArgNames({"size", "chunk", "cache"})
    ->Args({1, 0, 0})
    ->Args({1, 16 * 1024, 0})
    ->Args({1024, 0, 0})
    ->Args({1024, 16 * 1024, 0})
    ->Args({1024 * 1024, 0, 0})
    ->Args({1024 * 1024, 16 * 1024, 0})
    ->Args({1024 * 1024, 16 * 1024, 1});

// As above, but every message arrives on a new stream with a new deframer:
// shows what gathering costs when no capacity is kept (the geometric growth
// of the gather buffer for messages above eager_reserve_limit), without
// (range(2) == 0) and with (1) a LargeBufferCache to take gather buffers
// from, as the HTTP/2 sessions have.
void BM_DeframeOnNewStream(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const size_t chunk_size = static_cast<size_t>(state.range(1));
  LargeBufferCache cache;
  MessageDeframer::Options options = LargeLimit();
  if (state.range(2) != 0) options.buffer_cache = &cache;
  std::string wire;
  if (!AppendFramedMessage(std::string(size, 'm'), false, kLimit, &wire).ok()) {
    state.SkipWithError("framing failed");
    return;
  }
  SinkListener listener;
  AllocationCounter counter;
  for (auto _ : state) {
    MessageDeframer deframer(options);
    FeedInChunks(wire, chunk_size, deframer, listener, state);
  }
  ReportAllocations(state, counter);
  benchmark::DoNotOptimize(listener.bytes());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}
BENCHMARK(BM_DeframeOnNewStream)
    ->ArgNames({"size", "chunk", "cache"})
    ->Args({1024, 16 * 1024, 0})
    ->Args({1024 * 1024, 16 * 1024, 0})
    ->Args({1024 * 1024, 16 * 1024, 1});

// range(0) messages of 100 bytes in one 16 KiB-ish chunk: the per-message
// cost of the zero-copy path.
void BM_DeframeSmallMessagesInOneChunk(benchmark::State& state) {
  const int64_t count = state.range(0);
  const std::string message(100, 'm');
  std::string wire;
  for (int64_t i = 0; i < count; ++i) {
    if (!AppendFramedMessage(message, false, kLimit, &wire).ok()) {
      state.SkipWithError("framing failed");
      return;
    }
  }
  MessageDeframer deframer(LargeLimit());
  SinkListener listener;
  AllocationCounter counter;
  for (auto _ : state) {
    FeedInChunks(wire, 0, deframer, listener, state);
  }
  ReportAllocations(state, counter);
  benchmark::DoNotOptimize(listener.bytes());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(wire.size()));
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_DeframeSmallMessagesInOneChunk)->Arg(150);

}  // namespace
}  // namespace h2rpc::transport
