#include "benchmark/delay_line.h"

#include <algorithm>

namespace h2rpc::benchmark {

DelayLine::DelayLine(const Options& options)
    : options_(options), random_(options.seed) {}

absl::Time DelayLine::ReleaseTime(absl::Time now, size_t size) {
  absl::Time sent = now;
  if (options_.bytes_per_second > 0) {
    link_free_ =
        std::max(link_free_, now) +
        absl::Seconds(static_cast<double>(size) / options_.bytes_per_second);
    sent = link_free_;
  }
  absl::Duration jitter = absl::ZeroDuration();
  if (options_.jitter > absl::ZeroDuration()) {
    std::uniform_int_distribution<int64_t> nanos(
        0, absl::ToInt64Nanoseconds(options_.jitter));
    jitter = absl::Nanoseconds(nanos(random_));
  }
  last_release_ = std::max(last_release_, sent + options_.delay + jitter);
  return last_release_;
}

void DelayLine::Push(absl::Time now, absl::string_view bytes) {
  // Without a rate cap a read leaves in one piece.
  const size_t piece = options_.bytes_per_second > 0 ? kPiece : bytes.size();
  while (!bytes.empty()) {
    const size_t size = std::min(bytes.size(), piece);
    std::string buffer;
    if (!spare_buffers_.empty()) {
      buffer = std::move(spare_buffers_.back());
      spare_buffers_.pop_back();
    }
    buffer.assign(bytes.data(), size);  // in place when it has the capacity
    chunks_.push_back(Chunk{ReleaseTime(now, size), std::move(buffer), 0});
    queued_bytes_ += size;
    bytes.remove_prefix(size);
  }
}

void DelayLine::PushEnd(absl::Time now) {
  chunks_.push_back(Chunk{ReleaseTime(now, 0), std::string(), 0});
}

absl::Time DelayLine::NextRelease() const {
  return chunks_.empty() ? absl::InfiniteFuture() : chunks_.front().release;
}

absl::string_view DelayLine::Ready(absl::Time now) const {
  if (chunks_.empty() || chunks_.front().release > now) return {};
  const Chunk& chunk = chunks_.front();
  return absl::string_view(chunk.bytes).substr(chunk.offset);
}

void DelayLine::Consume(size_t bytes) {
  queued_bytes_ -= bytes;
  Chunk& chunk = chunks_.front();
  chunk.offset += bytes;
  if (chunk.offset == chunk.bytes.size()) {
    spare_buffers_.push_back(std::move(chunk.bytes));
    chunks_.pop_front();
  }
}

bool DelayLine::ended(absl::Time now) const {
  return !chunks_.empty() && chunks_.front().bytes.empty() &&
         chunks_.front().release <= now;
}

}  // namespace h2rpc::benchmark
