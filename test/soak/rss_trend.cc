#include "test/soak/rss_trend.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace h2rpc::testing {
namespace {

// The median VmRSS of the samples in [from, to); -1 if there is none.
int64_t MedianRss(const ResourceSeries& series, absl::Time from,
                  absl::Time to) {
  std::vector<int64_t> values;
  for (const ResourceSeries::Point& point : series.points) {
    if (point.time >= from && point.time < to && point.sample.rss_bytes >= 0) {
      values.push_back(point.sample.rss_bytes);
    }
  }
  if (values.empty()) return -1;
  const auto middle = values.begin() + static_cast<long>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace

std::string Mib(double bytes) {
  return absl::StrFormat("%.1f MiB", bytes / (1024.0 * 1024.0));
}

double RssTrend::growth_per_hour() const {
  if (!complete() || apart <= absl::ZeroDuration()) return 0;
  return static_cast<double>(growth()) * (absl::Hours(1) / apart);
}

std::string RssTrend::ToString() const {
  std::string text = absl::StrCat(label, " (pid ", pid, "): ");
  if (complete()) {
    absl::StrAppend(&text, Mib(earlier_median), " -> ", Mib(later_median), " (",
                    growth() >= 0 ? "+" : "", Mib(growth()), ", ",
                    growth() >= 0 ? "+" : "", Mib(growth_per_hour()), "/h)");
  } else {
    absl::StrAppend(&text, "not alive through both thirds");
  }
  return absl::StrCat(text, ", peak ", Mib(peak));
}

RssTrend RssTrendOf(const ResourceSeries& series, absl::Time start,
                    absl::Time end) {
  const absl::Duration third = (end - start) / 3;
  RssTrend trend;
  trend.label = series.label;
  trend.pid = series.pid;
  trend.earlier_median = MedianRss(series, start + third, start + 2 * third);
  trend.later_median = MedianRss(series, start + 2 * third, end);
  trend.apart = third;
  for (const ResourceSeries::Point& point : series.points) {
    trend.peak = std::max(trend.peak, point.sample.rss_bytes);
  }
  return trend;
}

}  // namespace h2rpc::testing
