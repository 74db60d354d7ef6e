// h2rpc_proxy: a gRPC reverse proxy. Listens on one or more addresses
// (plaintext or TLS) and forwards every call, whatever its method, to one
// target (any gRPC target: "host:port", "dns:///name:port",
// "ipv4:a:p,b:p" with --lb_policy=round_robin, "unix:/path"), with the
// client's deadline, cancellation, metadata and compression, and the
// target's metadata, messages and status back (see forwarder.h). With
// --admin it answers the admin services itself (AdminServices: channelz,
// health, reflection) and forwards the rest.
//
//   h2rpc_proxy --listen=127.0.0.1:8080 --target=127.0.0.1:50051
//
// Prints "listening on port N" on stdout for each TCP address once it
// listens (N the port bound, for a port of 0), "metrics on port N" for
// --metrics_port, and a line of what it
// forwarded on stderr every --report_interval and at exit. SIGTERM or
// SIGINT drains it: calls in flight get --shutdown_grace, then are
// cancelled; it exits 0. Bad flags exit 2; failing to listen exits 1.

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/admin_services.h"
#include "rpc/call_metrics.h"
#include "rpc/channel.h"
#include "rpc/credentials.h"
#include "rpc/metrics/prometheus_endpoint.h"
#include "rpc/server.h"
#include "tools/h2rpc_proxy/forwarder.h"

ABSL_FLAG(std::vector<std::string>, listen, {},
          "Addresses to listen on, comma-separated: HOST:PORT (PORT 0 picks "
          "one), unix:PATH or unix-abstract:NAME.");
ABSL_FLAG(std::string, target, "", "The gRPC target calls are forwarded to.");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain: the listening addresses serve TLS.");
ABSL_FLAG(std::string, tls_key_file, "",
          "PEM private key for --tls_cert_file.");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM roots: clients must present a certificate they sign (mutual "
          "TLS).");
ABSL_FLAG(bool, target_tls, false, "Connect to the target with TLS.");
ABSL_FLAG(std::string, target_ca_file, "",
          "PEM roots to verify the target's certificate with (default: the "
          "system's).");
ABSL_FLAG(std::string, target_name_override, "",
          "The name the target's certificate is checked against (default: "
          "the target's host).");
ABSL_FLAG(std::string, lb_policy, "pick_first",
          "How calls spread over the target's addresses: pick_first or "
          "round_robin.");
ABSL_FLAG(std::string, authority, "",
          ":authority of forwarded calls (default: the client's).");
ABSL_FLAG(int, loops, 1,
          "Event loop threads; each serves clients and has its own "
          "connections to the target.");
ABSL_FLAG(absl::Duration, report_interval, absl::ZeroDuration(),
          "How often to print what was forwarded (0: only at exit).");
ABSL_FLAG(int, metrics_port, -1,
          "Serve gRPC's standard call metrics of both sides (the calls "
          "received and those made to the target, by method) for "
          "Prometheus at http://127.0.0.1:PORT/metrics (0: a free port, "
          "printed as \"metrics on port N\"); -1: none.");
ABSL_FLAG(bool, admin, false,
          "Answer the admin services itself instead of forwarding them: "
          "channelz (showing the proxy's listening sockets, its clients' "
          "connections, and its channels to the target with their "
          "subchannels and connections), health (SERVING) and reflection.");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "How long calls in flight may go on after SIGTERM.");

