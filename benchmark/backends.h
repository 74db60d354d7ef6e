#ifndef H2RPC_BENCHMARK_BACKENDS_H_
#define H2RPC_BENCHMARK_BACKENDS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "benchmark/bench_stack.h"
#include "benchmark/server_process.h"

namespace h2rpc::benchmark {

// The servers one benchmain run drives: one BenchServer in this process, or
// N server child processes (ServerProcess), each on a loopback port of its
// own, reached through one target that names them all. Made and used by the
// run's thread only.
class Backends {
 public:
  // What the backends have done so far.
  struct Snapshot {
    // Request messages each backend has received, in addresses() order.
    std::vector<int64_t> requests;
    // The child processes' usage, summed; unset for a server in this
    // process (whose usage is its threads', see
    // test/util/allocation_counter.h).
    std::optional<SideUsage> usage;
  };

  // Starts a `stack` ("h2rpc", "h2rpc_sync" or "grpcpp") server in this
  // process; null (and `*error`) if it cannot.
  static std::unique_ptr<Backends> StartInProcess(const std::string& stack,
                                                  const ServerConfig& config,
                                                  std::string* error);
  // Starts `count` (at least 1) children, each this binary with
  // `child_args` (which must make it a --server_only server on a free
  // loopback port) followed by its own `per_child_args[i]` (if any), one
  // after the other; null (and `*error`, naming the child) if one does not
  // start. The children started so far are stopped.
  static std::unique_ptr<Backends> StartProcesses(
      int count, const std::vector<std::string>& child_args,
      const std::vector<std::vector<std::string>>& per_child_args,
      std::string* error);

  // Stops the servers (children: closes their stdin and waits for them).
  ~Backends();
  Backends(const Backends&) = delete;
  Backends& operator=(const Backends&) = delete;

  // One backend: "127.0.0.1:P". More: "ipv4:127.0.0.1:P1,127.0.0.1:P2,...",
  // in gRPC's naming syntax, so that one channel resolves them all.
  const std::string& target() const { return target_; }
  // "127.0.0.1:P" of each backend, in the target's order.
  const std::vector<std::string>& addresses() const { return addresses_; }
  // The server in this process, or null if the backends are children.
  BenchServer* in_process() const { return in_process_.get(); }

  // Asks every backend (each child answers over its pipe, within 30 s);
  // false if a child did not answer.
  bool Take(Snapshot* snapshot);

 private:
  Backends() = default;
  void SetAddresses(const std::vector<int>& ports);

  std::unique_ptr<BenchServer> in_process_;
  std::vector<std::unique_ptr<ServerProcess>> children_;
  std::vector<std::string> addresses_;
  std::string target_;
};

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_BACKENDS_H_
