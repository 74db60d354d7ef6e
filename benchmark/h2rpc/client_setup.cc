#include "benchmark/h2rpc/client_setup.h"

#include "rpc/interceptor.h"

namespace h2rpc::benchmark {
namespace {

// An interceptor that does nothing: each hook is a virtual call and no more.
class NoopClientInterceptor final : public ClientInterceptor {};

}  // namespace

ChannelOptions BenchChannelOptions(const ClientConfig& config, int index) {
  ChannelOptions options;
  for (int i = 0; i < config.interceptors; ++i) {
    options.interceptors.push_back(std::make_shared<NoopClientInterceptor>());
  }
  if (!config.cpus.empty()) {
    options.loop_cpu = config.cpus[index % config.cpus.size()];
  }
  options.ssl_target_name_override = config.ssl_target_name_override;
  options.lb_policy = config.lb_policy;
  options.service_config = config.service_config;
  options.busy_poll_us = config.busy_poll_us;
  options.metrics = config.metrics;
  options.tracer = config.tracer;
  options.connection.bdp_probe = config.bdp_probe;
  options.connection.max_receive_message_size = kMaxBenchMessageSize;
  return options;
}

std::shared_ptr<ChannelCredentials> BenchChannelCredentials(
    const ClientConfig& config) {
  if (!config.secure) return InsecureChannelCredentials();
  SslCredentialsOptions ssl;
  ssl.pem_root_certs = config.pem_root_certs;
  return SslCredentials(ssl);
}

}  // namespace h2rpc::benchmark
