#ifndef H2RPC_BENCHMARK_H2RPC_CLIENT_SETUP_H_
#define H2RPC_BENCHMARK_H2RPC_CLIENT_SETUP_H_

// What the h2rpc benchmark clients (callback reactors, client.cc, and
// coroutines, coro_client.cc) set their channels up with, alike.

#include <memory>

#include "benchmark/bench_stack.h"
#include "rpc/channel_options.h"
#include "rpc/credentials.h"

namespace h2rpc::benchmark {

// The options of a client's `index`th channel: its CPU (the config's CPUs in
// turn), no-op interceptors, the load-balancing policy and service config,
// metrics and tracing, busy-polling, and the benchmark's message limit.
ChannelOptions BenchChannelOptions(const ClientConfig& config, int index);

// TLS with the config's root certificates, or plaintext.
std::shared_ptr<ChannelCredentials> BenchChannelCredentials(
    const ClientConfig& config);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_H2RPC_CLIENT_SETUP_H_
