// A backend for the load-balancing tests: an h2rpc server in its own process
// serving grpc.testing.TestService/UnaryCall (the response's `hostname` is
// the backend's name, so a client can tell which backend answered) and
// grpc.health.v1.Health (the server as a whole and
// "grpc.testing.TestService" SERVING from the start).
//
//   lb_backend ADDRESS NAME [ETCD SERVICE TTL_SECONDS]
//
// ADDRESS: what Server::Builder::AddListeningPort takes ("127.0.0.1:0",
//   "unix:/tmp/x.sock", "unix-abstract:name").
// NAME: put in every response's `hostname`.
// ETCD SERVICE TTL_SECONDS: once serving, registers "127.0.0.1:PORT" in etcd
//   at ETCD under SERVICE with an EtcdRegistrar whose lease lives
//   TTL_SECONDS (its Metadata {"name": NAME}); on the way out (not when
//   killed) revokes it before the server shuts down.
//
// Prints "port N" on stdout (flushed) once serving: the TCP port, 0 for a
// unix-domain socket. Then reads commands on stdin, one per line:
//   serving / not_serving: sets the health status of
//     "grpc.testing.TestService", then prints "ok" (flushed);
//   fail P: from now on P of every 100 UnaryCalls (0 to 100) fail with
//     UNAVAILABLE, then prints "ok";
//   anything else: prints "error: unknown command '...'".
// Stdin reaching end of file, SIGTERM or SIGINT: Server::Shutdown (GOAWAY;
// calls in flight finish within kShutdownGrace), then exit 0. Exit code 2:
// bad arguments; 1: the server did not start.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/etcd/etcd_registrar.h"
#include "rpc/health_check_service.h"
#include "rpc/server.h"
#include "test/util/end_signals.h"

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
    // Evenly spread: the first P of each 100 calls fail.
    if (calls_.fetch_add(1, std::memory_order_relaxed) % 100 <
        fail_percent_.load(std::memory_order_relaxed)) {
      done(h2rpc::Status(h2rpc::StatusCode::kUnavailable,
                         name_ + " fails this call on purpose"));
      return;
    }
    response->set_hostname(name_);
    done(h2rpc::Status());
  }

  void set_fail_percent(int percent) {
    fail_percent_.store(static_cast<uint64_t>(percent),
                        std::memory_order_relaxed);
  }

 private:
  const std::string name_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> fail_percent_{0};
};

void Reply(const char* line) {
  std::printf("%s\n", line);
  std::fflush(stdout);
}

// Runs one stdin command.
void RunCommand(absl::string_view command, h2rpc::HealthCheckService* health,
                NamedService* service) {
  if (command == "serving" || command == "not_serving") {
    health->SetServingStatus(TestService::kServiceName, command == "serving");
    Reply("ok");
    return;
  }
  int percent = 0;
  if (absl::ConsumePrefix(&command, "fail ") &&
      absl::SimpleAtoi(command, &percent) && percent >= 0 && percent <= 100) {
    service->set_fail_percent(percent);
    Reply("ok");
    return;
  }
  std::printf("error: unknown command '%.*s'\n",
              static_cast<int>(command.size()), command.data());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int ttl_seconds = 0;
  if ((argc != 3 && argc != 6) ||
      (argc == 6 &&
       (!absl::SimpleAtoi(argv[5], &ttl_seconds) || ttl_seconds <= 0))) {
    std::fprintf(stderr,
                 "usage: lb_backend ADDRESS NAME [ETCD SERVICE TTL_SECONDS]\n");
    return 2;
  }
  h2rpc::testing::EndSignals end_signals;
  if (!end_signals.Install("lb_backend")) return 1;

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
  std::unique_ptr<h2rpc::EtcdRegistrar> registrar;
  if (argc == 6) {
    h2rpc::EtcdRegistrar::Options options;
    options.etcd = argv[3];
    options.service = argv[4];
    options.address = absl::StrCat("127.0.0.1:", port);
    options.metadata_json = absl::StrCat(R"({"name": ")", argv[2], R"("})");
    options.ttl = absl::Seconds(ttl_seconds);
    status = h2rpc::EtcdRegistrar::Start(std::move(options), &registrar);
    if (!status.ok()) {
      std::fprintf(stderr, "lb_backend %s: cannot register in etcd: %s\n",
                   argv[2], status.ToString().c_str());
      return 1;
    }
  }
  std::printf("port %d\n", port);
  std::fflush(stdout);

  end_signals.WaitForTheEnd([&health, &service](absl::string_view command) {
    RunCommand(command, &health, &service);
  });
  if (registrar != nullptr) {
    // Clients stop picking this backend before it stops serving.
    status = registrar->Stop();
    if (!status.ok()) {
      std::fprintf(stderr, "lb_backend %s: %s\n", argv[2],
                   status.ToString().c_str());
    }
  }
  server->Shutdown(absl::Now() + kShutdownGrace);
  return 0;
}
