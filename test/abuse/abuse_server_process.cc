#include "test/abuse/abuse_server_process.h"

#include <poll.h>
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
#include "test/util/child_process.h"

namespace h2rpc::testing {

std::unique_ptr<AbuseServerProcess> AbuseServerProcess::Start(
    const std::vector<std::string>& args, absl::Duration timeout,
    std::string* error) {
  std::vector<std::string> argv = {RunfilesPath("test/abuse/abuse_server")};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string command = absl::StrJoin(argv, " ");

  SpawnedChild child;
  if (!SpawnWithPipes(argv, &child, error)) return nullptr;
  std::unique_ptr<AbuseServerProcess> process(new AbuseServerProcess);
  process->pid_ = child.pid;
  process->stdin_fd_ = child.stdin_fd;
  process->stdout_fd_ = child.stdout_fd;
  process->stderr_fd_ = child.stderr_fd;
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
    if (!ReapWithin(pid_, timeout, &status)) {
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
