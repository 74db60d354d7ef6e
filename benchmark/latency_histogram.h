#ifndef H2RPC_BENCHMARK_LATENCY_HISTOGRAM_H_
#define H2RPC_BENCHMARK_LATENCY_HISTOGRAM_H_

#include <array>
#include <cmath>
#include <cstdint>

#include "absl/time/time.h"

namespace h2rpc::benchmark {

// Latencies in logarithmic buckets (about 2% wide) from 1 us to ~100 s, with
// fixed storage so recording never allocates.
class LatencyHistogram {
 public:
  void Record(absl::Duration latency) {
    const double us = absl::ToDoubleMicroseconds(latency);
    ++buckets_[Bucket(us)];
    ++count_;
    sum_us_ += us;
    if (us > max_us_) max_us_ = us;
  }
  void Clear() { *this = LatencyHistogram(); }

  int64_t count() const { return count_; }
  absl::Duration Mean() const {
    return count_ == 0 ? absl::ZeroDuration()
                       : absl::Microseconds(sum_us_ / count_);
  }
  absl::Duration Max() const { return absl::Microseconds(max_us_); }
  // The latency below which `fraction` (0..1) of the samples lie (bucket
  // upper bound).
  absl::Duration Percentile(double fraction) const {
    const int64_t rank = static_cast<int64_t>(std::ceil(fraction * count_));
    int64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank && seen > 0) {
        return BucketUpperBound(i);
      }
    }
    return absl::ZeroDuration();
  }

  // Bucket i holds latencies up to 1 us x kGrowth^(i + 1).
  static constexpr double kGrowth = 1.02;
  static constexpr size_t kBuckets = 940;  // 1.02^940 us ~ 120 s
  static absl::Duration BucketUpperBound(size_t i) {
    return absl::Microseconds(std::pow(kGrowth, static_cast<double>(i + 1)));
  }
  int64_t bucket_count(size_t i) const { return buckets_[i]; }

 private:
  static size_t Bucket(double us) {
    if (us <= 1) return 0;
    const size_t b = static_cast<size_t>(std::log(us) / std::log(kGrowth));
    return b < kBuckets ? b : kBuckets - 1;
  }

  std::array<int64_t, kBuckets> buckets_{};
  int64_t count_ = 0;
  double sum_us_ = 0;
  double max_us_ = 0;
};

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_LATENCY_HISTOGRAM_H_
