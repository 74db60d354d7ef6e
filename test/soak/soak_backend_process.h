#ifndef H2RPC_TEST_SOAK_SOAK_BACKEND_PROCESS_H_
#define H2RPC_TEST_SOAK_SOAK_BACKEND_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "transport/io/mutex.h"

namespace h2rpc::testing {

// What a soak backend is started with.
struct SoakBackendConfig {
  std::string name;
  // 0: a free port (the first start); later starts reuse the ports the
  // first one got.
  int plain_port = 0;
  int tls_port = 0;
  // PEM files of the TLS port's key and certificate chain.
  std::string key_file;
  std::string cert_file;
};

// //test/soak:soak_backend running as a child process: stdin and stdout on
// pipes (its "ports P T" line), stderr collected by a drain thread of its
// own. Used from one thread at a time (the caller serializes); the child is
// signalled only by its own process id, and only while it is not reaped.
class SoakBackendProcess {
 public:
  // Starts soak_backend (from the test's runfiles) and waits up to
  // `timeout` for its "ports P T" line. Null with `*error` saying why (and
  // what the child printed) on failure.
  static std::unique_ptr<SoakBackendProcess> Start(
      const SoakBackendConfig& config, absl::Duration timeout,
      std::string* error);

  // Kills the child if it still runs.
  ~SoakBackendProcess();
  SoakBackendProcess(const SoakBackendProcess&) = delete;
  SoakBackendProcess& operator=(const SoakBackendProcess&) = delete;

  pid_t pid() const { return pid_; }
  int plain_port() const { return plain_port_; }
  int tls_port() const { return tls_port_; }

  // Reaps the child if it has ended on its own (a crash): true with
  // `*how` describing how it ended (and its stderr); false while it runs.
  bool EndedByItself(std::string* how);
  // SIGKILL, then reaps it.
  void Kill();
  // SIGTERM (a graceful shutdown), waits up to `timeout`, then SIGKILLs.
  // True if it exited with code 0; otherwise `*how` says how it ended.
  bool Terminate(absl::Duration timeout, std::string* how);

  // Everything the child has written to stderr so far.
  std::string Stderr();

 private:
  SoakBackendProcess() = default;
  // Reads stdout until a whole line is there, `deadline` passes or the pipe
  // ends; true with the line (without its newline).
  bool ReadLine(absl::Time deadline, std::string* line);
  // Joins the drain thread and closes the pipes once the child is reaped.
  void Release();
  void DrainStderr();

  std::string name_;
  pid_t pid_ = -1;  // -1 once reaped
  int plain_port_ = 0;
  int tls_port_ = 0;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::string stdout_buffer_;
  std::thread drain_thread_;
  transport::io::Mutex mu_;
  std::string stderr_text_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_SOAK_BACKEND_PROCESS_H_
