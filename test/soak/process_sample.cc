#include "test/soak/process_sample.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "test/abuse/process_memory.h"

namespace h2rpc::testing {
namespace {

// Entries of the directory `path` other than "." and ".."; -1 if it cannot
// be opened.
int CountEntries(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name != "." && name != "..") ++count;
  }
  closedir(dir);
  return count;
}

// VmRSS of /proc/<pid>/status in bytes; -1 if it cannot be read.
int64_t ReadRss(const std::string& proc) {
  std::ifstream status(proc + "/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view value = line;
    if (!absl::ConsumePrefix(&value, "VmRSS:")) continue;
    value = absl::StripAsciiWhitespace(value);
    absl::ConsumeSuffix(&value, " kB");
    int64_t kib = 0;
    return absl::SimpleAtoi(value, &kib) ? kib * 1024 : -1;
  }
  return -1;
}

}  // namespace

ProcessSample SampleProcess(pid_t pid) {
  const std::string proc = absl::StrCat("/proc/", pid);
  ProcessSample sample;
  sample.rss_bytes = ReadRss(proc);
  sample.threads = CountEntries(proc + "/task");
  sample.fds = CountEntries(proc + "/fd");
  return sample;
}

ProcessSample SampleSelf() {
  ProcessSample sample;
  sample.rss_bytes = ProcessMemoryBytes();
  sample.threads = CountEntries("/proc/self/task");
  // The directory's own descriptor, open while it is read, is not counted.
  const int fds = CountEntries("/proc/self/fd");
  sample.fds = fds < 0 ? -1 : fds - 1;
  return sample;
}

}  // namespace h2rpc::testing
