#ifndef H2RPC_TEST_UTIL_ETCD_PROCESS_H_
#define H2RPC_TEST_UTIL_ETCD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace h2rpc::testing {

// A real single-member etcd cluster (Debian's /usr/bin/etcd, v3.4) that a
// test runs as a child process, for the etcd resolver and registrar: a
// fresh data directory of its own (under TEST_TMPDIR when set, else /tmp),
// client and peer URLs on free 127.0.0.1 ports (nothing listens on another
// address), its output (stdout and stderr) collected by a drain thread of
// its own. etcdctl (/usr/bin/etcdctl, API v3) reaches it through
// Etcdctl(). Both run with an empty environment, so the test's ETCD_* and
// ETCDCTL_* variables do not reach them.
//
// One thread at a time calls the object (the caller serializes), except
// that Etcdctl() and Output() may be called from any thread until Stop().
// etcd is signalled only by its own process id, and only until it is
// reaped.
class EtcdProcess {
 public:
  // Starts etcd and waits up to `timeout` for it to serve (`etcdctl
  // endpoint health` succeeding: the member, elected leader, commits a
  // read; and `etcdctl member list` naming this member). A port another
  // process took in the meantime is retried on new ports. Null with `*error`
  // saying why (and what etcd printed) on failure, etcd stopped and its
  // directory removed.
  static std::unique_ptr<EtcdProcess> Start(absl::Duration timeout,
                                            std::string* error);

  // Stop()s etcd if it still runs; if it did not end cleanly, prints how it
  // ended and its output to stderr.
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // The port of its client URL, http://127.0.0.1:<client_port>.
  int client_port() const { return client_port_; }
  // The port of its peer URL (raft), http://127.0.0.1:<peer_port>.
  int peer_port() const { return peer_port_; }
  // "127.0.0.1:<client_port>": an etcd endpoint, a gRPC target.
  std::string endpoint() const;
  // -1 once reaped.
  pid_t pid() const { return pid_; }
  // etcd's --data-dir (in a directory Stop() removes).
  const std::string& data_dir() const { return data_dir_; }

  // Runs `etcdctl --endpoints=<endpoint()> <args...>` with ETCDCTL_API=3
  // and waits up to 30 seconds for it to exit. True with its stdout in
  // `*output` (if not null) if it exited with code 0; otherwise `*error`
  // says how it ended, with its stderr and stdout.
  bool Etcdctl(std::vector<std::string> args, std::string* output,
               std::string* error) const;

  // Everything etcd has written to stdout and stderr so far.
  std::string Output() const;

  // SIGTERM, waits up to `timeout` for etcd to exit, SIGKILLs it if it did
  // not, and removes its directory. True if it ended cleanly (exit code 0,
  // or killed by the SIGTERM: etcd re-raises the signal once it has shut
  // down); otherwise `*how` says how it ended, with its output. Once
  // stopped, returns the same again.
  bool Stop(absl::Duration timeout, std::string* how);

 private:
  EtcdProcess() = default;
  // Makes the directory, picks ports and starts etcd on them, without
  // waiting for it; false with `*error` on failure.
  bool Spawn(std::string* error);
  // Polls `etcdctl endpoint health` (and checks that the member answering
  // is this one) until it succeeds (true), etcd exits (false, reaped,
  // `*exited` set) or `deadline` passes (false); `*error` says why.
  bool WaitUntilServing(absl::Time deadline, bool* exited, std::string* error);
  // Etcdctl() with `timeout`.
  bool RunEtcdctl(std::vector<std::string> args, absl::Duration timeout,
                  std::string* output, std::string* error) const;
  // Runs on drain_thread_ until etcd's stdout and stderr both end.
  void DrainOutput();
  // etcd has been reaped: joins the drain thread and closes the pipes.
  void Reaped();

  // Made by Start(), removed by Stop(); data_dir_ is in it.
  std::string temp_dir_;
  std::string data_dir_;
  int client_port_ = -1;
  int peer_port_ = -1;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  // Stopped, and how it ended ("" if cleanly).
  bool stopped_ = false;
  std::string stop_how_;
  std::thread drain_thread_;
  mutable Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_ETCD_PROCESS_H_
