#include "test/util/end_signals.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/strip.h"

namespace h2rpc::testing {

EndSignals::~EndSignals() {
  if (fd_ >= 0) close(fd_);
}

bool EndSignals::Install(const char* program) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  if (sigprocmask(SIG_BLOCK, &signals, nullptr) != 0) {
    std::fprintf(stderr, "%s: sigprocmask: %s\n", program,
                 std::strerror(errno));
    return false;
  }
  fd_ = signalfd(-1, &signals, SFD_CLOEXEC);
  if (fd_ < 0) {
    std::fprintf(stderr, "%s: signalfd: %s\n", program, std::strerror(errno));
    return false;
  }
  return true;
}

void EndSignals::WaitForTheEnd(
    const std::function<void(absl::string_view line)>& on_line) {
  std::string input;
  for (;;) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {fd_, POLLIN, 0}};
    const int ready = poll(fds, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    char buffer[256];
    const ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
    if (on_line == nullptr) continue;
    input.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = input.find('\n')) != std::string::npos) {
      absl::string_view line(input.data(), newline);
      absl::ConsumeSuffix(&line, "\r");
      on_line(line);
      input.erase(0, newline + 1);
    }
  }
}

}  // namespace h2rpc::testing
