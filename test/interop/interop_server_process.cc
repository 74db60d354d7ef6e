#include "test/interop/interop_server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

extern char** environ;

namespace h2rpc::testing {

InteropServerProcess::~InteropServerProcess() {
  Stop();
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

int InteropServerProcess::Stop() {
  if (pid_ <= 0) return 0;
  kill(pid_, SIGTERM);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return status;
}

bool InteropServerProcess::Start(const std::string& path,
                                 const std::vector<std::string>& args,
                                 absl::Duration timeout, std::string* error) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2 failed: errno ", errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  std::vector<std::string> strings = {path};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int rc =
      posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  stdout_fd_ = fds[0];
  if (rc != 0) {
    pid_ = -1;
    *error = absl::StrCat("posix_spawn ", path, ": error ", rc);
    return false;
  }
  return ReadPort(timeout, error);
}

// Reads the first line ("listening on port N") with a deadline.
bool InteropServerProcess::ReadPort(absl::Duration timeout,
                                    std::string* error) {
  const absl::Time give_up = absl::Now() + timeout;
  std::string line;
  while (line.find('\n') == std::string::npos) {
    const absl::Duration left = give_up - absl::Now();
    if (left <= absl::ZeroDuration()) {
      *error = "no \"listening on port N\" line in time";
      return false;
    }
    pollfd poll_fd = {stdout_fd_, POLLIN, 0};
    const int64_t wait_ms =
        std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 60000);
    if (poll(&poll_fd, 1, static_cast<int>(wait_ms)) <= 0) continue;
    char buffer[128];
    const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
    if (n <= 0) {
      *error = "the server closed its stdout before announcing its port";
      return false;
    }
    line.append(buffer, static_cast<size_t>(n));
  }
  absl::string_view first(line.data(), line.find('\n'));
  int port = 0;
  if (!absl::ConsumePrefix(&first, "listening on port ") ||
      !absl::SimpleAtoi(first, &port) || port <= 0) {
    *error = absl::StrCat("unexpected first line: ", line);
    return false;
  }
  port_ = port;
  return true;
}

}  // namespace h2rpc::testing
