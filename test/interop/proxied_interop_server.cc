// An interop server behind h2rpc_proxy, started the way the interop pairing
// driver starts a server:
//
//   proxied_interop_server --port=0 [--use_tls=true]
//       --backend=PATH/TO/INTEROP_SERVER --proxy=PATH/TO/h2rpc_proxy
//       [--tls_testdata_dir=test/interop/testdata]
//
// It starts the backend interop server (plaintext, --port=0, on 127.0.0.1),
// then h2rpc_proxy listening on 127.0.0.1:--port and forwarding to it, and
// announces the proxy's port as its own ("listening on port N"). With
// --use_tls=true the proxy's listener serves TLS with gRPC's interop test
// key pair (the backend stays plaintext), so the pairing's TLS checks
// apply to the proxy. SIGTERM or SIGINT stops the proxy, then the backend,
// each with SIGTERM, and exits 0 if both exited 0 (1 otherwise).

#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "test/interop/interop_peer_util.h"
#include "test/interop/interop_server_process.h"

ABSL_FLAG(int, port, 0, "Port the proxy listens on; 0 picks a free one.");
ABSL_FLAG(bool, use_tls, false, "The proxy's listener serves TLS.");
ABSL_FLAG(std::string, backend, "", "The interop server binary.");
ABSL_FLAG(std::string, proxy, "", "The h2rpc_proxy binary.");
ABSL_FLAG(std::string, tls_testdata_dir, h2rpc::testing::kDefaultTlsTestdataDir,
          "Where server1.key and server1.pem are.");

namespace h2rpc::testing {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(30);

int Run() {
  // The children start before the signals are blocked, so they do not
  // inherit the mask (the driver signals only once the port is announced).
  InteropServerProcess backend;
  std::string error;
  if (!backend.Start(absl::GetFlag(FLAGS_backend), {"--port=0"}, kStartTimeout,
                     &error)) {
    std::fprintf(stderr, "proxied_interop_server: backend: %s\n",
                 error.c_str());
    return 1;
  }
  std::vector<std::string> proxy_args = {
      absl::StrCat("--listen=127.0.0.1:", absl::GetFlag(FLAGS_port)),
      absl::StrCat("--target=127.0.0.1:", backend.port())};
  if (absl::GetFlag(FLAGS_use_tls)) {
    const std::string dir = absl::GetFlag(FLAGS_tls_testdata_dir);
    proxy_args.push_back(
        absl::StrCat("--tls_cert_file=", dir, "/", kServerCertFile));
    proxy_args.push_back(
        absl::StrCat("--tls_key_file=", dir, "/", kServerKeyFile));
  }
  {
    InteropServerProcess proxy;
    if (!proxy.Start(absl::GetFlag(FLAGS_proxy), proxy_args, kStartTimeout,
                     &error)) {
      std::fprintf(stderr, "proxied_interop_server: proxy: %s\n",
                   error.c_str());
      return 1;
    }
    sigset_t signals;
    if (!BlockShutdownSignals(&signals)) return 1;
    AnnounceListening(proxy.port());
    const int signal_number = WaitForShutdownSignal(signals);
    std::fprintf(stderr, "proxied_interop_server: signal %d, stopping\n",
                 signal_number);
    // The proxy first (it drains), then the backend; each must exit 0.
    if (const int status = proxy.Stop(); status != 0) {
      std::fprintf(stderr,
                   "proxied_interop_server: the proxy's wait status is %d\n",
                   status);
      return 1;
    }
  }
  if (const int status = backend.Stop(); status != 0) {
    std::fprintf(stderr,
                 "proxied_interop_server: the backend's wait status is %d\n",
                 status);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::testing::Run();
}
