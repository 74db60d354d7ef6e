#ifndef H2RPC_BENCHMARK_RUN_RESULT_H_
#define H2RPC_BENCHMARK_RUN_RESULT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "benchmark/op_stats.h"
#include "benchmark/server_process.h"

namespace h2rpc::benchmark {

// What identifies a run (docs/benchmark_results.md, "features").
struct RunFeatures {
  std::string workload;  // unary, streaming, unconstrained, handshake
  std::string client_stack;
  std::string server_stack;  // "remote" with --target
  int max_concurrent_calls = 1;
  int req_size_bytes = 1024;
  int resp_size_bytes = 1024;
  std::string compression = "off";
  int connections = 1;
  absl::Duration benchtime;
  bool two_processes = false;
  bool secure = false;  // TLS
  int servers = 1;      // server processes (--servers)
  std::string lb_policy = "pick_first";
  int interceptors = 0;  // no-op interceptors per h2rpc side (--interceptors)
  int busy_poll_us = 0;  // h2rpc event loops' busy-polling (--busy_poll_us)
  bool metrics = false;  // CallMetrics on every h2rpc side (--metrics)
  // A72 tracing's sampling probability on every h2rpc side (--tracing);
  // below 0: none.
  double tracing = -1;

  // "unary h2rpc->grpcpp c=120 1024/1024B off", then " conns=N", " tls",
  // " servers=N", " round_robin", " interceptors=N", " busy_poll=Nus",
  // " metrics" and " tracing=P" when not the defaults.
  std::string Title() const;
};

// What one backend served during a run's measured time.
struct BackendRequests {
  std::string address;   // "127.0.0.1:P"
  int64_t requests = 0;  // request messages received (unary: calls)
};

struct RunResult {
  RunFeatures features;
  absl::Duration duration;
  OpStats::Snapshot stats;
  // Unset for a side that was not measured (a remote server, or no
  // allocation counting under a sanitizer).
  std::optional<SideUsage> client;
  std::optional<SideUsage> server;  // all the backends together
  // Each backend, in the target's order; empty when not measured (a remote
  // server, or a child that did not answer).
  std::vector<BackendRequests> backends;
  // CPU time of the --proxy_pids processes (a proxy between client and
  // server) over the measured time; unset without them.
  std::optional<int64_t> proxy_cpu_nanos;

  // unary, streaming: round trips; unconstrained: messages each way (the
  // smaller count); streaming_from_server: messages received.
  int64_t total_ops() const;
  int64_t send_ops() const;
  int64_t recv_ops() const;
  double qps() const;
};

// The header and one line of the table benchmain prints.
std::string TableHeader();
std::string TableRow(const RunResult& result);
// "  backends (requests): 127.0.0.1:P1 10204 (50.1%), ...": each backend's
// share of the requests, for a run with more than one backend; empty
// otherwise.
std::string BackendsLine(const RunResult& result);

// The whole result file (docs/benchmark_results.md). `source_commit`, when
// not empty, is recorded as versions.commit.
std::string ResultFileJson(const std::string& command,
                           const std::string& source_commit,
                           const std::vector<RunResult>& results);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_RUN_RESULT_H_
