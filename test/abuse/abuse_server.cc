// An h2rpc server in its own process, for hostile-peer tests that need to
// limit or measure the server apart from the test (descriptor limits, CPU
// time). Serves one method, an echo of SimpleRequest's payload:
//
//   abuse_server [--port=N] [--rlimit_nofile=N] [--max_connections=N]
//                [--num_loops=N]
//
// --port: the port on 127.0.0.1 (default 0: any free one).
// --rlimit_nofile: the soft RLIMIT_NOFILE, set before the server starts
//   (default: unchanged).
// --max_connections: ServerOptions::max_connections (default 0: unlimited).
// --num_loops: ServerOptions::num_loops (default 0: one per core).
//
// Prints "port N" on stdout (flushed) once serving, then serves until stdin
// reaches end of file or SIGTERM/SIGINT arrives, shuts down and exits 0.
// Exit code 2: bad flags; 1: the server did not start.
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/util/end_signals.h"

namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

// The echo method's path.
constexpr char kEchoMethod[] = "/grpc.testing.TestService/UnaryCall";

struct Flags {
  int port = 0;
  long rlimit_nofile = -1;  // -1: unchanged
  size_t max_connections = 0;
  int num_loops = 0;
};

// Parses --name=value flags; prints why and returns false on a bad one.
bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    const size_t equals = arg.find('=');
    const absl::string_view name = arg.substr(0, equals);
    const absl::string_view value =
        equals == absl::string_view::npos ? "" : arg.substr(equals + 1);
    bool ok = false;
    if (name == "--port") {
      ok = absl::SimpleAtoi(value, &flags->port) && flags->port >= 0 &&
           flags->port <= 65535;
    } else if (name == "--rlimit_nofile") {
      ok = absl::SimpleAtoi(value, &flags->rlimit_nofile) &&
           flags->rlimit_nofile > 0;
    } else if (name == "--max_connections") {
      ok = absl::SimpleAtoi(value, &flags->max_connections);
    } else if (name == "--num_loops") {
      ok = absl::SimpleAtoi(value, &flags->num_loops) && flags->num_loops >= 0;
    } else {
      std::fprintf(stderr, "abuse_server: unknown flag '%s'\n", argv[i]);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "abuse_server: bad value in '%s'\n", argv[i]);
      return false;
    }
  }
  return true;
}

// Lowers the soft descriptor limit to `limit`.
bool SetDescriptorLimit(long limit) {
  rlimit current;
  if (getrlimit(RLIMIT_NOFILE, &current) != 0) {
    std::fprintf(stderr, "abuse_server: getrlimit: %s\n", std::strerror(errno));
    return false;
  }
  current.rlim_cur = static_cast<rlim_t>(limit);
  if (setrlimit(RLIMIT_NOFILE, &current) != 0) {
    std::fprintf(stderr, "abuse_server: setrlimit(RLIMIT_NOFILE, %ld): %s\n",
                 limit, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;

  h2rpc::testing::EndSignals end_signals;
  if (!end_signals.Install("abuse_server")) return 1;
  if (flags.rlimit_nofile > 0 && !SetDescriptorLimit(flags.rlimit_nofile)) {
    return 2;
  }

  h2rpc::ServerOptions options;
  options.max_connections = flags.max_connections;
  options.num_loops = flags.num_loops;
  int port = 0;
  h2rpc::Status status;
  std::unique_ptr<h2rpc::Server> server =
      h2rpc::Server::Builder()
          .SetOptions(options)
          .AddListeningPort("127.0.0.1:" + std::to_string(flags.port), &port)
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              kEchoMethod,
              [](h2rpc::ServerContext*, const SimpleRequest& request,
                 SimpleResponse* response) {
                response->mutable_payload()->set_body(request.payload().body());
                return h2rpc::Status();
              })
          .BuildAndStart(&status);
  if (server == nullptr) {
    std::fprintf(stderr, "abuse_server: cannot start: %s\n",
                 status.ToString().c_str());
    return 1;
  }
  std::printf("port %d\n", port);
  std::fflush(stdout);

  end_signals.WaitForTheEnd();
  server->Shutdown(absl::Now() + absl::Seconds(5));
  return 0;
}
