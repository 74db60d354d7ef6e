#ifndef H2RPC_TEST_LB_BACKEND_PROCESS_H_
#define H2RPC_TEST_LB_BACKEND_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/io/mutex.h"

namespace h2rpc::testing {

// //test/lb:lb_backend running as a child process: its stdin and stdout on
// pipes (commands and their answers), its stderr collected. The test owns
// the object and calls it from one thread; a drain thread of its own reads
// the child's stderr, so a chatty child never blocks on a full pipe. The
// child is signalled only by its own process id, and only while it has not
// been reaped.
class BackendProcess {
 public:
  // Starts lb_backend (found in the test's runfiles) listening on `address`
  // ("127.0.0.1:0", "unix:/path", "unix-abstract:name") and answering with
  // `name`, and waits up to `timeout` for its "port N" line. Returns null
  // with `*error` saying why (and what the child printed) on failure.
  static std::unique_ptr<BackendProcess> Start(const std::string& address,
                                               const std::string& name,
                                               absl::Duration timeout,
                                               std::string* error);

  // Stop()s the child if it still runs; if it did not exit cleanly (and
  // no Terminate or Stop said so before), prints how it ended and its
  // stderr to stderr.
  ~BackendProcess();
  BackendProcess(const BackendProcess&) = delete;
  BackendProcess& operator=(const BackendProcess&) = delete;

  const std::string& name() const { return name_; }
  // The TCP port it listens on; 0 for a unix-domain socket.
  int port() const { return port_; }

  // Sends `command` ("serving", "not_serving") and waits up to `timeout`
  // for the child's answer. True if it answered "ok"; otherwise `*error`
  // says what it answered, or that it did not.
  bool Command(absl::string_view command, absl::Duration timeout,
               std::string* error);

  // Sends SIGTERM (the child shuts its server down gracefully and exits),
  // waits up to `timeout`, then SIGKILLs it. True if it exited with code 0;
  // otherwise `*how` says how it ended. Later calls (and Stop) return the
  // same.
  bool Terminate(absl::Duration timeout, std::string* how);
  // The same, closing the child's stdin instead of SIGTERM.
  bool Stop(absl::Duration timeout, std::string* how);

  // Everything the child has written to stderr so far.
  std::string Stderr();

 private:
  BackendProcess() = default;
  // Reads the child's stdout until a whole line is there or `deadline`
  // passes or the pipe ends; true with the line (without its newline) in
  // `*line` if one came.
  bool ReadLine(absl::Time deadline, std::string* line);
  // Asks the child to end (SIGTERM if `signal`, else by closing its stdin)
  // and reaps it; see Terminate.
  bool End(bool signal, absl::Duration timeout, std::string* how);
  // Runs on drain_thread_ until the stderr pipe reaches end of file.
  void DrainStderr();

  std::string name_;
  pid_t pid_ = -1;  // -1 once reaped
  int port_ = 0;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  // Read from stdout and not yet returned by ReadLine.
  std::string stdout_buffer_;
  bool ended_ = false;
  // Why the child did not exit cleanly; empty if it did.
  std::string end_how_;
  std::thread drain_thread_;
  transport::io::Mutex mu_;
  std::string stderr_text_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_LB_BACKEND_PROCESS_H_
