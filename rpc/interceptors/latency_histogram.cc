#include "rpc/interceptors/latency_histogram.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace h2rpc {

absl::Duration LatencyHistogram::UpperBound(int bucket) {
  if (bucket >= kBuckets - 1) return absl::InfiniteDuration();
  return absl::Microseconds(int64_t{1} << bucket);
}

int LatencyHistogram::BucketOf(absl::Duration latency) {
  const int64_t nanos = absl::ToInt64Nanoseconds(latency);
  if (nanos <= 1000) return 0;
  // Whole microseconds, rounded up: bucket i holds up to 2^i of them.
  const uint64_t micros = (static_cast<uint64_t>(nanos) + 999) / 1000;
  int bucket = 0;
  for (uint64_t rest = micros - 1; rest != 0; rest >>= 1) ++bucket;
  return std::min(bucket, kBuckets - 1);
}

void LatencyHistogram::Record(absl::Duration latency) {
  if (latency < absl::ZeroDuration()) latency = absl::ZeroDuration();
  ++buckets_[BucketOf(latency)];
  ++count_;
  sum_ += latency;
  max_ = std::max(max_, latency);
}

Status LatencyHistogram::Percentile(double percent,
                                    absl::Duration* latency) const {
  if (!(percent >= 0 && percent <= 100)) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("latency percentile ", percent, " is outside [0, 100]"));
  }
  if (count_ == 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "no latency recorded: the percentile is undefined");
  }
  // The rank of the call, 1-based: the first one for percentile 0.
  const uint64_t rank = std::clamp<uint64_t>(
      static_cast<uint64_t>(
          std::ceil(percent * static_cast<double>(count_) / 100)),
      1, count_);
  uint64_t seen = 0;
  for (int bucket = 0; bucket < kBuckets; ++bucket) {
    seen += buckets_[bucket];
    if (seen >= rank) {
      *latency = std::min(UpperBound(bucket), max_);
      return Status();
    }
  }
  *latency = max_;  // unreachable: the buckets add up to count_
  return Status();
}

}  // namespace h2rpc
