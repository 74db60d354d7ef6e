#include "test/lb/backend_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
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

extern char** environ;

namespace h2rpc::testing {
namespace {

// The binary in the test's runfiles (the test runs in the workspace's
// runfiles directory).
std::string BackendPath() {
  const std::string relative = "test/lb/lb_backend";
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

std::unique_ptr<BackendProcess> BackendProcess::Start(
    const std::string& address, const std::string& name, absl::Duration timeout,
    std::string* error) {
  std::vector<std::string> argv = {BackendPath(), address, name};
  const std::string command = absl::StrCat(argv[0], " ", address, " ", name);

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
  // None of the test's descriptors (its sockets, other children's pipes)
  // may leak into the child.
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
  std::unique_ptr<BackendProcess> process(new BackendProcess);
  process->name_ = name;
  process->pid_ = pid;
  process->stdin_fd_ = in[1];
  process->stdout_fd_ = out[0];
  process->stderr_fd_ = err[0];
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
