#include "test/util/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace h2rpc::testing {
namespace {

// Reaps `pid` if it has exited; true (with `*status`) when it has.
bool TryReap(pid_t pid, int* status) {
  for (;;) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r == 0) return false;
    if (errno != EINTR) {
      *status = 0;
      return true;  // not our child any more
    }
  }
}

}  // namespace

std::string RunfilesPath(const std::string& relative) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (srcdir == nullptr) return relative;
  return absl::StrCat(srcdir, "/h2rpc/", relative);
}

bool SpawnWithPipes(std::vector<std::string> argv, SpawnedChild* child,
                    std::string* error) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2: ", std::strerror(errno));
    return false;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2: ", std::strerror(errno));
    close(in[0]);
    close(in[1]);
    return false;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2: ", std::strerror(errno));
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // None of the test's descriptors (its sockets, other children's pipes)
  // may leak into the child or count against its descriptor limit.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> c_argv;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr,
                             c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    *error = absl::StrCat("cannot start ", absl::StrJoin(argv, " "), ": ",
                          std::strerror(rc));
    return false;
  }
  child->pid = pid;
  child->stdin_fd = in[1];
  child->stdout_fd = out[0];
  child->stderr_fd = err[0];
  return true;
}

bool ReapWithin(pid_t pid, absl::Duration timeout, int* status) {
  const absl::Time deadline = absl::Now() + timeout;
  bool exited = TryReap(pid, status);
  while (!exited && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));  // the polling period
    exited = TryReap(pid, status);
  }
  if (exited) return true;
  kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  return false;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("wait status ", status);
}

bool ProcessCpuTime(pid_t pid, absl::Duration* cpu) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string stat = contents.str();
  // The fields after the command name, which is in parentheses and may hold
  // spaces: state is first, utime the 12th and stime the 13th.
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return false;
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(stat).substr(close_paren + 1), ' ', absl::SkipEmpty());
  int64_t utime = 0;
  int64_t stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return false;
  }
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (ticks_per_second <= 0) return false;
  *cpu = absl::Seconds(utime + stime) / ticks_per_second;
  return true;
}

int MillisUntil(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(
      absl::Ceil(std::min(left, absl::Hours(1)), absl::Milliseconds(1))));
}

}  // namespace h2rpc::testing
