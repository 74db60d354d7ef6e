#ifndef H2RPC_TEST_SOAK_RSS_TREND_H_
#define H2RPC_TEST_SOAK_RSS_TREND_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "test/soak/resource_monitor.h"

namespace h2rpc::testing {

// How a process's resident memory moved during a soak of [start, end): the
// first third of it is warm-up; the medians of the samples of the second
// and of the last third are compared. Medians, so that a short peak (a
// probe, a burst of reconnections) does not count as growth.
struct RssTrend {
  std::string label;
  pid_t pid = -1;
  // -1 when the process has no sample in that third.
  int64_t earlier_median = -1;
  int64_t later_median = -1;
  // Between the middles of the two thirds.
  absl::Duration apart;
  // The most sampled over the process's life.
  int64_t peak = -1;

  // Both thirds have samples.
  bool complete() const { return earlier_median >= 0 && later_median >= 0; }
  int64_t growth() const { return later_median - earlier_median; }
  // growth() extrapolated to an hour.
  double growth_per_hour() const;
  // "b0 (pid 123): 31.2 -> 31.4 MiB (+0.2 MiB, +0.6 MiB/h), peak 33.0 MiB".
  std::string ToString() const;
};

RssTrend RssTrendOf(const ResourceSeries& series, absl::Time start,
                    absl::Time end);

// `bytes` in MiB with one decimal.
std::string Mib(double bytes);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_RSS_TREND_H_
