#ifndef H2RPC_BENCHMARK_SERVER_PROCESS_H_
#define H2RPC_BENCHMARK_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace h2rpc::benchmark {

// What one side of a run used: heap allocations, bytes requested, CPU time.
struct SideUsage {
  int64_t allocations = 0;
  int64_t bytes = 0;
  int64_t cpu_nanos = 0;
};

// What a server child reports: its whole process's usage so far, and the
// request messages its server has received (BenchServer::requests()).
struct ServerReport {
  SideUsage usage;
  int64_t requests = 0;
};

// A benchmark server in a child process: this binary run again with
// --server_only. The child prints "listening on port N" (0 on a unix-domain
// socket), then answers each "usage" line on its stdin with
// "usage <allocations> <bytes> <cpu_nanos> <requests>" (a ServerReport), and
// shuts down when its stdin closes.
class ServerProcess {
 public:
  // Starts /proc/self/exe with `args`; null (and `*error`) if it does not
  // report a port within 30 s.
  static std::unique_ptr<ServerProcess> Start(
      const std::vector<std::string>& args, std::string* error);
  // Closes the child's stdin and waits for it to exit.
  ~ServerProcess();

  int port() const { return port_; }
  // The child's report so far; false if it did not answer (within 30 s) or
  // answered something else.
  bool Report(ServerReport* report);

 private:
  ServerProcess(pid_t pid, int to_child, int from_child)
      : pid_(pid), to_child_(to_child), from_child_(from_child) {}
  // The next line from the child, without its newline; false at EOF or
  // after 30 s.
  bool ReadLine(std::string* line);

  pid_t pid_;
  int to_child_;
  int from_child_;
  int port_ = 0;
  std::string buffered_;
};

// The child's side of the protocol: prints the port, then answers "usage"
// lines from stdin with `report()` until stdin closes. The calling thread.
void ServeUsageRequests(int port, const std::function<ServerReport()>& report);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_SERVER_PROCESS_H_
