// A backend for the load-balancing tests: an h2rpc server in its own process
// serving grpc.testing.TestService/UnaryCall (the response's `hostname` is
// the backend's name, so a client can tell which backend answered) and
// grpc.health.v1.Health (the server as a whole and
// "grpc.testing.TestService" SERVING from the start).
//
//   lb_backend ADDRESS NAME
//
// ADDRESS: what Server::Builder::AddListeningPort takes ("127.0.0.1:0",
//   "unix:/tmp/x.sock", "unix-abstract:name").
// NAME: put in every response's `hostname`.
//
// Prints "port N" on stdout (flushed) once serving: the TCP port, 0 for a
// unix-domain socket. Then reads commands on stdin, one per line:
//   serving / not_serving: sets the health status of
//     "grpc.testing.TestService", then prints "ok" (flushed);
//   anything else: prints "error: unknown command '...'".
// Stdin reaching end of file, SIGTERM or SIGINT: Server::Shutdown (GOAWAY;
// calls in flight finish within kShutdownGrace), then exit 0. Exit code 2:
// bad arguments; 1: the server did not start.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/health_check_service.h"
#include "rpc/server.h"

namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::TestService;

// How long calls in flight at shutdown may take to finish.
constexpr absl::Duration kShutdownGrace = absl::Seconds(5);

// UnaryCall answers with the backend's name; every other method is
// UNIMPLEMENTED.
class NamedService final : public TestService::CallbackService {
 public:
  explicit NamedService(std::string name) : name_(std::move(name)) {}

  void UnaryCall(h2rpc::ServerContext* context, const SimpleRequest* request,
                 SimpleResponse* response, h2rpc::UnaryDone done) override {
    response->set_hostname(name_);
    done(h2rpc::Status());
  }

 private:
  const std::string name_;
};

void Reply(const char* line) {
  std::printf("%s\n", line);
  std::fflush(stdout);
}

// Runs one stdin command.
void RunCommand(absl::string_view command, h2rpc::HealthCheckService* health) {
  if (command == "serving" || command == "not_serving") {
    health->SetServingStatus(TestService::kServiceName, command == "serving");
    Reply("ok");
    return;
  }
  std::printf("error: unknown command '%.*s'\n",
              static_cast<int>(command.size()), command.data());
  std::fflush(stdout);
}

// Runs stdin's commands until stdin reaches end of file (or fails) or
// `signal_fd` reports a signal.
void ServeCommands(int signal_fd, h2rpc::HealthCheckService* health) {
  std::string input;
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
    input.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = input.find('\n')) != std::string::npos) {
      absl::string_view line(input.data(), newline);
      absl::ConsumeSuffix(&line, "\r");
      RunCommand(line, health);
      input.erase(0, newline + 1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lb_backend ADDRESS NAME\n");
    return 2;
  }
  // Before any thread starts, so that every thread inherits the mask and the
  // signals reach only signal_fd.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  if (sigprocmask(SIG_BLOCK, &signals, nullptr) != 0) {
    std::fprintf(stderr, "lb_backend: sigprocmask: %s\n", std::strerror(errno));
    return 1;
  }
  const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
  if (signal_fd < 0) {
    std::fprintf(stderr, "lb_backend: signalfd: %s\n", std::strerror(errno));
    return 1;
  }

  NamedService service(argv[2]);
  // Outlives the server.
  h2rpc::HealthCheckService health;
  health.SetServingStatus(TestService::kServiceName, true);
  int port = 0;
  h2rpc::Server::Builder builder;
  builder.AddListeningPort(argv[1], &port);
  service.AddTo(builder);
  health.AddTo(builder);
  h2rpc::Status status;
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) {
    std::fprintf(stderr, "lb_backend %s: cannot listen on %s: %s\n", argv[2],
                 argv[1], status.ToString().c_str());
    return 1;
  }
  std::printf("port %d\n", port);
  std::fflush(stdout);

  ServeCommands(signal_fd, &health);
  server->Shutdown(absl::Now() + kShutdownGrace);
  close(signal_fd);
  return 0;
}
