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

#include <cstdio>
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
#include "test/util/end_signals.h"

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
  h2rpc::testing::EndSignals end_signals;
  if (!end_signals.Install("soak_backend")) return 1;

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

  end_signals.WaitForTheEnd();
  server->Shutdown(absl::Now() + kShutdownGrace);
  return 0;
}
