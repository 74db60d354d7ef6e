#ifndef H2RPC_TEST_SOAK_BACKEND_CLUSTER_H_
#define H2RPC_TEST_SOAK_BACKEND_CLUSTER_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "test/soak/abuse_probes.h"
#include "test/util/server_process.h"
#include "test/util/tcp_proxy.h"

namespace h2rpc::testing {

// The soak's backends: three soak_backend processes ("b0", "b1", "b2"),
// each behind two TcpProxys in this process, one for its plaintext port
// and one for its TLS port. Clients connect to the proxies, whose ports
// never change; a backend restarted after a kill listens on the ports it
// had before.
//
// Thread-safe. What is done to one backend (a restart, a probe) is done
// under its own lock, one thing at a time, so that a probe never meets a
// backend being restarted; proxies are used without it.
class BackendCluster {
 public:
  static constexpr int kBackends = 3;

  BackendCluster() = default;
  // Kills the backends still running.
  ~BackendCluster();
  BackendCluster(const BackendCluster&) = delete;
  BackendCluster& operator=(const BackendCluster&) = delete;

  // Writes the TLS key and certificate (the test PKI's server) into `dir`,
  // starts the backends and their proxies. False with `*error` on failure.
  bool Start(const std::string& dir, std::string* error);

  // "ipv4:127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2" (the proxies' ports).
  std::string PlainTarget() const;
  std::string TlsTarget() const;

  // Ends backend `i` with SIGKILL (`graceful` false) or SIGTERM (true; it
  // must then exit with code 0), and starts it again. False with `*error`
  // if it had ended by itself before (a crash), the graceful end failed, or
  // the restart did.
  bool Restart(int i, bool graceful, std::string* error);
  // Resets every connection through backend `i`'s plaintext or TLS proxy.
  void ResetConnections(int i, bool tls);
  // Stops forwarding through backend `i`'s plaintext or TLS proxy for
  // `delay`, then forwards again.
  void Delay(int i, bool tls, absl::Duration delay);
  // Runs `probe` against backend `i`, then checks that it answers a fresh
  // call; false with `*error` if it did not.
  bool Probe(int i, const AbuseProbe& probe, std::string* outcome,
             std::string* error);
  // Backends that ended by themselves (crashed) since the last look, each
  // started again; false with `*crashes` describing them if any did.
  bool NoneCrashed(std::string* crashes);

  // Backend `i`'s process id now (-1 while it is being restarted), and how
  // many times it was started.
  pid_t pid(int i) const;
  int starts(int i) const;
  const std::string& name(int i) const { return backends_[i].config.name; }

  // Ends every backend with SIGTERM; false with `*how` if one did not exit
  // with code 0.
  bool TerminateAll(std::string* how);

 private:
  // What a backend is started with.
  struct Config {
    std::string name;
    // 0: a free port (the first start); later starts reuse the ports the
    // first one got.
    int plain_port = 0;
    int tls_port = 0;
    // PEM files of the TLS port's key and certificate chain.
    std::string key_file;
    std::string cert_file;
  };
  struct Backend {
    Config config;
    std::unique_ptr<TcpProxy> plain_proxy;
    std::unique_ptr<TcpProxy> tls_proxy;
    std::atomic<pid_t> pid{-1};
    std::atomic<int> starts{0};
    Mutex mu;  // what is done to the backend
    // //test/soak:soak_backend; its ports() are plain and TLS.
    std::unique_ptr<ServerProcess> process ABSL_GUARDED_BY(mu);
  };

  // Starts backend `i` (its config's ports).
  bool StartLocked(Backend& backend, std::string* error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(backend.mu);
  std::string Target(bool tls) const;

  std::array<Backend, kBackends> backends_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_BACKEND_CLUSTER_H_
