// A backend of the soak (test/soak): one h2rpc server in its own process,
// listening on a plaintext and a TLS port, serving grpc.testing.TestService
// (UnaryCall, StreamingOutputCall, FullDuplexCall) with callback handlers and
// grpc.health.v1.Health ("grpc.testing.TestService" SERVING).
//
//   soak_backend NAME PLAIN_ADDRESS TLS_ADDRESS KEY_FILE CERT_FILE
//
// NAME: put in every UnaryCall response's `hostname`.
// PLAIN_ADDRESS, TLS_ADDRESS: "127.0.0.1:PORT" (PORT 0 picks a free one); a
//   restarted backend is given the ports it had before.
// KEY_FILE, CERT_FILE: the TLS port's private key and certificate chain,
//   PEM.
//
// Prints "ports PLAIN TLS" on stdout (flushed) once serving. Stdin reaching
// end of file, SIGTERM or SIGINT: Server::Shutdown (GOAWAY; calls in flight
// finish within kShutdownGrace), then exit 0. Exit code 2: bad arguments;
// 1: the server did not start.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/credentials.h"
#include "rpc/health_check_service.h"
#include "rpc/server.h"
#include "test/soak/soak_service.h"

// Freed memory waits in ASan's quarantine (256 MB by default) and would
// look like growth to the soak's memory check.
extern "C" const char* __asan_default_options() {
  return "quarantine_size_mb=8";
}

namespace {

// How long calls in flight at shutdown may take to finish.
constexpr absl::Duration kShutdownGrace = absl::Seconds(5);

bool ReadFile(const char* path, std::string* text) {
  std::ifstream file(path);
  if (!file) return false;
  std::stringstream buffer;
  buffer << file.rdbuf();
  *text = buffer.str();
  return true;
}

// Waits until stdin reaches end of file (or fails) or `signal_fd` reports a
// signal.
void WaitForTheEnd(int signal_fd) {
  for (;;) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {signal_fd, POLLIN, 0}};
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
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: soak_backend NAME PLAIN_ADDRESS TLS_ADDRESS KEY_FILE "
                 "CERT_FILE\n");
    return 2;
  }
  const char* const name = argv[1];
  h2rpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (!ReadFile(argv[4], &pair.private_key) ||
      !ReadFile(argv[5], &pair.cert_chain)) {
    std::fprintf(stderr, "soak_backend %s: cannot read %s or %s\n", name,
                 argv[4], argv[5]);
    return 2;
  }
  // Before any thread starts, so that every thread inherits the mask and the
  // signals reach only signal_fd.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  if (sigprocmask(SIG_BLOCK, &signals, nullptr) != 0) {
    std::fprintf(stderr, "soak_backend: sigprocmask: %s\n",
                 std::strerror(errno));
    return 1;
  }
  const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
  if (signal_fd < 0) {
    std::fprintf(stderr, "soak_backend: signalfd: %s\n", std::strerror(errno));
    return 1;
  }

  h2rpc::SslServerCredentialsOptions tls;
  tls.pem_key_cert_pairs.push_back(std::move(pair));
  h2rpc::testing::SoakService service(name);
  // Outlives the server.
  h2rpc::HealthCheckService health;
  health.SetServingStatus(grpc::testing::TestService::kServiceName, true);
  int plain_port = 0;
  int tls_port = 0;
  h2rpc::Server::Builder builder;
  builder.AddListeningPort(argv[2], &plain_port);
  builder.AddListeningPort(argv[3], h2rpc::SslServerCredentials(tls),
                           &tls_port);
  service.AddTo(builder);
  health.AddTo(builder);
  h2rpc::Status status;
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) {
    std::fprintf(stderr, "soak_backend %s: cannot serve on %s and %s: %s\n",
                 name, argv[2], argv[3], status.ToString().c_str());
    return 1;
  }
  std::printf("ports %d %d\n", plain_port, tls_port);
  std::fflush(stdout);

  WaitForTheEnd(signal_fd);
  server->Shutdown(absl::Now() + kShutdownGrace);
  close(signal_fd);
  return 0;
}
