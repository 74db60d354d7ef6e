#include "test/util/etcd_process.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "test/util/child_process.h"

namespace h2rpc::testing {
namespace {

constexpr char kEtcd[] = "/usr/bin/etcd";
constexpr char kEtcdctl[] = "/usr/bin/etcdctl";
// The member's name (--name, --initial-cluster).
constexpr char kMemberName[] = "h2rpc-test";
// How long Etcdctl() lets etcdctl run.
constexpr absl::Duration kEtcdctlTimeout = absl::Seconds(30);
// Starts on new ports after a port clash, at most this many in all.
constexpr int kMaxAttempts = 5;
// Between the checks that etcd serves, when one failed at once.
constexpr absl::Duration kHealthPollPeriod = absl::Milliseconds(20);

// `command` run with an empty environment (`env -i`, which execs it, so
// the process id is the command's) plus `variables` ("NAME=value"): the
// test's ETCD_* and ETCDCTL_* variables would change the flags' meaning,
// and etcd exits when one conflicts with a flag given.
std::vector<std::string> WithEmptyEnvironment(
    std::vector<std::string> variables, std::vector<std::string> command) {
  std::vector<std::string> argv = {"/usr/bin/env", "-i"};
  for (std::string& v : variables) argv.push_back(std::move(v));
  for (std::string& arg : command) argv.push_back(std::move(arg));
  return argv;
}

// Reads `fds` (pipes, closed by the caller) until each reaches end of file
// (true) or `deadline` passes (false), passing what it reads from fds[i] to
// `got(i, data)`.
bool ReadUntilEnd(std::vector<int> fds, absl::Time deadline,
                  absl::FunctionRef<void(size_t, absl::string_view)> got) {
  std::vector<pollfd> pfds;
  for (int fd : fds) pfds.push_back({fd, POLLIN, 0});
  size_t open = pfds.size();
  while (open > 0) {
    const int r = poll(pfds.data(), pfds.size(), MillisUntil(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) {
      if (absl::Now() >= deadline) return false;
      continue;  // MillisUntil's one-hour cap
    }
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (pfds[i].fd < 0 || pfds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = read(pfds[i].fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        pfds[i].fd = -1;  // poll() skips it from now on
        --open;
        continue;
      }
      got(i, absl::string_view(buffer, static_cast<size_t>(n)));
    }
  }
  return true;
}

// Runs `argv` with its stdin at end of file and waits up to `timeout` for
// it to exit. True with its `*status`, `*out` and `*err` if it did; false
// (killed and reaped) with `*error` saying why, and what it printed, if it
// could not start or did not exit in time.
bool RunCommand(std::vector<std::string> argv, absl::Duration timeout,
                int* status, std::string* out, std::string* err,
                std::string* error) {
  const absl::Time deadline = absl::Now() + timeout;
  const std::string command = absl::StrJoin(argv, " ");
  SpawnedChild child;
  if (!SpawnWithPipes(std::move(argv), &child, error)) return false;
  close(child.stdin_fd);
  out->clear();
  err->clear();
  const bool ended = ReadUntilEnd({child.stdout_fd, child.stderr_fd}, deadline,
                                  [&](size_t i, absl::string_view data) {
                                    absl::StrAppend(i == 0 ? out : err, data);
                                  });
  close(child.stdout_fd);
  close(child.stderr_fd);
  // Closing its pipes is not exiting yet: a moment more to be reaped.
  const absl::Duration left =
      std::max(deadline - absl::Now(), absl::ZeroDuration());
  if (!ReapWithin(child.pid, ended ? left + absl::Seconds(1) : left, status)) {
    *error = absl::StrCat(
        "`", command, "` did not exit within ", absl::FormatDuration(timeout),
        "; killed", "\n--- stderr ---\n", *err, "\n--- stdout ---\n", *out);
    return false;
  }
  return true;
}

// Two distinct ports free on 127.0.0.1 now, from the kernel (sockets bound
// to port 0, then closed). Another process may take one before etcd binds
// it: Start() retries that. False with `*error` on failure.
bool PickTwoPorts(int* first, int* second, std::string* error) {
  int fds[2] = {-1, -1};
  int ports[2] = {-1, -1};
  bool ok = true;
  // Both bound at once, so the kernel gives two different ports.
  for (int i = 0; i < 2 && ok; ++i) {
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (fds[i] < 0 ||
        bind(fds[i], reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        getsockname(fds[i], reinterpret_cast<sockaddr*>(&address), &length) !=
            0) {
      *error = absl::StrCat("cannot pick a free port on 127.0.0.1: ",
                            std::strerror(errno));
      ok = false;
    } else {
      ports[i] = ntohs(address.sin_port);
    }
  }
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
  *first = ports[0];
  *second = ports[1];
  return ok;
}

// A fresh directory (mode 0700) under TEST_TMPDIR, or /tmp; false with
// `*error` on failure.
bool MakeTempDir(std::string* path, std::string* error) {
  const char* base = getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(
      base != nullptr && *base != '\0' ? base : "/tmp", "/etcd.XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    *error = absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno));
    return false;
  }
  *path = std::move(pattern);
  return true;
}

// Removes `path` and everything in it, if it exists.
void RemoveTree(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

// How `command` ended, with what it printed.
std::string DescribeFailure(absl::string_view command, int status,
                            absl::string_view out, absl::string_view err) {
  return absl::StrCat("`", command, "`: ", DescribeWaitStatus(status),
                      "\n--- stderr ---\n", err, "\n--- stdout ---\n", out);
}

}  // namespace

std::unique_ptr<EtcdProcess> EtcdProcess::Start(absl::Duration timeout,
                                                std::string* error) {
  const absl::Time deadline = absl::Now() + timeout;
  std::unique_ptr<EtcdProcess> etcd(new EtcdProcess);
  if (!MakeTempDir(&etcd->temp_dir_, error)) return nullptr;
  etcd->data_dir_ = absl::StrCat(etcd->temp_dir_, "/data");
  for (int attempt = 1;; ++attempt) {
    std::string why;
    bool exited = false;
    if (!etcd->Spawn(&why)) {
      *error = why;
      std::string ignored;
      etcd->Stop(absl::ZeroDuration(), &ignored);
      return nullptr;
    }
    if (etcd->WaitUntilServing(deadline, &exited, &why)) return etcd;
    const std::string output = etcd->Output();
    if (exited && absl::StrContains(output, "address already in use") &&
        attempt < kMaxAttempts && absl::Now() < deadline) {
      // Another process took a port after PickTwoPorts: new ports, and a
      // fresh data directory in case etcd wrote some of it.
      RemoveTree(etcd->data_dir_);
      continue;
    }
    std::string how;
    etcd->Stop(absl::Seconds(10), &how);
    *error = absl::StrCat("etcd (client port ", etcd->client_port_,
                          ", peer port ", etcd->peer_port_, ", attempt ",
                          attempt, ") did not serve: ", why,
                          "\n--- etcd's output ---\n", output);
    return nullptr;
  }
}

bool EtcdProcess::Spawn(std::string* error) {
  if (!PickTwoPorts(&client_port_, &peer_port_, error)) return false;
  const std::string client_url =
      absl::StrCat("http://127.0.0.1:", client_port_);
  const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port_);
  SpawnedChild child;
  if (!SpawnWithPipes(
          WithEmptyEnvironment(
              {},
              {kEtcd, absl::StrCat("--name=", kMemberName),
               absl::StrCat("--data-dir=", data_dir_),
               absl::StrCat("--listen-client-urls=", client_url),
               absl::StrCat("--advertise-client-urls=", client_url),
               absl::StrCat("--listen-peer-urls=", peer_url),
               absl::StrCat("--initial-advertise-peer-urls=", peer_url),
               absl::StrCat("--initial-cluster=", kMemberName, "=", peer_url),
               "--initial-cluster-state=new",
               // zap: capnslog (3.4's default) is deprecated and
               // ignores --log-level.
               "--logger=zap", "--log-outputs=stderr", "--log-level=warn"}),
          &child, error)) {
    return false;
  }
  close(child.stdin_fd);
  pid_ = child.pid;
  stdout_fd_ = child.stdout_fd;
  stderr_fd_ = child.stderr_fd;
  {
    MutexLock lock(&mu_);
    output_.clear();
  }
  drain_thread_ = std::thread([this] { DrainOutput(); });
  return true;
}

bool EtcdProcess::WaitUntilServing(absl::Time deadline, bool* exited,
                                   std::string* error) {
  // etcd binds its ports at once but serves only once it is the leader and
  // has applied its first entries: then a linearizable read (`endpoint
  // health`, after a blocking dial) succeeds. The member answering must be
  // this one: if another process took the client port first, etcd could
  // not bind it (and exits), and that process answered.
  const std::string this_member =
      absl::StrCat(", http://127.0.0.1:", peer_port_,
                   ", http://127.0.0.1:", client_port_, ",");
  std::string last_failure = "none";
  while (absl::Now() < deadline) {
    std::string members;
    if (RunEtcdctl(
            {"--dial-timeout=2s", "--command-timeout=3s", "endpoint", "health"},
            std::min(deadline - absl::Now(), absl::Seconds(10)), nullptr,
            &last_failure) &&
        RunEtcdctl({"member", "list"},
                   std::min(deadline - absl::Now(), absl::Seconds(10)),
                   &members, &last_failure)) {
      // "<id>, started, <name>, <peer URLs>, <client URLs>, <is learner>"
      if (absl::StrContains(members, this_member)) return true;
      last_failure =
          absl::StrCat("another etcd answered on the client port: ", members);
    }
    int etcd_status = 0;
    pid_t r;
    while ((r = waitpid(pid_, &etcd_status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r == pid_) {
      Reaped();
      *exited = true;
      *error = absl::StrCat("etcd exited: ", DescribeWaitStatus(etcd_status));
      return false;
    }
    absl::SleepFor(kHealthPollPeriod);
  }
  *error = absl::StrCat("not serving by the deadline; the last check: ",
                        last_failure);
  return false;
}

EtcdProcess::~EtcdProcess() {
  if (stopped_) return;
  std::string how;
  if (!Stop(absl::Seconds(10), &how)) {
    // An etcd that crashed explains the test's failures.
    std::fprintf(stderr, "%s\n", how.c_str());
  }
}

std::string EtcdProcess::endpoint() const {
  return absl::StrCat("127.0.0.1:", client_port_);
}

bool EtcdProcess::Etcdctl(std::vector<std::string> args, std::string* output,
                          std::string* error) const {
  return RunEtcdctl(std::move(args), kEtcdctlTimeout, output, error);
}

bool EtcdProcess::RunEtcdctl(std::vector<std::string> args,
                             absl::Duration timeout, std::string* output,
                             std::string* error) const {
  std::vector<std::string> command = {kEtcdctl,
                                      absl::StrCat("--endpoints=", endpoint())};
  for (std::string& arg : args) command.push_back(std::move(arg));
  const std::vector<std::string> argv =
      WithEmptyEnvironment({"ETCDCTL_API=3"}, std::move(command));
  const std::string command_line = absl::StrJoin(argv, " ");
  int status = 0;
  std::string out, err;
  if (!RunCommand(argv, timeout, &status, &out, &err, error)) return false;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = DescribeFailure(command_line, status, out, err);
    return false;
  }
  if (output != nullptr) *output = std::move(out);
  return true;
}

std::string EtcdProcess::Output() const {
  MutexLock lock(&mu_);
  return output_;
}

void EtcdProcess::DrainOutput() {
  ReadUntilEnd({stdout_fd_, stderr_fd_}, absl::InfiniteFuture(),
               [this](size_t, absl::string_view data) {
                 MutexLock lock(&mu_);
                 absl::StrAppend(&output_, data);
               });
}

bool EtcdProcess::Stop(absl::Duration timeout, std::string* how) {
  if (!stopped_) {
    stopped_ = true;
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      if (!ReapWithin(pid_, timeout, &status)) {
        stop_how_ =
            absl::StrCat("did not exit within ", absl::FormatDuration(timeout),
                         " of SIGTERM; killed");
      } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
                 !(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)) {
        stop_how_ = DescribeWaitStatus(status);
      }
      Reaped();
      if (!stop_how_.empty()) {
        stop_how_ =
            absl::StrCat("etcd: ", stop_how_, "\n--- output ---\n", Output());
      }
    }
    if (!temp_dir_.empty()) RemoveTree(temp_dir_);
  }
  *how = stop_how_;
  return stop_how_.empty();
}

void EtcdProcess::Reaped() {
  pid_ = -1;
  if (drain_thread_.joinable()) drain_thread_.join();
  for (int* fd : {&stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

}  // namespace h2rpc::testing
