#include "rpc/interceptors/latency_histogram.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc {
namespace {

using ::testing::HasSubstr;

TEST(LatencyHistogramTest, BucketsDoubleFromOneMicrosecond) {
  EXPECT_EQ(LatencyHistogram::UpperBound(0), absl::Microseconds(1));
  EXPECT_EQ(LatencyHistogram::UpperBound(1), absl::Microseconds(2));
  EXPECT_EQ(LatencyHistogram::UpperBound(10), absl::Microseconds(1024));
  EXPECT_EQ(LatencyHistogram::UpperBound(30), absl::Microseconds(1 << 30));
  EXPECT_EQ(LatencyHistogram::UpperBound(LatencyHistogram::kBuckets - 1),
            absl::InfiniteDuration());

  EXPECT_EQ(LatencyHistogram::BucketOf(absl::ZeroDuration()), 0);
  EXPECT_EQ(LatencyHistogram::BucketOf(-absl::Seconds(1)), 0);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Microseconds(1)), 0);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Nanoseconds(1001)), 1);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Microseconds(2)), 1);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Nanoseconds(2001)), 2);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Microseconds(4)), 2);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Microseconds(5)), 3);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Milliseconds(1)), 10);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Microseconds(1 << 30)), 30);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Microseconds((1 << 30) + 1)), 31);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Hours(1000)), 31);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::InfiniteDuration()), 31);
  // Every latency falls within its bucket's edges.
  for (int64_t nanos = 1; nanos < int64_t{1} << 40; nanos = nanos * 3 + 1) {
    const absl::Duration latency = absl::Nanoseconds(nanos);
    const int bucket = LatencyHistogram::BucketOf(latency);
    EXPECT_LE(latency, LatencyHistogram::UpperBound(bucket)) << nanos;
    if (bucket > 0) {
      EXPECT_GT(latency, LatencyHistogram::UpperBound(bucket - 1)) << nanos;
    }
  }
}

TEST(LatencyHistogramTest, RecordsCountSumMaxAndBuckets) {
  LatencyHistogram histogram;
  histogram.Record(absl::Microseconds(3));
  histogram.Record(absl::Microseconds(4));
  histogram.Record(absl::Milliseconds(1));
  histogram.Record(-absl::Microseconds(7));  // counted as zero
  EXPECT_EQ(histogram.count(), 4u);
  EXPECT_EQ(histogram.sum(), absl::Microseconds(1007));
  EXPECT_EQ(histogram.max(), absl::Milliseconds(1));
  EXPECT_EQ(histogram.bucket_count(0), 1u);
  EXPECT_EQ(histogram.bucket_count(2), 2u);
  EXPECT_EQ(histogram.bucket_count(10), 1u);
  uint64_t total = 0;
  for (int i = 0; i < LatencyHistogram::kBuckets; ++i) {
    total += histogram.bucket_count(i);
  }
  EXPECT_EQ(total, 4u);
}

TEST(LatencyHistogramTest, PercentilesAreBucketEdgesCappedByTheMax) {
  LatencyHistogram histogram;
  // 90 calls of 3 us (bucket (2, 4] us), 9 of 100 us ((64, 128] us), one
  // of 5 s (the max).
  for (int i = 0; i < 90; ++i) histogram.Record(absl::Microseconds(3));
  for (int i = 0; i < 9; ++i) histogram.Record(absl::Microseconds(100));
  histogram.Record(absl::Seconds(5));
  absl::Duration latency;
  ASSERT_TRUE(histogram.Percentile(0, &latency).ok());
  EXPECT_EQ(latency, absl::Microseconds(4));
  ASSERT_TRUE(histogram.Percentile(50, &latency).ok());
  EXPECT_EQ(latency, absl::Microseconds(4));
  ASSERT_TRUE(histogram.Percentile(90, &latency).ok());
  EXPECT_EQ(latency, absl::Microseconds(4));
  ASSERT_TRUE(histogram.Percentile(90.5, &latency).ok());
  EXPECT_EQ(latency, absl::Microseconds(128));
  ASSERT_TRUE(histogram.Percentile(99, &latency).ok());
  EXPECT_EQ(latency, absl::Microseconds(128));
  ASSERT_TRUE(histogram.Percentile(99.9, &latency).ok());
  EXPECT_EQ(latency, absl::Seconds(5));  // its bucket's edge is 8.4 s
  ASSERT_TRUE(histogram.Percentile(100, &latency).ok());
  EXPECT_EQ(latency, absl::Seconds(5));

  // The last bucket has no edge: the max answers.
  LatencyHistogram slow;
  slow.Record(absl::Hours(2));
  ASSERT_TRUE(slow.Percentile(50, &latency).ok());
  EXPECT_EQ(latency, absl::Hours(2));
}

TEST(LatencyHistogramTest, PercentileRefusesBadInput) {
  LatencyHistogram histogram;
  absl::Duration latency = absl::Seconds(42);
  Status status = histogram.Percentile(50, &latency);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("no latency recorded"));
  histogram.Record(absl::Seconds(1));
  for (double percent :
       {-1.0, 100.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    status = histogram.Percentile(percent, &latency);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << percent;
    EXPECT_THAT(status.message(), HasSubstr("outside [0, 100]"));
  }
  status = histogram.Percentile(100.5, &latency);
  EXPECT_THAT(status.message(), HasSubstr("percentile 100.5 "));
  EXPECT_EQ(latency, absl::Seconds(42));  // untouched by the errors
}

}  // namespace
}  // namespace h2rpc
