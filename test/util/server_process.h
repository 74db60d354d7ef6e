#ifndef H2RPC_TEST_UTIL_SERVER_PROCESS_H_
#define H2RPC_TEST_UTIL_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace h2rpc::testing {

// A server a test runs as a child process (//test/abuse:abuse_server,
// //test/lb:lb_backend, //test/soak:soak_backend): its stdin and stdout on
// pipes, its stderr collected by a drain thread of its own (a chatty child
// never blocks on a full pipe). The server prints "port N" or "ports N M
// ..." on stdout once it serves, may answer commands on stdin with one line
// each, and shuts down gracefully when its stdin closes or on SIGTERM.
//
// One thread at a time calls the object (the caller serializes). The child
// is signalled only by its own process id, and only until it is reaped;
// the first call that reaps it (EndedByItself, Kill, Terminate, Stop)
// records how it ended, and later ones return that.
class ServerProcess {
 public:
  // Starts `argv` (argv[0] a path: see RunfilesPath in child_process.h) and
  // waits up to `timeout` for its "port N" or "ports N M ..." line. `name`
  // stands for the server in messages. Null with `*error` saying why (and
  // what the child printed) on failure, the child stopped.
  static std::unique_ptr<ServerProcess> Start(std::string name,
                                              std::vector<std::string> argv,
                                              absl::Duration timeout,
                                              std::string* error);

  // Stop()s the child if it still runs; if it did not exit cleanly and no
  // earlier call said so, prints how it ended and its stderr to stderr.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& name() const { return name_; }
  // -1 once reaped.
  pid_t pid() const { return pid_; }
  // The ports of its first line, in order; port() is the first (0 for a
  // unix-domain socket).
  const std::vector<int>& ports() const { return ports_; }
  int port() const { return ports_.front(); }

  // Sends `command` as a line and waits up to `timeout` for the child's
  // answer. True if it answered "ok"; otherwise `*error` says what it
  // answered, or that it did not.
  bool Command(absl::string_view command, absl::Duration timeout,
               std::string* error);

  // Waits up to `timeout` for the child's stderr to contain `text`; true if
  // it does.
  bool WaitForStderr(absl::string_view text, absl::Duration timeout);
  // Everything the child has written to stderr so far.
  std::string Stderr();

  // User plus system CPU time the child has used so far, from
  // /proc/<pid>/stat (clock-tick resolution). False if it cannot be read.
  bool CpuTime(absl::Duration* cpu) const;

  // Reaps the child if it has ended on its own (a crash), without waiting:
  // true with `*how` describing how it ended (and its stderr); false while
  // it runs. True (with the recorded ending) once it has been reaped.
  bool EndedByItself(std::string* how);
  // SIGKILL, then reaps it: an ending the test asked for, so not reported.
  void Kill();
  // SIGTERM (a graceful shutdown), waits up to `timeout`, then SIGKILLs.
  // True if it exited with code 0; otherwise `*how` says how it ended.
  bool Terminate(absl::Duration timeout, std::string* how);
  // The same, closing the child's stdin instead of SIGTERM.
  bool Stop(absl::Duration timeout, std::string* how);

 private:
  explicit ServerProcess(std::string name) : name_(std::move(name)) {}
  // Reads stdout until a whole line is there, `deadline` passes or the pipe
  // ends; true with the line (without its newline) in `*line` if one came.
  bool ReadLine(absl::Time deadline, std::string* line);
  // Asks the child to end (SIGTERM if `signal`, else by closing its stdin)
  // and reaps it; see Terminate.
  bool End(bool signal, absl::Duration timeout, std::string* how);
  // The child has been reaped: records `how` it ended ("" for a clean exit
  // or a kill on request), joins the drain thread and closes the pipes.
  void Ended(std::string how);
  // Runs on drain_thread_ until the stderr pipe reaches end of file.
  void DrainStderr();

  const std::string name_;
  pid_t pid_ = -1;
  std::vector<int> ports_;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  // Read from stdout and not yet returned by ReadLine.
  std::string stdout_buffer_;
  // Reaped, and why it did not exit cleanly ("" if it did, or was killed on
  // request).
  bool ended_ = false;
  std::string end_how_;
  std::thread drain_thread_;
  Mutex mu_;
  CondVar stderr_grew_;
  std::string stderr_text_ ABSL_GUARDED_BY(mu_);
  bool stderr_closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_SERVER_PROCESS_H_
