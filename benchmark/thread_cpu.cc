#include "benchmark/thread_cpu.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace h2rpc::benchmark {
namespace {

using ::h2rpc::testing::ThreadRole;

bool ReadSmallFile(const std::string& path, std::string* out) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char buffer[1024];
  const size_t n = std::fread(buffer, 1, sizeof(buffer), f);
  std::fclose(f);
  out->assign(buffer, n);
  return true;
}

ThreadRole RoleOf(const std::string& name, int tid, ThreadRole default_role) {
  if (tid == getpid() || name.rfind("bench-", 0) == 0) {
    return ThreadRole::kOther;
  }
  if (name.rfind("h2rpc-channel", 0) == 0) return ThreadRole::kClient;
  if (name.rfind("h2rpc-server", 0) == 0 ||
      name.rfind("h2rpc-worker", 0) == 0) {
    return ThreadRole::kServer;
  }
  return default_role;
}

// utime + stime from a /proc/<pid>/task/<tid>/stat line, in nanoseconds.
int64_t StatCpuNanos(const std::string& stat) {
  // The command name (field 2) may hold spaces: fields 3... follow its ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(close + 2), ' ');
  int64_t utime = 0, stime = 0;  // fields 14 and 15
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return 0;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  return (utime + stime) * (1000000000 / (ticks > 0 ? ticks : 100));
}

}  // namespace

ThreadCpuSnapshot ThreadCpuSnapshot::Take(ThreadRole default_role) {
  ThreadCpuSnapshot snapshot;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return snapshot;
  while (dirent* entry = readdir(dir)) {
    const int tid = std::atoi(entry->d_name);
    if (tid <= 0) continue;
    const std::string base = std::string("/proc/self/task/") + entry->d_name;
    std::string comm, stat;
    if (!ReadSmallFile(base + "/comm", &comm) ||
        !ReadSmallFile(base + "/stat", &stat)) {
      continue;
    }
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    snapshot.threads_[tid] = {RoleOf(comm, tid, default_role),
                              StatCpuNanos(stat)};
  }
  closedir(dir);
  return snapshot;
}

int64_t ThreadCpuSnapshot::RoleNanosSince(const ThreadCpuSnapshot& earlier,
                                          ThreadRole role) const {
  int64_t total = 0;
  for (const auto& [tid, now] : threads_) {
    if (now.role != role) continue;
    const auto before = earlier.threads_.find(tid);
    total += now.nanos -
             (before != earlier.threads_.end() ? before->second.nanos : 0);
  }
  return total;
}

int64_t ProcessCpuNanos() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto nanos = [](const timeval& t) {
    return int64_t{t.tv_sec} * 1000000000 + int64_t{t.tv_usec} * 1000;
  };
  return nanos(usage.ru_utime) + nanos(usage.ru_stime);
}

int64_t OtherProcessesCpuNanos(const std::vector<int>& pids) {
  int64_t total = 0;
  for (const int pid : pids) {
    const std::string tasks = absl::StrCat("/proc/", pid, "/task");
    DIR* dir = opendir(tasks.c_str());
    if (dir == nullptr) continue;
    while (const dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      std::ifstream schedstat(
          absl::StrCat(tasks, "/", entry->d_name, "/schedstat"));
      int64_t on_cpu = 0;
      if (schedstat >> on_cpu) total += on_cpu;
    }
    closedir(dir);
  }
  return total;
}

}  // namespace h2rpc::benchmark
