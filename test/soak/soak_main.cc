// The soak under faults (soak_run.h) for as long as --duration says; prints
// its progress to stderr and its figures to stdout. Exit code 0 when it
// passed, 1 when it did not (the failures on stderr). Run it with
// tools/soak, which builds it and sets up its runfiles.
//
//   soak --duration=30m [--seed=N]
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "test/abuse/process_memory.h"
#include "test/soak/soak_run.h"

ABSL_FLAG(absl::Duration, duration, absl::Minutes(2),
          "How long the load runs under faults and probes.");
ABSL_FLAG(uint32_t, seed, 1, "Seed of the fault driver's choices.");

// Freed memory waits in ASan's quarantine and would look like growth.
extern "C" const char* __asan_default_options() {
  return h2rpc::testing::kAsanOptions;
}

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  h2rpc::testing::SoakOptions options;
  options.duration = absl::GetFlag(FLAGS_duration);
  options.faults.seed = absl::GetFlag(FLAGS_seed);
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "[soak] %s\n", line.c_str());
  };
  const h2rpc::testing::SoakReport report = h2rpc::testing::RunSoak(options);
  std::printf("%s", report.figures.c_str());
  std::fflush(stdout);
  for (const std::string& failure : report.failures) {
    std::fprintf(stderr, "FAILED: %s\n", failure.c_str());
  }
  std::printf("%s\n", report.failures.empty() ? "PASSED" : "FAILED");
  return report.failures.empty() ? 0 : 1;
}