namespace h2rpc::proxy {
namespace {

constexpr int kBadFlags = 2;

bool ReadFile(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return true;
}

std::string Report(const ForwarderStats& stats) {
  std::vector<std::string> codes;
  for (size_t code = 0; code < stats.calls_ended_by_code.size(); ++code) {
    if (stats.calls_ended_by_code[code] == 0) continue;
    codes.push_back(absl::StrCat(StatusCodeName(static_cast<StatusCode>(code)),
                                 "=", stats.calls_ended_by_code[code]));
  }
  return absl::StrCat(
      "h2rpc_proxy: calls ", stats.calls_started, " (", stats.calls_active,
      " active; ended ", codes.empty() ? "none" : absl::StrJoin(codes, " "),
      "), messages ", stats.messages_to_target, " to the target (",
      stats.bytes_to_target, " bytes) and ", stats.messages_to_clients,
      " to clients (", stats.bytes_to_clients, " bytes)");
}

int Run() {
  const std::vector<std::string> listen = absl::GetFlag(FLAGS_listen);
  const std::string target = absl::GetFlag(FLAGS_target);
  if (listen.empty() || target.empty()) {
    std::fprintf(stderr, "h2rpc_proxy: --listen and --target are required\n");
    return kBadFlags;
  }
  const std::string lb_policy = absl::GetFlag(FLAGS_lb_policy);
  if (lb_policy != "pick_first" && lb_policy != "round_robin") {
    std::fprintf(stderr,
                 "h2rpc_proxy: --lb_policy must be pick_first or "
                 "round_robin\n");
    return kBadFlags;
  }
  if (absl::GetFlag(FLAGS_loops) < 1) {
    std::fprintf(stderr, "h2rpc_proxy: --loops must be at least 1\n");
    return kBadFlags;
  }

  std::shared_ptr<ServerCredentials> server_credentials =
      InsecureServerCredentials();
  if (!absl::GetFlag(FLAGS_tls_cert_file).empty()) {
    SslServerCredentialsOptions tls;
    SslServerCredentialsOptions::PemKeyCertPair pair;
    if (!ReadFile(absl::GetFlag(FLAGS_tls_cert_file), &pair.cert_chain) ||
        !ReadFile(absl::GetFlag(FLAGS_tls_key_file), &pair.private_key)) {
      std::fprintf(stderr,
                   "h2rpc_proxy: cannot read --tls_cert_file or "
                   "--tls_key_file\n");
      return kBadFlags;
    }
    tls.pem_key_cert_pairs.push_back(std::move(pair));
    if (!absl::GetFlag(FLAGS_tls_client_ca_file).empty()) {
      if (!ReadFile(absl::GetFlag(FLAGS_tls_client_ca_file),
                    &tls.pem_root_certs)) {
        std::fprintf(stderr, "h2rpc_proxy: cannot read --tls_client_ca_file\n");
        return kBadFlags;
      }
      tls.client_certificate_request =
          SslClientCertificateRequest::kRequireAndVerify;
    }
    server_credentials = SslServerCredentials(tls);
  }

  // Every call the proxy forwards is of the generic API: its metrics name
  // the methods (at most CallMetrics::Options::max_methods per loop).
  std::shared_ptr<CallMetrics> metrics;
  std::unique_ptr<PrometheusEndpoint> metrics_endpoint;
  if (absl::GetFlag(FLAGS_metrics_port) >= 0) {
    CallMetrics::Options metrics_options;
    metrics_options.record_generic_methods = true;
    metrics = std::make_shared<CallMetrics>(metrics_options);
    PrometheusEndpoint::Options endpoint_options;
    endpoint_options.port = absl::GetFlag(FLAGS_metrics_port);
    Status started;
    metrics_endpoint =
        PrometheusEndpoint::Start(metrics, endpoint_options, &started);
    if (metrics_endpoint == nullptr) {
      std::fprintf(stderr, "h2rpc_proxy: %s\n", started.ToString().c_str());
      return 1;
    }
  }

  std::shared_ptr<ChannelCredentials> channel_credentials =
      InsecureChannelCredentials();
  // Outlives the server; null without --admin.
  std::unique_ptr<AdminServices> admin;
  if (absl::GetFlag(FLAGS_admin)) {
    admin = std::make_unique<AdminServices>();
    admin->health().SetServingStatus("", true);
  }
  ChannelOptions channel_options;
  channel_options.lb_policy = lb_policy;
  channel_options.metrics = metrics;
  if (admin != nullptr) channel_options.channelz = admin->channelz();
  if (absl::GetFlag(FLAGS_target_tls)) {
    SslCredentialsOptions tls;
    if (!absl::GetFlag(FLAGS_target_ca_file).empty() &&
        !ReadFile(absl::GetFlag(FLAGS_target_ca_file), &tls.pem_root_certs)) {
      std::fprintf(stderr, "h2rpc_proxy: cannot read --target_ca_file\n");
      return kBadFlags;
    }
    channel_credentials = SslCredentials(tls);
    channel_options.ssl_target_name_override =
        absl::GetFlag(FLAGS_target_name_override);
  }

  // The shutdown signals go to the sigwait() below only: blocked before any
  // thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Forwarder::Options forwarder_options;
  forwarder_options.authority = absl::GetFlag(FLAGS_authority);
  // One channel per loop: the server runs on the channels' loops.
  std::vector<std::shared_ptr<Channel>> targets;
  for (int i = 0; i < absl::GetFlag(FLAGS_loops); ++i) {
    targets.push_back(
        CreateChannel(target, channel_credentials, channel_options));
  }
  Forwarder forwarder(std::move(targets), forwarder_options);
  Server::Builder builder;
  ServerOptions server_options;
  server_options.metrics = metrics;
  builder.SetOptions(server_options);
  std::vector<int> ports(listen.size(), 0);
  for (size_t i = 0; i < listen.size(); ++i) {
    builder.AddListeningPort(listen[i], server_credentials, &ports[i]);
  }
  forwarder.AddTo(builder);
  if (admin != nullptr) admin->AddTo(builder);
  Status status;
  std::unique_ptr<Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) {
    std::fprintf(stderr, "h2rpc_proxy: cannot listen: %s\n",
                 status.ToString().c_str());
    return 1;
  }
  for (size_t i = 0; i < listen.size(); ++i) {
    if (ports[i] > 0) std::printf("listening on port %d\n", ports[i]);
  }
  if (metrics_endpoint != nullptr) {
    std::printf("metrics on port %d\n", metrics_endpoint->port());
  }
  std::fflush(stdout);

  const absl::Duration interval = absl::GetFlag(FLAGS_report_interval);
  int signal_number = 0;
  while (signal_number == 0) {
    if (interval > absl::ZeroDuration()) {
      const timespec timeout = absl::ToTimespec(interval);
      signal_number = sigtimedwait(&signals, nullptr, &timeout);
      if (signal_number < 0) {
        signal_number = 0;
        std::fprintf(stderr, "%s\n", Report(forwarder.stats()).c_str());
      }
    } else if (sigwait(&signals, &signal_number) != 0) {
      signal_number = 0;
    }
  }
  std::fprintf(stderr, "h2rpc_proxy: signal %d, shutting down\n",
               signal_number);
  server->Shutdown(absl::Now() + absl::GetFlag(FLAGS_shutdown_grace));
  server->Wait();
  std::fprintf(stderr, "%s\n", Report(forwarder.stats()).c_str());
  return 0;
}

}  // namespace
}  // namespace h2rpc::proxy

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "a gRPC reverse proxy: forwards every call to one target.\n"
      "  h2rpc_proxy --listen=HOST:PORT --target=TARGET [flags]");
  absl::ParseCommandLine(argc, argv);
  return h2rpc::proxy::Run();
}
