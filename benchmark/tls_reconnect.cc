// New TLS connections per second, with and without session resumption, for
// h2rpc and gRPC C++ 1.51: each connection is a new channel (sharing its
// credentials, and with them the session cache, with the channels before
// it) that makes one EmptyCall and goes, against a server of the same
// stack in this process, over gRPC's interop test credentials (RSA 2048).
// Configurations are interleaved round by round (the machine's speed
// drifts); the medians are printed, with the CPU time of the whole process
// (client and server) per connection.
//
//   tools/bazel run -c opt //benchmark:tls_reconnect -- --seconds=3 --rounds=5

#include <grpc/grpc_security.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/tls_credentials.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/credentials.h"
#include "rpc/server.h"

ABSL_FLAG(int, seconds, 3, "length of each measurement");
ABSL_FLAG(int, rounds, 3, "rounds of every configuration, interleaved");
ABSL_FLAG(std::string, tls_credentials_dir, "",
          "directory of ca.pem, server1.key, server1.pem (default: runfiles)");

namespace h2rpc::benchmark {
namespace {

using grpc::testing::Empty;

constexpr char kEmptyCall[] = "/grpc.testing.TestService/EmptyCall";

absl::Duration ProcessCpu() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return absl::DurationFromTimeval(usage.ru_utime) +
         absl::DurationFromTimeval(usage.ru_stime);
}

struct Sample {
  double connections_per_second = 0;
  double cpu_us_per_connection = 0;
};

// Runs `connect_once` (a new channel, one call) for `seconds`.
template <class ConnectOnce>
Sample Measure(ConnectOnce connect_once) {
  // Warm: the first connection of a configuration is a full handshake
  // either way.
  if (!connect_once()) return Sample();
  const absl::Duration cpu0 = ProcessCpu();
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(absl::GetFlag(FLAGS_seconds));
  int connections = 0;
  while (absl::Now() < end) {
    if (!connect_once()) return Sample();
    ++connections;
  }
  const absl::Duration elapsed = absl::Now() - start;
  Sample sample;
  sample.connections_per_second = connections / absl::ToDoubleSeconds(elapsed);
  sample.cpu_us_per_connection =
      absl::ToDoubleMicroseconds(ProcessCpu() - cpu0) / connections;
  return sample;
}

Sample RunH2rpc(const TlsCredentialFiles& files, bool resumption) {
  SslServerCredentialsOptions server_tls;
  server_tls.pem_key_cert_pairs.push_back(
      {files.server_key, files.server_cert});
  ServerOptions options;
  options.num_loops = 1;
  int port = 0;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .SetOptions(options)
          .AddListeningPort("127.0.0.1:0", SslServerCredentials(server_tls),
                            &port)
          .RegisterCallbackUnary<Empty, Empty>(
              kEmptyCall, [](ServerContext*, const Empty*, Empty*,
                             UnaryDone done) { done(Status()); })
          .BuildAndStart(&status);
  if (server == nullptr) {
    std::fprintf(stderr, "h2rpc server: %s\n", status.ToString().c_str());
    return Sample();
  }
  SslCredentialsOptions client_tls;
  client_tls.pem_root_certs = files.ca_pem;
  client_tls.session_cache_size = resumption ? 16 : 0;
  auto credentials = SslCredentials(client_tls);
  ChannelOptions channel_options;
  channel_options.ssl_target_name_override = kTlsTargetNameOverride;
  const std::string target = absl::StrCat("127.0.0.1:", port);
  Sample sample = Measure([&] {
    auto channel = CreateChannel(target, credentials, channel_options);
    ClientContext context;
    context.set_timeout(absl::Seconds(10));
    Empty response;
    const Status call =
        channel->UnaryCall(&context, kEmptyCall, Empty(), &response);
    if (!call.ok()) {
      std::fprintf(stderr, "h2rpc call: %s\n", call.ToString().c_str());
    }
    return call.ok();
  });
  server->Shutdown(absl::Now());
  return sample;
}

class EmptyService final : public grpc::testing::TestService::Service {
  grpc::Status EmptyCall(grpc::ServerContext*, const Empty*, Empty*) override {
    return grpc::Status::OK;
  }
};

Sample RunGrpcpp(const TlsCredentialFiles& files, bool resumption) {
  grpc::SslServerCredentialsOptions server_tls;
  server_tls.pem_key_cert_pairs.push_back(
      {files.server_key, files.server_cert});
  EmptyService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0",
                           grpc::SslServerCredentials(server_tls), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "gRPC C++ server did not start\n");
    return Sample();
  }
  grpc::SslCredentialsOptions client_tls;
  client_tls.pem_root_certs = files.ca_pem;
  auto credentials = grpc::SslCredentials(client_tls);
  grpc_ssl_session_cache* cache =
      resumption ? grpc_ssl_session_cache_create_lru(16) : nullptr;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(kTlsTargetNameOverride);
  // A connection of its own per channel (gRPC C++ shares subchannels
  // between channels otherwise).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (cache != nullptr) {
    const grpc_arg arg = grpc_ssl_session_cache_create_channel_arg(cache);
    args.SetPointerWithVtable(arg.key, arg.value.pointer.p,
                              arg.value.pointer.vtable);
  }
  const std::string target = absl::StrCat("127.0.0.1:", port);
  Sample sample = Measure([&] {
    auto stub = grpc::testing::TestService::NewStub(
        grpc::CreateCustomChannel(target, credentials, args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    Empty response;
    const grpc::Status call = stub->EmptyCall(&context, Empty(), &response);
    if (!call.ok()) {
      std::fprintf(stderr, "gRPC C++ call: %s\n", call.error_message().c_str());
    }
    return call.ok();
  });
  server->Shutdown(std::chrono::system_clock::now());
  if (cache != nullptr) grpc_ssl_session_cache_destroy(cache);
  return sample;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

int Main() {
  TlsCredentialFiles files;
  std::string error;
  if (!LoadTlsCredentialFiles(absl::GetFlag(FLAGS_tls_credentials_dir), &files,
                              &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  struct Config {
    const char* name;
    bool h2rpc;
    bool resumption;
    std::vector<double> rate = {};
    std::vector<double> cpu = {};
  };
  std::vector<Config> configs = {{"h2rpc, full handshakes", true, false},
                                 {"h2rpc, resumed", true, true},
                                 {"gRPC C++, full handshakes", false, false},
                                 {"gRPC C++, session cache", false, true}};
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (Config& config : configs) {
      const Sample sample = config.h2rpc ? RunH2rpc(files, config.resumption)
                                         : RunGrpcpp(files, config.resumption);
      if (sample.connections_per_second == 0) return 1;
      config.rate.push_back(sample.connections_per_second);
      config.cpu.push_back(sample.cpu_us_per_connection);
      std::printf("round %d  %-26s %8.0f connections/s  %7.0f us CPU each\n",
                  round + 1, config.name, sample.connections_per_second,
                  sample.cpu_us_per_connection);
      std::fflush(stdout);
    }
  }
  std::printf("\nmedians over %d rounds of %d s\n", absl::GetFlag(FLAGS_rounds),
              absl::GetFlag(FLAGS_seconds));
  for (const Config& config : configs) {
    std::printf("%-26s %8.0f connections/s  %7.0f us CPU each\n", config.name,
                Median(config.rate), Median(config.cpu));
  }
  return 0;
}

}  // namespace
}  // namespace h2rpc::benchmark

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::benchmark::Main();
}
