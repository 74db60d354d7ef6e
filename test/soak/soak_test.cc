// The soak under faults, short: two minutes of mixed unary and streaming
// load over plaintext and TLS through round_robin to three backend
// processes, while backends are killed and restarted, connections reset
// and stalled, and abuse probes sent (soak_run.h). tools/soak runs the
// same for longer.
#include <cstdio>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/abuse/process_memory.h"
#include "test/soak/soak_run.h"

// Freed memory waits in ASan's quarantine and would look like growth.
extern "C" const char* __asan_default_options() {
  return h2rpc::testing::kAsanOptions;
}

namespace h2rpc::testing {
namespace {

TEST(SoakTest, TwoMinutesOfLoadUnderFaultsAndProbes) {
  SoakOptions options;
  options.duration = absl::Minutes(2);
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "[soak] %s\n", line.c_str());
  };
  const SoakReport report = RunSoak(options);
  std::fprintf(stderr, "%s", report.figures.c_str());
  EXPECT_TRUE(report.failures.empty()) << absl::StrJoin(report.failures, "\n");
}

}  // namespace
}  // namespace h2rpc::testing
