#include "test/interop/interop_peer_util.h"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

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

int ReadTestdataFile(const std::string& dir, const std::string& file,
                     std::string* contents) {
  const std::string path = absl::StrCat(dir, "/", file);
  FILE* in = std::fopen(path.c_str(), "rb");
  int error = in == nullptr ? errno : 0;
  std::string data;
  if (in != nullptr) {
    char buffer[8192];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), in)) > 0) {
      data.append(buffer, n);
    }
    if (std::ferror(in)) error = errno;
    std::fclose(in);
  }
  if (error != 0) {
    std::fprintf(stderr,
                 "cannot read %s: %s (--tls_testdata_dir must name the "
                 "directory holding ca.pem, server1.key and server1.pem)\n",
                 path.c_str(), std::strerror(error));
    return 2;
  }
  if (data.empty()) {
    std::fprintf(stderr, "%s is empty\n", path.c_str());
    return 2;
  }
  *contents = std::move(data);
  return 0;
}

int CheckClientTlsFlags(bool use_tls, bool use_test_ca,
                        const std::string& server_host_override) {
  if (use_tls) return 0;
  if (use_test_ca) {
    std::fprintf(stderr, "--use_test_ca=true needs --use_tls=true\n");
    return 2;
  }
  if (!server_host_override.empty()) {
    std::fprintf(stderr, "--server_host_override needs --use_tls=true\n");
    return 2;
  }
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
