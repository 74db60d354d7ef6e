#include "test/abuse/process_memory.h"

#include <malloc.h>

#include <cstddef>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

#if defined(__SANITIZE_THREAD__)
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace h2rpc::testing {

int64_t ProcessMemoryBytes() {
#if defined(__SANITIZE_THREAD__)
  return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  malloc_trim(0);
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) != 0) continue;
    absl::string_view value(line);
    value.remove_prefix(6);
    int64_t kib = 0;
    if (!absl::SimpleAtoi(value.substr(0, value.find(" kB")), &kib)) {
      return -1;
    }
    return kib * 1024;
  }
  return -1;
#endif
}

}  // namespace h2rpc::testing
