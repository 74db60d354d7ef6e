#include "benchmark/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace h2rpc::benchmark {

std::unique_ptr<ServerProcess> ServerProcess::Start(
    const std::vector<std::string>& args, std::string* error) {
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
    *error = "pipe failed";
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  std::vector<char*> argv;
  std::string self = "/proc/self/exe";
  argv.push_back(self.data());
  std::vector<std::string> copies = args;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr,
                             argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  if (rc != 0) {
    close(to_child[1]);
    close(from_child[0]);
    *error = "cannot start the server process";
    return nullptr;
  }
  std::unique_ptr<ServerProcess> process(
      new ServerProcess(pid, to_child[1], from_child[0]));
  std::string line;
  if (!process->ReadLine(&line) ||
      !absl::SimpleAtoi(absl::StripPrefix(line, "listening on port "),
                        &process->port_)) {
    *error = "the server process reported no port: '" + line + "'";
    return nullptr;
  }
  return process;
}

ServerProcess::~ServerProcess() {
  close(to_child_);
  int status = 0;
  waitpid(pid_, &status, 0);
  close(from_child_);
}

bool ServerProcess::ReadLine(std::string* line) {
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      *line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return true;
    }
    pollfd p{from_child_, POLLIN, 0};
    if (poll(&p, 1, 30000) <= 0) return false;
    char buffer[256];
    const ssize_t n = read(from_child_, buffer, sizeof(buffer));
    if (n <= 0) return false;
    buffered_.append(buffer, static_cast<size_t>(n));
  }
}

bool ServerProcess::Report(ServerReport* report) {
  if (write(to_child_, "usage\n", 6) != 6) return false;
  std::string line;
  if (!ReadLine(&line)) return false;
  const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
  return fields.size() == 5 && fields[0] == "usage" &&
         absl::SimpleAtoi(fields[1], &report->usage.allocations) &&
         absl::SimpleAtoi(fields[2], &report->usage.bytes) &&
         absl::SimpleAtoi(fields[3], &report->usage.cpu_nanos) &&
         absl::SimpleAtoi(fields[4], &report->requests);
}

void ServeUsageRequests(int port, const std::function<ServerReport()>& report) {
  std::printf("listening on port %d\n", port);
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line != "usage") continue;
    const ServerReport r = report();
    std::printf("usage %lld %lld %lld %lld\n",
                static_cast<long long>(r.usage.allocations),
                static_cast<long long>(r.usage.bytes),
                static_cast<long long>(r.usage.cpu_nanos),
                static_cast<long long>(r.requests));
    std::fflush(stdout);
  }
}

}  // namespace h2rpc::benchmark
