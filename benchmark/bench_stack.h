#ifndef H2RPC_BENCHMARK_BENCH_STACK_H_
#define H2RPC_BENCHMARK_BENCH_STACK_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "benchmark/op_stats.h"
#include "rpc/call_metrics.h"
#include "rpc/compression.h"
#include "rpc/tracing.h"

namespace h2rpc::benchmark {

// The benchmark's two sides, each implemented on h2rpc and on gRPC C++ so
// that every pairing runs the same workload; the h2rpc server comes twice,
// with callback handlers and reactors (server stack "h2rpc") and with
// synchronous handlers on worker threads ("h2rpc_sync"). The service is
// grpc.testing.BenchmarkService: UnaryCall, StreamingCall (ping-pong),
// StreamingBothWays (each side streams independently) and StreamingFromServer
// (one request, then the server writes until the client cancels: each
// received message is an op). kHandshake makes
// UnaryCalls, each on a connection of its own: an op opens a channel (TCP
// connect, TLS handshake when secure, HTTP/2 preface), completes one call on
// it and closes it.

enum class Workload {
  kUnary,
  kStreaming,
  kUnconstrained,
  kStreamingFromServer,
  kHandshake
};

// Counts a client's streams and calls still running, so that Stop() can
// wait for them.
class Outstanding {
 public:
  void Add() {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
  }
  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--count_ == 0) zero_.notify_all();
  }
  void WaitForZero() {
    std::unique_lock<std::mutex> lock(mu_);
    zero_.wait(lock, [this] { return count_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable zero_;
  int count_ = 0;
};

// The largest message every stack's clients and servers accept in a
// benchmark, both ways, so that large payloads (the WAN rows) run under the
// same limit on each; within h2rpc's default memory_quota_share (32 MiB),
// which must hold a whole message. Bytes.
inline constexpr int kMaxBenchMessageSize = 30 << 20;

struct ClientConfig {
  // Any target in gRPC's naming syntax: "host:port", "dns:///host:port",
  // "ipv4:addr:port,addr:port", "ipv6:[addr]:port,...", "unix:path",
  // "unix-abstract:name". Every connection resolves it.
  std::string target;
  // How each connection (channel) spreads its calls over the target's
  // addresses: "pick_first", "round_robin" or (h2rpc only)
  // "weighted_round_robin" (h2rpc's ChannelOptions::lb_policy, gRPC C++'s
  // GRPC_ARG_LB_POLICY_NAME).
  std::string lb_policy = "pick_first";
  // h2rpc only: ChannelOptions::service_config; empty: none.
  std::string service_config;
  Workload workload = Workload::kUnary;
  // Calls (unary) or streams in flight, spread over `connections`;
  // handshake: connections in flight, each with its one call (`connections`
  // is not used).
  int concurrency = 1;
  int connections = 1;
  int req_size = 1024;
  int resp_size = 1024;  // asked of the server in every request
  CompressionAlgorithm compression = CompressionAlgorithm::kIdentity;
  // CPUs for the client's threads; empty: not pinned.
  std::vector<int> cpus;
  // TLS (with ALPN h2) instead of plaintext: the server's certificate must
  // be signed by `pem_root_certs` and name `ssl_target_name_override` (empty:
  // the target's host).
  bool secure = false;
  std::string pem_root_certs;
  std::string ssl_target_name_override;
  int interceptors = 0;  // h2rpc only: no-op interceptors per channel
  // h2rpc only: ChannelOptions::metrics of every channel (--metrics).
  std::shared_ptr<CallMetrics> metrics;
  // h2rpc only: ChannelOptions::tracer of every channel (--tracing).
  std::shared_ptr<Tracer> tracer;
  // h2rpc only: ChannelOptions::busy_poll_us of every channel.
  int busy_poll_us = 0;
  // h2rpc only: ConnectionOptions::bdp_probe of every channel.
  bool bdp_probe = true;
};

// No-op interceptors installed on each h2rpc side (--interceptors): what
// the interceptor chain itself costs. gRPC C++ sides ignore it.
struct ServerConfig {
  // Where to listen: "host:port" (port 0 picks a free one, see
  // BenchServer::port()), "unix:path" or "unix-abstract:name".
  std::string address = "127.0.0.1:0";
  CompressionAlgorithm compression = CompressionAlgorithm::kIdentity;
  std::vector<int> cpus;
  // TLS (with ALPN h2) instead of plaintext, with this key and certificate
  // chain (PEM, leaf first); clients send no certificate.
  bool secure = false;
  std::string pem_private_key;
  std::string pem_cert_chain;
  int interceptors = 0;  // h2rpc only
  // h2rpc only: ServerOptions::metrics (--metrics).
  std::shared_ptr<CallMetrics> metrics;
  // h2rpc only: ServerOptions::tracer (--tracing).
  std::shared_ptr<Tracer> tracer;
  int busy_poll_us = 0;   // h2rpc only: ServerOptions::busy_poll_us
  bool bdp_probe = true;  // h2rpc only: ConnectionOptions::bdp_probe
  // h2rpc's callback server only, for load-balancing measurements: how
  // long each unary call holds the loop (--server_work_us), the share of
  // unary calls
  // that fail with UNAVAILABLE (--server_fail_percent, 0 to 100), and ORCA
  // load reports in every unary call's trailers (--orca).
  absl::Duration work_per_call;
  int fail_percent = 0;
  bool orca = false;
};

// A client running closed loops until Stop(): every completed round trip
// (or message, unconstrained) is counted in `stats`.
class BenchClient {
 public:
  virtual ~BenchClient() = default;
  virtual void Start() = 0;
  // Stops issuing, ends every stream, and returns once all calls are over.
  virtual void Stop() = 0;
};

// Counts the request messages a server has received (a unary call's
// request, each message of a stream), from any thread: one relaxed atomic
// increment per request.
class RequestCounter {
 public:
  void Count() { count_.fetch_add(1, std::memory_order_relaxed); }
  int64_t Get() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> count_{0};
};

// A running server.
class BenchServer {
 public:
  virtual ~BenchServer() = default;
  // The port it listens on; 0 for a unix-domain socket.
  virtual int port() const = 0;
  // Request messages received so far (see RequestCounter). Any thread.
  virtual int64_t requests() const = 0;
};

std::unique_ptr<BenchClient> NewH2rpcClient(const ClientConfig& config,
                                            OpStats* stats);
// Callback handlers and reactors, on the loop threads.
std::unique_ptr<BenchServer> StartH2rpcServer(const ServerConfig& config,
                                              std::string* error);
// Synchronous handlers (the generated BenchmarkService::Service), on the
// server's worker threads, pinned to config.cpus like its loops.
std::unique_ptr<BenchServer> StartH2rpcSyncServer(const ServerConfig& config,
                                                  std::string* error);
// C++20 coroutines (//rpc/coro): the generated CoroStub on the client,
// CoroService handlers on the loop threads.
std::unique_ptr<BenchClient> NewH2rpcCoroClient(const ClientConfig& config,
                                                OpStats* stats);
std::unique_ptr<BenchServer> StartH2rpcCoroServer(const ServerConfig& config,
                                                  std::string* error);
std::unique_ptr<BenchClient> NewGrpcppClient(const ClientConfig& config,
                                             OpStats* stats);
std::unique_ptr<BenchServer> StartGrpcppServer(const ServerConfig& config,
                                               std::string* error);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_BENCH_STACK_H_
