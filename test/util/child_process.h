#ifndef H2RPC_TEST_UTIL_CHILD_PROCESS_H_
#define H2RPC_TEST_UTIL_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace h2rpc::testing {

// Starting a child on pipes and reaping it with a deadline, for the tests'
// process harnesses (ServerProcess, the TLS handshake tests' openssl
// clients). Any thread.

// A child started by SpawnWithPipes: its process id and the parent's ends
// of the pipes on its stdin, stdout and stderr (the caller closes them).
struct SpawnedChild {
  pid_t pid = -1;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// The binary at `relative` (from the workspace root) in the test's
// runfiles.
std::string RunfilesPath(const std::string& relative);

// Starts argv[0] with `argv`, its stdin, stdout and stderr on pipes and no
// other descriptor of this process open in it. False with `*error` (naming
// the command and the errno text) on failure, nothing left open.
bool SpawnWithPipes(std::vector<std::string> argv, SpawnedChild* child,
                    std::string* error);

// Waits up to `timeout` for `pid` to exit (polling: waitpid has no
// timeout), and reaps it. True with its `*status` if it exited; false if it
// did not, after SIGKILLing and reaping it.
bool ReapWithin(pid_t pid, absl::Duration timeout, int* status);

// "exit code N", "killed by signal N (name)".
std::string DescribeWaitStatus(int status);

// User plus system CPU time process `pid` has used so far, from
// /proc/<pid>/stat (clock-tick resolution). False if it cannot be read.
bool ProcessCpuTime(pid_t pid, absl::Duration* cpu);

// Milliseconds from now to `deadline` for poll(): 0 once it has passed, at
// most an hour.
int MillisUntil(absl::Time deadline);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_CHILD_PROCESS_H_
