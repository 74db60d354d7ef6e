// Pairs one interop client binary with one interop server binary and runs
// interop test cases between them, each case a separate gtest test.
//
//   interop_pairing_test --server=PATH --client=PATH --cases=a,b,c
//       [--tls] [--server_arg=ARG]... [--client_arg=ARG]...
//       [--server_start_timeout_s=30] [--client_timeout_s=90]
//       [--shutdown_grace_s=5] [gtest flags]
//
// Paths are relative to the working directory (under `bazel test`, the
// runfiles root, so "$(location :target)" works).
//
// The server is started as `SERVER --port=0 [server args]` with stdin from
// /dev/null, stdout piped and stderr appended to a log file. Its first stdout
// line must be "listening on port N" within --server_start_timeout_s; later
// stdout output is drained and kept. Each case then runs
// `CLIENT --server_host=127.0.0.1 --server_port=N --test_case=CASE
// [client args]`, which must exit 0 within --client_timeout_s (it is killed
// otherwise); its stdout and stderr, and what the server wrote to stderr
// meanwhile, go into the failure message. A case also fails when the server
// dies during it; the next case then starts a new server. A server that
// fails to start is not started again: every later case fails at once with
// the same message. The last test,
// InteropServer.StopsOnSigterm, sends SIGTERM and expects the server to exit 0
// within --shutdown_grace_s (it is killed with SIGKILL otherwise). A server
// still running when the tests end is stopped the same way.
//
// --tls runs the pairing over TLS with gRPC's interop test credentials: the
// server gets --use_tls=true (before the --server_arg ones), each case's
// client --use_tls=true --use_test_ca=true
// --server_host_override=foo.test.google.fr (before the --client_arg ones).
// Three more tests, before StopsOnSigterm, prove that TLS is really in use
// and verified: the client runs empty_unary (with --deadline_ms=10000, no
// --client_arg) without TLS (InteropTls.ServerRefusesPlaintextClient),
// with TLS but the system's roots instead of the test CA
// (InteropTls.ClientRejectsUntrustedCa) and with the test CA but no host
// override, so that 127.0.0.1 does not match the certificate
// (InteropTls.ClientRejectsWrongHostName). Each must fail (exit code 1) with
// UNAVAILABLE in its output, and the server must stay up.
//
// Child processes are spawned with posix_spawn and signalled only by their
// own process ids.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

extern char** environ;

namespace h2rpc::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Largest excerpt of a child's output put into one failure message.
constexpr size_t kMaxExcerptBytes = 32 * 1024;

// The client flags of a TLS pairing's cases; the probes use subsets.
constexpr char kUseTls[] = "--use_tls=true";
constexpr char kUseTestCa[] = "--use_test_ca=true";
constexpr char kHostOverride[] = "--server_host_override=foo.test.google.fr";

struct Options {
  std::string server;
  std::string client;
  std::vector<std::string> cases;
  bool tls = false;
  std::vector<std::string> server_args;
  std::vector<std::string> client_args;
  int server_start_timeout_s = 30;
  int client_timeout_s = 90;
  int shutdown_grace_s = 5;
};

Options& GlobalOptions() {
  static Options* options = new Options;
  return *options;
}

// The last kMaxExcerptBytes of `text`, marked when cut.
std::string Excerpt(const std::string& text) {
  if (text.size() <= kMaxExcerptBytes) return text;
  return absl::StrCat("[... ", text.size() - kMaxExcerptBytes,
                      " earlier bytes cut ...]\n",
                      text.substr(text.size() - kMaxExcerptBytes));
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("wait status ", status);
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int MillisUntil(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Reaps `pid` if it has exited, without blocking. Returns true and sets
// `*status` when it has.
bool TryReap(pid_t pid, int* status) {
  for (;;) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r == 0) return false;
    if (errno != EINTR) {
      *status = 0;
      return true;  // not our child any more (should not happen)
    }
  }
}

