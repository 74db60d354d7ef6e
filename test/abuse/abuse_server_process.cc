#include "test/abuse/abuse_server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

extern char** environ;

namespace h2rpc::testing {
namespace {

// The binary in the test's runfiles (the test runs in the workspace's
// runfiles directory).
std::string AbuseServerPath() {
  const std::string relative = "test/abuse/abuse_server";
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (srcdir == nullptr) return relative;
  return absl::StrCat(srcdir, "/h2rpc/", relative);
}

int MillisUntil(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(
      absl::Ceil(std::min(left, absl::Hours(1)), absl::Milliseconds(1))));
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("wait status ", status);
}

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

std::unique_ptr<AbuseServerProcess> AbuseServerProcess::Start(
    const std::vector<std::string>& args, absl::Duration timeout,
    std::string* error) {
  std::vector<std::string> argv = {AbuseServerPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string command = absl::StrJoin(argv, " ");

  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2: ", std::strerror(errno));
    return nullptr;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2: ", std::strerror(errno));
    close(in[0]);
    close(in[1]);
    return nullptr;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2: ", std::strerror(errno));
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // Nothing else of the test's (its sockets) may count against the child's
  // descriptor limit.
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
    *error = absl::StrCat("cannot start ", command, ": ", std::strerror(rc));
    return nullptr;
  }
  std::unique_ptr<AbuseServerProcess> process(new AbuseServerProcess);
  process->pid_ = pid;
  process->stdin_fd_ = in[1];
  process->stdout_fd_ = out[0];
  process->stderr_fd_ = err[0];
  process->drain_thread_ =
      std::thread([p = process.get()] { p->DrainStderr(); });

  // The first stdout line: "port N".
  const absl::Time deadline = absl::Now() + timeout;
  std::string text;
  bool eof = false;
  while (text.find('\n') == std::string::npos && !eof) {
    pollfd pfd = {process->stdout_fd_, POLLIN, 0};
    const int r = poll(&pfd, 1, MillisUntil(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // deadline (or a poll failure)
    char buffer[256];
    const ssize_t n = read(process->stdout_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      text.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      eof = true;
    }
  }
  absl::string_view line = text;
  line = line.substr(0, line.find('\n'));
  int port = 0;
  if (!absl::ConsumePrefix(&line, "port ") || !absl::SimpleAtoi(line, &port) ||
      port <= 0 || port > 65535) {
    std::string how;
    process->Stop(absl::Seconds(5), &how);
    *error =
        absl::StrCat(command, " did not print \"port N\" within ",
                     absl::FormatDuration(timeout), " (stdout: \"", text,
                     "\"; ", how, ")\n--- stderr ---\n", process->Stderr());
    return nullptr;
  }
  process->port_ = port;
  return process;
}

AbuseServerProcess::~AbuseServerProcess() {
  std::string how;
  Stop(absl::Seconds(10), &how);
}

void AbuseServerProcess::DrainStderr() {
  for (;;) {
    char buffer[4096];
    const ssize_t n = read(stderr_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    transport::io::MutexLock lock(&mu_);
    if (n <= 0) {
      stderr_closed_ = true;
      stderr_grew_.SignalAll();
      return;
    }
    stderr_text_.append(buffer, static_cast<size_t>(n));
    stderr_grew_.SignalAll();
  }
}

bool AbuseServerProcess::WaitForStderr(absl::string_view text,
                                       absl::Duration timeout) {
  // Steady time: std::condition_variable's waits use the steady clock.
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  transport::io::MutexLock lock(&mu_);
  for (;;) {
    if (stderr_text_.find(text.data(), 0, text.size()) != std::string::npos) {
      return true;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (stderr_closed_ || left <= left.zero()) return false;
    stderr_grew_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
}

std::string AbuseServerProcess::Stderr() {
  transport::io::MutexLock lock(&mu_);
  return stderr_text_;
}

bool AbuseServerProcess::CpuTime(absl::Duration* cpu) const {
  std::ifstream file(absl::StrCat("/proc/", pid_, "/stat"));
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

bool AbuseServerProcess::Stop(absl::Duration timeout, std::string* how) {
  if (stopped_) {
    *how = stop_how_;
    return stop_how_.empty();
  }
  stopped_ = true;
  if (stdin_fd_ >= 0) {
    close(stdin_fd_);
    stdin_fd_ = -1;
  }
  if (pid_ > 0) {
    int status = 0;
    const absl::Time deadline = absl::Now() + timeout;
    bool exited = TryReap(pid_, &status);
    // Polls the exit with a deadline (waitpid has no timeout).
    while (!exited && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
      exited = TryReap(pid_, &status);
    }
    if (!exited) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      stop_how_ =
          absl::StrCat("did not exit within ", absl::FormatDuration(timeout),
                       " of its stdin closing; killed");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      stop_how_ = DescribeWaitStatus(status);
    }
    pid_ = -1;
  }
  if (drain_thread_.joinable()) drain_thread_.join();
  for (int* fd : {&stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  *how = stop_how_;
  return stop_how_.empty();
}

}  // namespace h2rpc::testing
