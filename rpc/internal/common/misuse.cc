#include "rpc/internal/common/misuse.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace h2rpc::internal {
namespace {

#ifdef NDEBUG
constexpr bool kFatalByDefault = false;
#else
constexpr bool kFatalByDefault = true;
#endif

std::atomic<bool> fatal{kFatalByDefault};

}  // namespace

bool MisuseIsFatal() { return fatal.load(std::memory_order_relaxed); }

void SetMisuseIsFatalForTest(bool value) {
  fatal.store(value, std::memory_order_relaxed);
}

void ReportMisuse(const std::string& message) {
  std::fprintf(stderr, "h2rpc: API misuse: %s\n", message.c_str());
  if (MisuseIsFatal()) {
    std::fflush(stderr);
    std::abort();
  }
}

}  // namespace h2rpc::internal
