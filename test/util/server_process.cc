#include "test/util/server_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "test/util/child_process.h"

namespace h2rpc::testing {
namespace {

// The ports of a "port N" or "ports N M ..." line; false if it is not one.
bool ParsePortsLine(absl::string_view line, std::vector<int>* ports) {
  const std::vector<absl::string_view> words =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.size() < 2 || (words[0] != "port" && words[0] != "ports") ||
      (words[0] == "port" && words.size() != 2)) {
    return false;
  }
  for (size_t i = 1; i < words.size(); ++i) {
    int port = -1;
    if (!absl::SimpleAtoi(words[i], &port) || port < 0 || port > 65535) {
      return false;
    }
    ports->push_back(port);
  }
  return true;
}

}  // namespace

std::unique_ptr<ServerProcess> ServerProcess::Start(
    std::string name, std::vector<std::string> argv, absl::Duration timeout,
    std::string* error) {
  const std::string command = absl::StrJoin(argv, " ");
  SpawnedChild child;
  if (!SpawnWithPipes(std::move(argv), &child, error)) return nullptr;
  std::unique_ptr<ServerProcess> process(new ServerProcess(std::move(name)));
  process->pid_ = child.pid;
  process->stdin_fd_ = child.stdin_fd;
  process->stdout_fd_ = child.stdout_fd;
  process->stderr_fd_ = child.stderr_fd;
  process->drain_thread_ =
      std::thread([p = process.get()] { p->DrainStderr(); });

  std::string line;
  const bool got_line = process->ReadLine(absl::Now() + timeout, &line);
  if (!got_line || !ParsePortsLine(line, &process->ports_)) {
    std::string how;
    process->Stop(absl::Seconds(5), &how);
    *error = absl::StrCat(command, " did not print \"port N\" within ",
                          absl::FormatDuration(timeout), " (stdout: \"", line,
                          process->stdout_buffer_, "\"; ", how,
                          ")\n--- stderr ---\n", process->Stderr());
    return nullptr;
  }
  return process;
}

ServerProcess::~ServerProcess() {
  if (ended_) return;
  std::string how;
  if (!Stop(absl::Seconds(10), &how)) {
    // A server that crashed explains the test's failures.
    std::fprintf(stderr, "%s\n", how.c_str());
  }
}

bool ServerProcess::ReadLine(absl::Time deadline, std::string* line) {
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
    if (r <= 0) return false;  // the deadline (or a poll failure)
    char buffer[256];
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      stdout_buffer_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return false;  // the child closed its stdout
    }
  }
}

bool ServerProcess::Command(absl::string_view command, absl::Duration timeout,
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

void ServerProcess::DrainStderr() {
  for (;;) {
    char buffer[4096];
    const ssize_t n = read(stderr_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    MutexLock lock(&mu_);
    if (n <= 0) {
      stderr_closed_ = true;
      stderr_grew_.SignalAll();
      return;
    }
    stderr_text_.append(buffer, static_cast<size_t>(n));
    stderr_grew_.SignalAll();
  }
}

bool ServerProcess::WaitForStderr(absl::string_view text,
                                  absl::Duration timeout) {
  // Steady time: std::condition_variable's waits use the steady clock.
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  MutexLock lock(&mu_);
  for (;;) {
    if (stderr_text_.find(text.data(), 0, text.size()) != std::string::npos) {
      return true;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (stderr_closed_ || left <= left.zero()) return false;
    stderr_grew_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
}

std::string ServerProcess::Stderr() {
  MutexLock lock(&mu_);
  return stderr_text_;
}

bool ServerProcess::CpuTime(absl::Duration* cpu) const {
  return ProcessCpuTime(pid_, cpu);
}

bool ServerProcess::EndedByItself(std::string* how) {
  if (ended_) {
    *how = end_how_.empty() ? absl::StrCat(name_, " has ended") : end_how_;
    return true;
  }
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == 0) return false;
  Ended(absl::StrCat("ended by itself: ", DescribeWaitStatus(status)));
  *how = end_how_;
  return true;
}

void ServerProcess::Kill() {
  if (ended_) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  Ended("");
}

bool ServerProcess::Terminate(absl::Duration timeout, std::string* how) {
  return End(/*signal=*/true, timeout, how);
}

bool ServerProcess::Stop(absl::Duration timeout, std::string* how) {
  return End(/*signal=*/false, timeout, how);
}

bool ServerProcess::End(bool signal, absl::Duration timeout, std::string* how) {
  if (!ended_) {
    if (signal) kill(pid_, SIGTERM);
    if (stdin_fd_ >= 0) {
      close(stdin_fd_);
      stdin_fd_ = -1;
    }
    int status = 0;
    if (!ReapWithin(pid_, timeout, &status)) {
      Ended(absl::StrCat("did not exit within ", absl::FormatDuration(timeout),
                         " of ", signal ? "SIGTERM" : "its stdin closing",
                         "; killed"));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      Ended(DescribeWaitStatus(status));
    } else {
      Ended("");
    }
  }
  *how = end_how_;
  return end_how_.empty();
}

void ServerProcess::Ended(std::string how) {
  ended_ = true;
  pid_ = -1;
  if (drain_thread_.joinable()) drain_thread_.join();
  for (int* fd : {&stdin_fd_, &stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  if (!how.empty()) {
    end_how_ = absl::StrCat(name_, ": ", how, "\n--- stderr ---\n", Stderr());
  }
}

}  // namespace h2rpc::testing
