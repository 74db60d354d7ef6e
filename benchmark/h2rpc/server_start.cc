#include "benchmark/h2rpc/server_start.h"

#include <vector>

#include "benchmark/cpu_affinity.h"
#include "rpc/credentials.h"
#include "rpc/interceptor.h"

namespace h2rpc::benchmark {
namespace {

// Does nothing: each hook is a virtual call and no more.
class NoopServerInterceptor final : public ServerInterceptor {};

ServerOptions OptionsFor(const ServerConfig& config) {
  ServerOptions options;
  options.num_loops =
      config.cpus.empty() ? 1 : static_cast<int>(config.cpus.size());
  options.loop_cpus = config.cpus;
  options.default_compression = config.compression;
  options.busy_poll_us = config.busy_poll_us;
  options.metrics = config.metrics;
  options.tracer = config.tracer;
  options.connection.bdp_probe = config.bdp_probe;
  options.connection.max_receive_message_size = kMaxBenchMessageSize;
  // One client, often on one connection: every synchronous handler thread
  // may serve it.
  options.max_sync_threads_per_connection = options.max_sync_threads;
  for (int i = 0; i < config.interceptors; ++i) {
    options.interceptors.push_back(std::make_shared<NoopServerInterceptor>());
  }
  return options;
}

std::shared_ptr<ServerCredentials> CredentialsFor(const ServerConfig& config) {
  if (!config.secure) return InsecureServerCredentials();
  SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back(
      {config.pem_private_key, config.pem_cert_chain});
  return SslServerCredentials(ssl);
}

}  // namespace

std::unique_ptr<Server> StartH2rpcBenchServer(
    const ServerConfig& config,
    const std::function<void(Server::Builder&)>& add_services, int* port,
    std::string* error) {
  Server::Builder builder;
  builder.SetOptions(OptionsFor(config))
      .AddListeningPort(config.address, CredentialsFor(config), port);
  add_services(builder);
  ScopedAffinity affinity(config.cpus);
  if (!affinity.error().empty()) {
    *error = affinity.error();
    return nullptr;
  }
  Status status;
  std::unique_ptr<Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) *error = status.ToString();
  return server;
}

}  // namespace h2rpc::benchmark
