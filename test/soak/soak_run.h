#ifndef H2RPC_TEST_SOAK_SOAK_RUN_H_
#define H2RPC_TEST_SOAK_SOAK_RUN_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "test/soak/call_tally.h"
#include "test/soak/fault_driver.h"
#include "test/soak/mixed_load.h"
#include "test/soak/probe_driver.h"
#include "test/soak/process_sample.h"
#include "test/soak/rss_trend.h"

namespace h2rpc::testing {

struct SoakOptions {
  // How long the load runs under faults and probes.
  absl::Duration duration = absl::Minutes(2);
  // Per channel (one plaintext, one TLS).
  MixedLoad::Options load;
  FaultDriver::Options faults;
  // Between two abuse probes.
  absl::Duration probe_pause = absl::Seconds(1);
  absl::Duration sample_period = absl::Seconds(1);
  // How much the median RSS of a process living through the soak may grow
  // from its second third to its last: max(rss_growth_bytes,
  // rss_growth_fraction of the earlier median).
  int64_t rss_growth_bytes = int64_t{8} << 20;
  double rss_growth_fraction = 0.10;
  // How far above a restarted backend's peak RSS may go above the peak of
  // b0 (never restarted).
  int64_t restarted_peak_slack_bytes = int64_t{64} << 20;
  // Descriptors and threads a process may have at the end beyond what it
  // had at the start, both times at a quiet point.
  int fd_slack = 4;
  int thread_slack = 2;
  // Called with a line now and then (progress); may be empty.
  std::function<void(const std::string&)> log;
};

struct SoakReport {
  // Empty when the soak passed.
  std::vector<std::string> failures;
  // The figures: calls by kind and status, faults, probes, memory,
  // descriptors and threads.
  std::string figures;

  // The same figures one by one (soak_main's --result_file). When the soak
  // failed before its load began, only `started` and `seed` are set.
  //
  // When RunSoak began.
  absl::Time started;
  uint32_t seed = 0;
  // From the load's start to its end (once every call had ended), the span
  // whose thirds the RSS trends compare; zero if the load never began.
  absl::Duration ran;
  CallTally plaintext;
  CallTally tls;
  FaultDriver::Counts faults;
  // Processes started per backend (b0, b1, b2), the first included.
  std::vector<int> backend_starts;
  ProbeDriver::Report probes;
  // The processes alive since the start (client, b0, the first b1 and b2).
  std::vector<RssTrend> rss;
  // Backend processes started during the soak (those sampled), and the
  // highest RSS one of them reached (-1: none).
  int restarted_backends = 0;
  int64_t restarted_peak_rss = -1;
  // Descriptors and threads by process ("client", "b0", ...) at the quiet
  // points before and after the load.
  std::map<std::string, ProcessSample> quiet_start;
  std::map<std::string, ProcessSample> quiet_end;
};

// Runs the soak (see test/soak/BUILD.bazel): three backend processes behind
// proxies, a plaintext and a TLS channel with round_robin carrying a
// MixedLoad each, a FaultDriver and a ProbeDriver, for options.duration;
// then checks that no call was lost, every wait_for_ready call succeeded,
// nothing crashed, and memory, descriptors and threads did not grow.
SoakReport RunSoak(const SoakOptions& options);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_SOAK_RUN_H_
