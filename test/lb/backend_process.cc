#include "test/lb/backend_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "test/util/child_process.h"

namespace h2rpc::testing {

std::unique_ptr<BackendProcess> BackendProcess::Start(
    const std::string& address, const std::string& name, absl::Duration timeout,
    std::string* error) {
  std::vector<std::string> argv = {RunfilesPath("test/lb/lb_backend"), address,
                                   name};
  const std::string command = absl::StrCat(argv[0], " ", address, " ", name);

  SpawnedChild child;
  if (!SpawnWithPipes(argv, &child, error)) return nullptr;
  std::unique_ptr<BackendProcess> process(new BackendProcess);
  process->name_ = name;
  process->pid_ = child.pid;
  process->stdin_fd_ = child.stdin_fd;
  process->stdout_fd_ = child.stdout_fd;
  process->stderr_fd_ = child.stderr_fd;
  process->drain_thread_ =
      std::thread([p = process.get()] { p->DrainStderr(); });

  std::string line;
  const bool got_line = process->ReadLine(absl::Now() + timeout, &line);
  absl::string_view rest = line;
  int port = -1;
  if (!got_line || !absl::ConsumePrefix(&rest, "port ") ||
      !absl::SimpleAtoi(rest, &port) || port < 0 || port > 65535) {
    std::string how;
    process->Stop(absl::Seconds(5), &how);
    *error = absl::StrCat(command, " did not print \"port N\" within ",
                          absl::FormatDuration(timeout), " (stdout: \"", line,
                          process->stdout_buffer_, "\"; ", how,
                          ")\n--- stderr ---\n", process->Stderr());
    return nullptr;
  }
  process->port_ = port;
  return process;
}

BackendProcess::~BackendProcess() {
  const bool reported = ended_;  // Terminate or Stop told the test
  std::string how;
  if (!Stop(absl::Seconds(10), &how) && !reported) {
    // A backend that crashed explains the test's failures.
    std::fprintf(stderr, "lb_backend %s\n", how.c_str());
  }
}

bool BackendProcess::ReadLine(absl::Time deadline, std::string* line) {
  for (;;) {
    const size_t newline = stdout_buffer_.find('\n');
    if (newline != std::string::npos) {
      line->assign(stdout_buffer_, 0, newline);
      stdout_buffer_.erase(0, newline + 1);
      return true;
    }
    if (stdout_fd_ < 0) return false;
    pollfd pfd = {stdout_fd_, POLLIN, 0};
    const int r = poll(&pfd, 1, MillisUntil(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // deadline (or a poll failure)
    char buffer[256];
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      stdout_buffer_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return false;  // the child closed its stdout
    }
  }
}

bool BackendProcess::Command(absl::string_view command, absl::Duration timeout,
                             std::string* error) {
  if (ended_ || stdin_fd_ < 0) {
    *error = absl::StrCat(name_, " has ended");
    return false;
  }
  const std::string text = absl::StrCat(command, "\n");
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n =
        write(stdin_fd_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = absl::StrCat("writing '", command, "' to ", name_, ": ",
                            std::strerror(errno));
      return false;
    }
    written += static_cast<size_t>(n);
  }
  std::string answer;
  if (!ReadLine(absl::Now() + timeout, &answer)) {
    *error = absl::StrCat(name_, " did not answer '", command, "' within ",
                          absl::FormatDuration(timeout), "\n--- stderr ---\n",
                          Stderr());
    return false;
  }
  if (answer != "ok") {
    *error =
        absl::StrCat(name_, " answered '", command, "' with \"", answer, "\"");
    return false;
  }
  return true;
}

bool BackendProcess::Terminate(absl::Duration timeout, std::string* how) {
  return End(/*signal=*/true, timeout, how);
}

bool BackendProcess::Stop(absl::Duration timeout, std::string* how) {
  return End(/*signal=*/false, timeout, how);
}

bool BackendProcess::End(bool signal, absl::Duration timeout,
                         std::string* how) {
  if (ended_) {
    *how = end_how_;
    return end_how_.empty();
  }
  ended_ = true;
  if (pid_ > 0 && signal) kill(pid_, SIGTERM);
  if (stdin_fd_ >= 0) {
    close(stdin_fd_);
    stdin_fd_ = -1;
  }
  if (pid_ > 0) {
    int status = 0;
    if (!ReapWithin(pid_, timeout, &status)) {
      end_how_ = absl::StrCat(
          "did not exit within ", absl::FormatDuration(timeout), " of ",
          signal ? "SIGTERM" : "its stdin closing", "; killed");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      end_how_ = DescribeWaitStatus(status);
    }
    pid_ = -1;
  }
  if (drain_thread_.joinable()) drain_thread_.join();
  for (int* fd : {&stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  if (!end_how_.empty()) {
    end_how_ =
        absl::StrCat(name_, ": ", end_how_, "\n--- stderr ---\n", Stderr());
  }
  *how = end_how_;
  return end_how_.empty();
}

void BackendProcess::DrainStderr() {
  for (;;) {
    char buffer[4096];
    const ssize_t n = read(stderr_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    transport::io::MutexLock lock(&mu_);
    stderr_text_.append(buffer, static_cast<size_t>(n));
  }
}

std::string BackendProcess::Stderr() {
  transport::io::MutexLock lock(&mu_);
  return stderr_text_;
}

}  // namespace h2rpc::testing
