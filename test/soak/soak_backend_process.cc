#include "test/soak/soak_backend_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "test/util/child_process.h"

namespace h2rpc::testing {

std::unique_ptr<SoakBackendProcess> SoakBackendProcess::Start(
    const SoakBackendConfig& config, absl::Duration timeout,
    std::string* error) {
  const std::vector<std::string> argv = {
      RunfilesPath("test/soak/soak_backend"),
      config.name,
      absl::StrCat("127.0.0.1:", config.plain_port),
      absl::StrCat("127.0.0.1:", config.tls_port),
      config.key_file,
      config.cert_file};
  SpawnedChild child;
  if (!SpawnWithPipes(argv, &child, error)) return nullptr;
  std::unique_ptr<SoakBackendProcess> process(new SoakBackendProcess);
  process->name_ = config.name;
  process->pid_ = child.pid;
  process->stdin_fd_ = child.stdin_fd;
  process->stdout_fd_ = child.stdout_fd;
  process->stderr_fd_ = child.stderr_fd;
  process->drain_thread_ =
      std::thread([p = process.get()] { p->DrainStderr(); });

  std::string line;
  const bool got_line = process->ReadLine(absl::Now() + timeout, &line);
  const std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
  if (!got_line || words.size() != 3 || words[0] != "ports" ||
      !absl::SimpleAtoi(words[1], &process->plain_port_) ||
      !absl::SimpleAtoi(words[2], &process->tls_port_)) {
    std::string how;
    process->Terminate(absl::Seconds(5), &how);
    *error =
        absl::StrCat(config.name, " did not print \"ports P T\" within ",
                     absl::FormatDuration(timeout), " (stdout: \"", line,
                     "\"; ", how, ")\n--- stderr ---\n", process->Stderr());
    return nullptr;
  }
  return process;
}

SoakBackendProcess::~SoakBackendProcess() { Kill(); }

bool SoakBackendProcess::ReadLine(absl::Time deadline, std::string* line) {
  for (;;) {
    const size_t newline = stdout_buffer_.find('\n');
    if (newline != std::string::npos) {
      line->assign(stdout_buffer_, 0, newline);
      stdout_buffer_.erase(0, newline + 1);
      return true;
    }
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

bool SoakBackendProcess::EndedByItself(std::string* how) {
  if (pid_ < 0) {
    *how = absl::StrCat(name_, " was already reaped");
    return true;
  }
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == 0) return false;
  pid_ = -1;
  Release();
  *how = absl::StrCat(name_, " ended by itself: ", DescribeWaitStatus(status),
                      "\n--- stderr ---\n", Stderr());
  return true;
}

void SoakBackendProcess::Kill() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  Release();
}

bool SoakBackendProcess::Terminate(absl::Duration timeout, std::string* how) {
  if (pid_ < 0) {
    *how = absl::StrCat(name_, " was already reaped");
    Release();
    return false;
  }
  kill(pid_, SIGTERM);
  int status = 0;
  const bool exited = ReapWithin(pid_, timeout, &status);
  pid_ = -1;
  Release();
  if (exited && WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  *how = absl::StrCat(name_, ": ",
                      exited ? DescribeWaitStatus(status)
                             : absl::StrCat("did not exit within ",
                                            absl::FormatDuration(timeout),
                                            " of SIGTERM; killed"),
                      "\n--- stderr ---\n", Stderr());
  return false;
}

void SoakBackendProcess::Release() {
  if (drain_thread_.joinable()) drain_thread_.join();
  for (int* fd : {&stdin_fd_, &stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void SoakBackendProcess::DrainStderr() {
  for (;;) {
    char buffer[4096];
    const ssize_t n = read(stderr_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    transport::io::MutexLock lock(&mu_);
    stderr_text_.append(buffer, static_cast<size_t>(n));
  }
}

std::string SoakBackendProcess::Stderr() {
  transport::io::MutexLock lock(&mu_);
  return stderr_text_;
}

}  // namespace h2rpc::testing
