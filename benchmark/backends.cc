#include "benchmark/backends.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace h2rpc::benchmark {

std::unique_ptr<Backends> Backends::StartInProcess(const std::string& stack,
                                                   const ServerConfig& config,
                                                   std::string* error) {
  std::unique_ptr<Backends> backends(new Backends());
  if (stack == "grpcpp") {
    backends->in_process_ = StartGrpcppServer(config, error);
  } else if (stack == "h2rpc_sync") {
    backends->in_process_ = StartH2rpcSyncServer(config, error);
  } else if (stack == "h2rpc_coro") {
    backends->in_process_ = StartH2rpcCoroServer(config, error);
  } else {
    backends->in_process_ = StartH2rpcServer(config, error);
  }
  if (backends->in_process_ == nullptr) return nullptr;
  backends->SetAddresses({backends->in_process_->port()});
  return backends;
}

std::unique_ptr<Backends> Backends::StartProcesses(
    int count, const std::vector<std::string>& child_args,
    const std::vector<std::vector<std::string>>& per_child_args,
    std::string* error) {
  std::unique_ptr<Backends> backends(new Backends());
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> args = child_args;
    if (static_cast<size_t>(i) < per_child_args.size()) {
      args.insert(args.end(), per_child_args[i].begin(),
                  per_child_args[i].end());
    }
    std::string child_error;
    std::unique_ptr<ServerProcess> child =
        ServerProcess::Start(args, &child_error);
    if (child == nullptr) {
      *error = absl::StrCat("server process ", i + 1, " of ", count, ": ",
                            child_error);
      return nullptr;
    }
    ports.push_back(child->port());
    backends->children_.push_back(std::move(child));
  }
  backends->SetAddresses(ports);
  return backends;
}

Backends::~Backends() = default;

void Backends::SetAddresses(const std::vector<int>& ports) {
  for (int port : ports) {
    addresses_.push_back(absl::StrCat("127.0.0.1:", port));
  }
  target_ = addresses_.size() == 1
                ? addresses_[0]
                : absl::StrCat("ipv4:", absl::StrJoin(addresses_, ","));
}

bool Backends::Take(Snapshot* snapshot) {
  snapshot->requests.clear();
  snapshot->usage.reset();
  if (in_process_ != nullptr) {
    snapshot->requests.push_back(in_process_->requests());
    return true;
  }
  SideUsage sum;
  for (const std::unique_ptr<ServerProcess>& child : children_) {
    ServerReport report;
    if (!child->Report(&report)) return false;
    snapshot->requests.push_back(report.requests);
    sum.allocations += report.usage.allocations;
    sum.bytes += report.usage.bytes;
    sum.cpu_nanos += report.usage.cpu_nanos;
  }
  snapshot->usage = sum;
  return true;
}

}  // namespace h2rpc::benchmark
