#ifndef H2RPC_TEST_INTEROP_INTEROP_SERVER_PROCESS_H_
#define H2RPC_TEST_INTEROP_INTEROP_SERVER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace h2rpc::testing {

// An interop server binary (h2rpc_interop_server or grpcpp_interop_server,
// or h2rpc_proxy) run as a child process: stdin /dev/null, stdout piped (for
// its "listening on port N" line), stderr inherited. The destructor stops
// it with SIGTERM and reaps it. One thread; not copyable.
class InteropServerProcess {
 public:
  InteropServerProcess() = default;
  ~InteropServerProcess();
  InteropServerProcess(const InteropServerProcess&) = delete;
  InteropServerProcess& operator=(const InteropServerProcess&) = delete;

  // Starts the binary at `path` with --port=0; false (with `*error`) if it
  // could not start or did not announce its port within `timeout`.
  bool Start(const std::string& path, absl::Duration timeout,
             std::string* error) {
    return Start(path, {"--port=0"}, timeout, error);
  }
  // The same with `args` as its arguments (any binary that announces its
  // port so).
  bool Start(const std::string& path, const std::vector<std::string>& args,
             absl::Duration timeout, std::string* error);

  // The port it announced (0 before a successful Start).
  int port() const { return port_; }

  // Sends SIGTERM and waits for the process: its wait status (0 for a
  // clean exit), or 0 if it was not running. The destructor does the same.
  int Stop();

 private:
  bool ReadPort(absl::Duration timeout, std::string* error);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int port_ = 0;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_INTEROP_INTEROP_SERVER_PROCESS_H_
