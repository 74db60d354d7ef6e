#ifndef H2RPC_RPC_INTERCEPTORS_LATENCY_HISTOGRAM_H_
#define H2RPC_RPC_INTERCEPTORS_LATENCY_HISTOGRAM_H_

#include <array>
#include <cstdint>

#include "absl/time/time.h"
#include "rpc/status.h"

namespace h2rpc {

// Call latencies in fixed exponential buckets: bucket 0 holds [0, 1 us],
// bucket i (1 <= i <= 30) holds (2^(i-1) us, 2^i us], and bucket 31 every
// latency above 2^30 us (about 17.9 minutes). Also the count, the sum and
// the largest latency recorded.
//
// A plain value: Record() allocates nothing and is not thread-safe (the
// owner locks); copies are snapshots.
class LatencyHistogram {
 public:
  static constexpr int kBuckets = 32;

  // The upper edge of `bucket` (inclusive): 2^bucket us, or
  // InfiniteDuration for the last bucket. Requires 0 <= bucket < kBuckets.
  static absl::Duration UpperBound(int bucket);
  // The bucket `latency` falls in; a negative latency counts as zero.
  static int BucketOf(absl::Duration latency);

  void Record(absl::Duration latency);

  uint64_t count() const { return count_; }
  absl::Duration sum() const { return sum_; }
  absl::Duration max() const { return max_; }
  // Latencies recorded in `bucket`. Requires 0 <= bucket < kBuckets.
  uint64_t bucket_count(int bucket) const { return buckets_[bucket]; }

  // Sets `*latency` to the `percent`-th percentile (0 to 100, e.g. 99.9):
  // the upper edge of the bucket holding that call, capped by max(). So it
  // is never below the true percentile, and at most twice it (or 1 us).
  // INVALID_ARGUMENT, naming the value, for a percent outside [0, 100] or
  // NaN; FAILED_PRECONDITION when nothing was recorded. Allocates only to
  // build an error.
  Status Percentile(double percent, absl::Duration* latency) const;

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  absl::Duration sum_;
  absl::Duration max_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERCEPTORS_LATENCY_HISTOGRAM_H_
