#ifndef H2RPC_TEST_ABUSE_ABUSE_SERVER_PROCESS_H_
#define H2RPC_TEST_ABUSE_ABUSE_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/io/mutex.h"

namespace h2rpc::testing {

// //test/abuse:abuse_server running as a child process: started with its
// stdin and stdout on pipes and its stderr collected, stopped by closing its
// stdin. For tests that limit or measure the server apart from themselves.
// The test owns the object on one thread; a drain thread of its own reads
// the child's stderr, so a chatty child never blocks on a full pipe.
// Children are signalled only by their own process id.
class AbuseServerProcess {
 public:
  // Starts abuse_server (found in the test's runfiles) with `args` and waits
  // up to `timeout` for its "port N" line. Returns null with `*error` saying
  // why (and what the child printed) on failure.
  static std::unique_ptr<AbuseServerProcess> Start(
      const std::vector<std::string>& args, absl::Duration timeout,
      std::string* error);

  // Stop()s the child if it still runs.
  ~AbuseServerProcess();
  AbuseServerProcess(const AbuseServerProcess&) = delete;
  AbuseServerProcess& operator=(const AbuseServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }

  // Waits up to `timeout` for the child's stderr to contain `text`; true if
  // it does.
  bool WaitForStderr(absl::string_view text, absl::Duration timeout);
  // Everything the child has written to stderr so far.
  std::string Stderr();

  // User plus system CPU time the child has used so far, from
  // /proc/<pid>/stat (clock-tick resolution). False if it cannot be read.
  bool CpuTime(absl::Duration* cpu) const;

  // Closes the child's stdin (it shuts down and exits), waits up to
  // `timeout`, then SIGKILLs it. True if it exited by itself with code 0;
  // otherwise `*how` describes how it ended. Later calls return the same.
  bool Stop(absl::Duration timeout, std::string* how);

 private:
  AbuseServerProcess() = default;
  // Runs on drain_thread_ until the stderr pipe reaches end of file.
  void DrainStderr();

  pid_t pid_ = -1;
  int port_ = 0;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  bool stopped_ = false;
  // Why the child did not exit cleanly; empty if it did.
  std::string stop_how_;
  std::thread drain_thread_;
  transport::io::Mutex mu_;
  transport::io::CondVar stderr_grew_;
  std::string stderr_text_ ABSL_GUARDED_BY(mu_);
  bool stderr_closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_ABUSE_ABUSE_SERVER_PROCESS_H_