// Waits until `pid` exits or `deadline` passes; true (with `*status`) when
// it exited.
bool WaitUntil(pid_t pid, Clock::time_point deadline, int* status) {
  for (;;) {
    if (TryReap(pid, status)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// SIGKILLs `pid` and reaps it.
int KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A started child: its pid and the read end of its stdout pipe.
struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;
};

// Starts `argv` with stdin from /dev/null and stdout on a new pipe. Its
// stderr goes to `stderr_fd`, or to the same pipe when `stderr_fd` is -1.
bool Spawn(const std::vector<std::string>& argv, int stderr_fd, Child* child,
           std::string* error) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe2: ", strerror(errno));
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions,
                                   stderr_fd < 0 ? pipe_fds[1] : stderr_fd, 2);
  std::vector<char*> c_argv;
  for (const std::string& arg : argv) {
    c_argv.push_back(const_cast<char*>(arg.c_str()));
  }
  c_argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr,
                             c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    *error = absl::StrCat("cannot start ", argv[0], ": ", strerror(rc));
    return false;
  }
  child->pid = pid;
  child->stdout_fd = pipe_fds[0];
  return true;
}

// Reads what is available on `fd` into `out`. Returns false at end of file
// (or on a read error).
bool ReadSome(int fd, std::string* out) {
  char buffer[16384];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out->append(buffer, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Parses "listening on port N".
bool ParsePortLine(absl::string_view line, int* port) {
  constexpr absl::string_view kPrefix = "listening on port ";
  if (!absl::ConsumePrefix(&line, kPrefix)) return false;
  if (line.empty() || line.size() > 5) return false;
  for (char c : line) {
    if (c < '0' || c > '9') return false;
  }
  int value = 0;
  if (!absl::SimpleAtoi(line, &value) || value <= 0 || value > 65535) {
    return false;
  }
  *port = value;
  return true;
}

// The server under test, started on demand and shared by the cases.
class ServerProcess {
 public:
  ~ServerProcess() { RemoveLog(); }

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  // Offset in the stderr log where the current (or last) server started.
  size_t log_start() const { return log_start_; }

  // Starts the server unless it is running. On failure, `*error` says why
  // (with what the server printed). A failed start is not retried: later
  // calls return the same error at once.
  bool EnsureRunning(std::string* error) {
    if (running()) return true;
    if (!start_error_.empty()) {
      *error = absl::StrCat("(an earlier start failed) ", start_error_);
      return false;
    }
    if (!Start(error)) {
      start_error_ = *error;
      return false;
    }
    return true;
  }

  // Returns false (with `*how`) when the server has exited since it
  // started; it is then no longer running.
  bool CheckAlive(std::string* how) {
    if (!running()) {
      *how = "the server is not running";
      return false;
    }
    int status = 0;
    if (!TryReap(pid_, &status)) return true;
    *how = absl::StrCat("the server (pid ", pid_, ") exited (",
                        DescribeWaitStatus(status), ")");
    pid_ = -1;
    FinishDrain();
    return false;
  }

  // SIGTERMs the server and waits up to `grace` for it, then SIGKILLs it.
  // Returns its wait status; `*killed` says whether SIGKILL was needed.
  int Stop(std::chrono::seconds grace, bool* killed) {
    *killed = false;
    int status = 0;
    if (!running()) return status;
    kill(pid_, SIGTERM);
    if (!WaitUntil(pid_, Clock::now() + grace, &status)) {
      *killed = true;
      status = KillAndReap(pid_);
    }
    pid_ = -1;
    FinishDrain();
    return status;
  }

  // Byte size of the server's stderr log so far.
  size_t LogSize() const {
    struct stat st;
    if (log_fd_ < 0 || fstat(log_fd_, &st) != 0) return 0;
    return static_cast<size_t>(st.st_size);
  }

  // The server's stderr from byte `offset` on (an excerpt when long).
  std::string LogSince(size_t offset) const {
    std::string text;
    const size_t size = LogSize();
    if (size <= offset) return text;
    const size_t start =
        size - offset > kMaxExcerptBytes ? size - kMaxExcerptBytes : offset;
    text.resize(size - start);
    const ssize_t n =
        pread(log_fd_, text.data(), text.size(), static_cast<off_t>(start));
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (start > offset) {
      text = absl::StrCat("[... ", start - offset, " earlier bytes cut ...]\n",
                          text);
    }
    return text;
  }

  // Deletes the stderr log (call once the server is stopped).
  void RemoveLog() {
    if (log_fd_ < 0) return;
    close(log_fd_);
    unlink(log_path_.c_str());
    log_fd_ = -1;
  }

  // Server stdout after the port line, as far as drained.
  std::string StdoutRest() {
    std::lock_guard<std::mutex> lock(stdout_mu_);
    return stdout_rest_;
  }

 private:
  // Spawns the server and reads its port line.
  bool Start(std::string* error) {
    if (!OpenLog(error)) return false;
    const Options& options = GlobalOptions();
    std::vector<std::string> argv = {options.server, "--port=0"};
    if (options.tls) argv.push_back(kUseTls);
    argv.insert(argv.end(), options.server_args.begin(),
                options.server_args.end());
    const size_t log_start = LogSize();
    log_start_ = log_start;
    Child child;
    if (!Spawn(argv, log_fd_, &child, error)) return false;
    pid_ = child.pid;
    stdout_fd_ = child.stdout_fd;

    // Wait for the first line.
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline =
        start + std::chrono::seconds(options.server_start_timeout_s);
    std::string out;
    bool eof = false;
    while (out.find('\n') == std::string::npos && !eof) {
      pollfd pfd = {stdout_fd_, POLLIN, 0};
      const int timeout_ms = MillisUntil(deadline);
      const int r = poll(&pfd, 1, timeout_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) break;  // deadline
      if (!ReadSome(stdout_fd_, &out)) eof = true;
    }
    const size_t newline = out.find('\n');
    if (newline == std::string::npos) {
      std::string why;
      if (eof) {
        int status = 0;
        if (WaitUntil(pid_, Clock::now() + std::chrono::seconds(5), &status)) {
          why = absl::StrCat("the server exited (", DescribeWaitStatus(status),
                             ") before announcing its port");
          pid_ = -1;
        } else {
          why = "the server closed its stdout without announcing its port";
        }
      } else {
        why = absl::StrCat(
            "the server did not print \"listening on port N\" "
            "within ",
            options.server_start_timeout_s, " s");
      }
      *error = absl::StrCat(why, "\ncommand: ", absl::StrJoin(argv, " "),
                            "\n--- server stdout ---\n", Excerpt(out),
                            "\n--- server stderr ---\n",
                            Excerpt(LogSince(log_start)));
      KillNow();
      return false;
    }
    std::string line = out.substr(0, newline);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!ParsePortLine(line, &port_)) {
      *error =
          absl::StrCat("the server's first stdout line is \"", line,
                       "\", expected \"listening on port N\"\ncommand: ",
                       absl::StrJoin(argv, " "), "\n--- server stderr ---\n",
                       Excerpt(LogSince(log_start)));
      KillNow();
      return false;
    }
    std::fprintf(stderr,
                 "[pairing] server %s (pid %d) listening on port %d "
                 "after %.2f s\n",
                 options.server.c_str(), static_cast<int>(pid_), port_,
                 SecondsSince(start));
    {
      std::lock_guard<std::mutex> lock(stdout_mu_);
      stdout_rest_ = out.substr(newline + 1);
    }
    stop_drain_ = false;
    drain_thread_ = std::thread([this] { DrainStdout(); });
    return true;
  }

  bool OpenLog(std::string* error) {
    if (log_fd_ >= 0) return true;
    const char* dir = getenv("TEST_TMPDIR");
    std::string path = absl::StrCat(dir != nullptr && *dir ? dir : "/tmp",
                                    "/interop_server_stderr.XXXXXX");
    const int fd = mkostemp(path.data(), O_CLOEXEC | O_APPEND);
    if (fd < 0) {
      *error = absl::StrCat("cannot create the server log ", path, ": ",
                            strerror(errno));
      return false;
    }
    log_fd_ = fd;
    log_path_ = path;
    return true;
  }

  void KillNow() {
    if (running()) KillAndReap(pid_);
    pid_ = -1;
    if (stdout_fd_ >= 0) close(stdout_fd_);
    stdout_fd_ = -1;
  }

  // Runs on drain_thread_: keeps the server's stdout pipe from filling up.
  void DrainStdout() {
    for (;;) {
      pollfd pfd = {stdout_fd_, POLLIN, 0};
      const int r = poll(&pfd, 1, 100);
      if (r < 0 && errno != EINTR) return;
      if (r > 0) {
        std::string chunk;
        const bool more = ReadSome(stdout_fd_, &chunk);
        {
          std::lock_guard<std::mutex> lock(stdout_mu_);
          stdout_rest_ += chunk;
          if (stdout_rest_.size() > 4 * kMaxExcerptBytes) {
            stdout_rest_.erase(0, stdout_rest_.size() - kMaxExcerptBytes);
          }
        }
        if (!more) return;
      } else if (stop_drain_) {
        return;
      }
    }
  }

  // After the server exited: lets the drain thread finish and closes the
  // pipe. Bounded even when a grandchild keeps the pipe open.
  void FinishDrain() {
    stop_drain_ = true;
    if (drain_thread_.joinable()) drain_thread_.join();
    if (stdout_fd_ >= 0) close(stdout_fd_);
    stdout_fd_ = -1;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  size_t log_start_ = 0;
  std::string start_error_;
  int stdout_fd_ = -1;
  int log_fd_ = -1;
  std::string log_path_;
  std::thread drain_thread_;
  std::atomic<bool> stop_drain_{false};
  std::mutex stdout_mu_;
  std::string stdout_rest_;
};

ServerProcess& GlobalServer() {
  static ServerProcess* server = new ServerProcess;
  return *server;
}

struct ClientRun {
  bool started = false;
  bool timed_out = false;
  int wait_status = 0;
  double seconds = 0;
  std::string output;  // stdout and stderr, interleaved
  std::string command;
};

// The client flags of one case: the TLS ones of a --tls pairing, then the
// --client_arg ones.
std::vector<std::string> CaseClientArgs() {
  const Options& options = GlobalOptions();
  std::vector<std::string> args;
  if (options.tls) args = {kUseTls, kUseTestCa, kHostOverride};
  args.insert(args.end(), options.client_args.begin(),
              options.client_args.end());
  return args;
}

// Runs the client with `test_case` and `args` against `port`, killing it
// after --client_timeout_s.
ClientRun RunClient(const std::string& test_case,
                    const std::vector<std::string>& args, int port) {
  const Options& options = GlobalOptions();
  std::vector<std::string> argv = {options.client, "--server_host=127.0.0.1",
                                   absl::StrCat("--server_port=", port),
                                   absl::StrCat("--test_case=", test_case)};
  argv.insert(argv.end(), args.begin(), args.end());
  ClientRun run;
  run.command = absl::StrJoin(argv, " ");
  Child child;
  std::string error;
  const Clock::time_point start = Clock::now();
  if (!Spawn(argv, -1, &child, &error)) {
    run.output = error;
    return run;
  }
  run.started = true;
  const Clock::time_point deadline =
      start + std::chrono::seconds(options.client_timeout_s);
  bool eof = false;
  while (!eof) {
    pollfd pfd = {child.stdout_fd, POLLIN, 0};
    const int r = poll(&pfd, 1, MillisUntil(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) break;  // deadline
    if (!ReadSome(child.stdout_fd, &run.output)) eof = true;
  }
  if (!eof || !WaitUntil(child.pid, deadline, &run.wait_status)) {
    run.timed_out = true;
    run.wait_status = KillAndReap(child.pid);
    // Collect what is left without blocking.
    fcntl(child.stdout_fd, F_SETFL, O_NONBLOCK);
    ReadSome(child.stdout_fd, &run.output);
  }
  close(child.stdout_fd);
  run.seconds = SecondsSince(start);
  return run;
}

// What the server printed on stdout after its port line, if anything.
std::string ServerStdoutNote(ServerProcess& server) {
  const std::string rest = server.StdoutRest();
  if (rest.empty()) return "";
  return absl::StrCat("\n--- server stdout after the port line ---\n",
                      Excerpt(rest));
}

class InteropCaseTest : public ::testing::Test {
 public:
  explicit InteropCaseTest(std::string test_case)
      : test_case_(std::move(test_case)) {}

  void TestBody() override {
    ServerProcess& server = GlobalServer();
    std::string error;
    if (!server.EnsureRunning(&error)) {
      FAIL() << "cannot start the server for case " << test_case_ << ": "
             << error;
    }
    const size_t log_offset = server.LogSize();
    const size_t server_log_start = server.log_start();
    const ClientRun run =
        RunClient(test_case_, CaseClientArgs(), server.port());
    std::string server_state;
    const bool server_alive = server.CheckAlive(&server_state);

    std::vector<std::string> problems;
    if (!run.started) {
      problems.push_back(run.output);
    } else if (run.timed_out) {
      problems.push_back(absl::StrCat("the client did not finish within ",
                                      GlobalOptions().client_timeout_s,
                                      " s and was killed"));
    } else if (!WIFEXITED(run.wait_status) ||
               WEXITSTATUS(run.wait_status) != 0) {
      problems.push_back(absl::StrCat("the client failed: ",
                                      DescribeWaitStatus(run.wait_status)));
    }
    if (!server_alive) {
      problems.push_back(absl::StrCat(server_state,
                                      " during this case; the next case "
                                      "starts a new server"));
    }
    if (problems.empty()) return;
    // When the server died, all of its stderr since it started is relevant.
    const std::string server_log =
        server_alive
            ? absl::StrCat("\n--- server stderr during the case ---\n",
                           server.LogSince(log_offset))
            : absl::StrCat("\n--- server stderr since it started ---\n",
                           server.LogSince(server_log_start));
    ADD_FAILURE() << "interop case " << test_case_ << " failed after "
                  << absl::StrFormat("%.2f", run.seconds)
                  << " s: " << absl::StrJoin(problems, "; ")
                  << "\ncommand: " << run.command << "\n--- client output ---\n"
                  << Excerpt(run.output) << server_log
                  << ServerStdoutNote(server);
  }

 private:
  const std::string test_case_;
};

// A TLS pairing's check that a client with the wrong TLS settings fails:
// runs empty_unary with `client_args`, expects exit code 1 with UNAVAILABLE
// in the client's output, and the server still up.
class TlsRefusalTest : public ::testing::Test {
 public:
  TlsRefusalTest(std::string what, std::vector<std::string> client_args)
      : what_(std::move(what)), client_args_(std::move(client_args)) {}

  void TestBody() override {
    ServerProcess& server = GlobalServer();
    std::string error;
    if (!server.EnsureRunning(&error)) {
      FAIL() << "cannot start the server: " << error;
    }
    const size_t log_offset = server.LogSize();
    std::vector<std::string> args = client_args_;
    args.push_back("--deadline_ms=10000");
    const ClientRun run = RunClient("empty_unary", args, server.port());
    std::string server_state;
    const bool server_alive = server.CheckAlive(&server_state);

    std::vector<std::string> problems;
    if (!run.started) {
      problems.push_back(run.output);
    } else if (run.timed_out) {
      problems.push_back(absl::StrCat("the client did not finish within ",
                                      GlobalOptions().client_timeout_s,
                                      " s and was killed"));
    } else if (!WIFEXITED(run.wait_status) ||
               WEXITSTATUS(run.wait_status) != 1) {
      problems.push_back(absl::StrCat(
          "the client ended with ", DescribeWaitStatus(run.wait_status),
          ", expected exit code 1 (a failed call)"));
    } else if (!absl::StrContains(run.output, "got UNAVAILABLE")) {
      problems.push_back(
          "the call failed, but not with UNAVAILABLE (see its output)");
    }
    if (!server_alive) {
      problems.push_back(absl::StrCat(server_state, " during this test"));
    }
    if (problems.empty()) {
      std::fprintf(stderr, "[pairing] %s: refused after %.2f s\n",
                   what_.c_str(), run.seconds);
      return;
    }
    ADD_FAILURE() << what_ << ": " << absl::StrJoin(problems, "; ")
                  << "\ncommand: " << run.command << "\n--- client output ---\n"
                  << Excerpt(run.output)
                  << "\n--- server stderr during the test ---\n"
                  << server.LogSince(log_offset) << ServerStdoutNote(server);
  }

 private:
  const std::string what_;
  const std::vector<std::string> client_args_;
};

class ServerShutdownTest : public ::testing::Test {
 public:
  void TestBody() override {
    ServerProcess& server = GlobalServer();
    std::string error;
    if (!server.EnsureRunning(&error)) {
      FAIL() << "cannot start the server: " << error;
    }
    const size_t log_offset = server.LogSize();
    const auto grace = std::chrono::seconds(GlobalOptions().shutdown_grace_s);
    bool killed = false;
    const int status = server.Stop(grace, &killed);
    if (killed) {
      ADD_FAILURE() << "the server did not exit within " << grace.count()
                    << " s of SIGTERM and was killed\n--- server stderr ---\n"
                    << server.LogSince(log_offset);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ADD_FAILURE() << "after SIGTERM the server ended with "
                    << DescribeWaitStatus(status)
                    << ", expected exit code 0\n--- server stderr ---\n"
                    << server.LogSince(log_offset);
    }
  }
};

bool ParsePositive(absl::string_view value, int* out) {
  return absl::SimpleAtoi(value, out) && *out > 0;
}

// Parses the driver's own flags (gtest's are already removed).
bool ParseArgs(int argc, char** argv, Options* options, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    absl::string_view value;
    auto flag = [&](absl::string_view name) {
      const std::string prefix = absl::StrCat("--", name, "=");
      if (!absl::StartsWith(arg, prefix)) return false;
      value = arg.substr(prefix.size());
      return true;
    };
    if (arg == "--tls") {
      options->tls = true;
    } else if (flag("server")) {
      options->server = std::string(value);
    } else if (flag("client")) {
      options->client = std::string(value);
    } else if (flag("cases")) {
      for (absl::string_view c : absl::StrSplit(value, ',')) {
        if (!c.empty()) options->cases.emplace_back(c);
      }
    } else if (flag("server_arg")) {
      options->server_args.emplace_back(value);
    } else if (flag("client_arg")) {
      options->client_args.emplace_back(value);
    } else if (flag("server_start_timeout_s")) {
      if (!ParsePositive(value, &options->server_start_timeout_s)) {
        *error = absl::StrCat("bad value in ", arg);
        return false;
      }
    } else if (flag("client_timeout_s")) {
      if (!ParsePositive(value, &options->client_timeout_s)) {
        *error = absl::StrCat("bad value in ", arg);
        return false;
      }
    } else if (flag("shutdown_grace_s")) {
      if (!ParsePositive(value, &options->shutdown_grace_s)) {
        *error = absl::StrCat("bad value in ", arg);
        return false;
      }
    } else {
      *error = absl::StrCat("unknown argument \"", arg, "\"");
      return false;
    }
  }
  if (options->server.empty() || options->client.empty() ||
      options->cases.empty()) {
    *error = "--server, --client and --cases are required";
    return false;
  }
  for (const std::string* path : {&options->server, &options->client}) {
    if (access(path->c_str(), X_OK) != 0) {
      char cwd[4096] = "?";
      if (getcwd(cwd, sizeof(cwd)) == nullptr) cwd[0] = '?';
      *error = absl::StrCat(*path, " is not an executable file (",
                            strerror(errno), "; working directory ", cwd, ")");
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using h2rpc::testing::GlobalOptions;
  std::string error;
  if (!h2rpc::testing::ParseArgs(argc, argv, &GlobalOptions(), &error)) {
    std::fprintf(stderr,
                 "%s\nusage: %s --server=PATH --client=PATH --cases=a,b,c "
                 "[--tls] [--server_arg=ARG]... [--client_arg=ARG]... "
                 "[--server_start_timeout_s=30] [--client_timeout_s=90] "
                 "[--shutdown_grace_s=5] [gtest flags]\n",
                 error.c_str(), argv[0]);
    return 2;
  }
  for (const std::string& test_case : GlobalOptions().cases) {
    ::testing::RegisterTest(
        "Interop", test_case.c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [test_case]() -> h2rpc::testing::InteropCaseTest* {
          return new h2rpc::testing::InteropCaseTest(test_case);
        });
  }
  if (GlobalOptions().tls) {
    using h2rpc::testing::TlsRefusalTest;
    const struct {
      const char* name;
      std::vector<std::string> client_args;
    } probes[] = {
        {"ServerRefusesPlaintextClient", {}},
        {"ClientRejectsUntrustedCa",
         {h2rpc::testing::kUseTls, h2rpc::testing::kHostOverride}},
        {"ClientRejectsWrongHostName",
         {h2rpc::testing::kUseTls, h2rpc::testing::kUseTestCa}},
    };
    for (const auto& probe : probes) {
      const std::string name = probe.name;
      const std::vector<std::string> args = probe.client_args;
      ::testing::RegisterTest("InteropTls", probe.name, nullptr, nullptr,
                              __FILE__, __LINE__,
                              [name, args]() -> TlsRefusalTest* {
                                return new TlsRefusalTest(name, args);
                              });
    }
  }
  ::testing::RegisterTest("InteropServer", "StopsOnSigterm", nullptr, nullptr,
                          __FILE__, __LINE__,
                          []() -> h2rpc::testing::ServerShutdownTest* {
                            return new h2rpc::testing::ServerShutdownTest;
                          });
  const int result = RUN_ALL_TESTS();
  bool killed = false;
  h2rpc::testing::GlobalServer().Stop(
      std::chrono::seconds(GlobalOptions().shutdown_grace_s), &killed);
  h2rpc::testing::GlobalServer().RemoveLog();
  return result;
}
