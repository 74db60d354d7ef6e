#include "test/interop/interop_peer_util.h"

#include <pthread.h>

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace h2rpc::testing {

std::string JoinHostPort(const std::string& host, int port) {
  return host.find(':') != std::string::npos
             ? absl::StrCat("[", host, "]:", port)
             : absl::StrCat(host, ":", port);
}

int CheckClientFlags(const std::string& host, int port, int deadline_ms,
                     std::string* target) {
  if (port <= 0 || port > 65535) {
    std::fprintf(stderr, "--server_port=%d is not a TCP port\n", port);
    return 2;
  }
  if (deadline_ms <= 0) {
    std::fprintf(stderr, "--deadline_ms must be positive\n");
    return 2;
  }
  *target = JoinHostPort(host, port);
  return 0;
}

int CheckServerFlags(const std::string& host, int port, std::string* address) {
  if (port < 0 || port > 65535) {
    std::fprintf(stderr, "--port=%d is not a TCP port\n", port);
    return 2;
  }
  *address = JoinHostPort(host, port);
  return 0;
}

bool BlockShutdownSignals(sigset_t* signals) {
  sigemptyset(signals);
  sigaddset(signals, SIGTERM);
  sigaddset(signals, SIGINT);
  if (pthread_sigmask(SIG_BLOCK, signals, nullptr) != 0) {
    std::fprintf(stderr, "pthread_sigmask failed\n");
    return false;
  }
  return true;
}

void AnnounceListening(int port) {
  std::printf("listening on port %d\n", port);
  std::fflush(stdout);
}

int WaitForShutdownSignal(const sigset_t& signals) {
  int signal_number = 0;
  while (sigwait(&signals, &signal_number) != 0) {
  }
  return signal_number;
}

}  // namespace h2rpc::testing
