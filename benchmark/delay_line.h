#ifndef H2RPC_BENCHMARK_DELAY_LINE_H_
#define H2RPC_BENCHMARK_DELAY_LINE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace h2rpc::benchmark {

// One direction of a simulated network path, for a relay that plays a
// wide-area path on loopback: bytes pushed at time t leave the far end at
// t + delay (+ up to `jitter`, never reordering), after a link of
// `bytes_per_second` has carried them (queued behind earlier bytes; 0: no
// cap). Pure bookkeeping on times the caller passes, so a test drives it
// with made-up times. Not thread-safe.
//
// Bytes are copied into buffers that are reused once their bytes left, so a
// line that holds a delay's worth of a fast stream keeps writing into
// memory it has touched before instead of faulting in fresh pages for every
// read, which costs more than the copy. It keeps as many buffers as it ever
// held at once.
class DelayLine {
 public:
  struct Options {
    absl::Duration delay = absl::ZeroDuration();
    // Link rate; 0: unlimited.
    double bytes_per_second = 0;
    // Extra delay per chunk, uniform in [0, jitter].
    absl::Duration jitter = absl::ZeroDuration();
    uint32_t seed = 1;
  };

  explicit DelayLine(const Options& options);

  // Bytes read from the source at `now`; copied.
  void Push(absl::Time now, absl::string_view bytes);
  // The source ended (a FIN) at `now`: once every byte before it is out,
  // ended() turns true.
  void PushEnd(absl::Time now);
  // When the first queued byte (or the end) may leave; InfiniteFuture if
  // nothing is queued.
  absl::Time NextRelease() const;
  // The bytes that may leave at `now`: a prefix of what is queued, possibly
  // empty.
  absl::string_view Ready(absl::Time now) const;
  // `bytes` of Ready() were written to the destination.
  void Consume(size_t bytes);
  // Every byte before the end left, and the end's time has come.
  bool ended(absl::Time now) const;
  size_t queued_bytes() const { return queued_bytes_; }

 private:
  // With a rate cap the link carries at most this much as one piece, so a
  // large read is spread over time instead of released at once.
  static constexpr size_t kPiece = 16 << 10;

  struct Chunk {
    absl::Time release;
    std::string bytes;  // empty: the end
    size_t offset = 0;
  };

  // When a piece of `size` bytes pushed at `now` may leave.
  absl::Time ReleaseTime(absl::Time now, size_t size);

  const Options options_;
  std::mt19937 random_;
  std::deque<Chunk> chunks_;
  std::vector<std::string> spare_buffers_;  // of chunks that left
  size_t queued_bytes_ = 0;
  // When the link finishes carrying what was pushed so far.
  absl::Time link_free_ = absl::InfinitePast();
  // The last release time handed out (releases never go back in time).
  absl::Time last_release_ = absl::InfinitePast();
};

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_DELAY_LINE_H_
