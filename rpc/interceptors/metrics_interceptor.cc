#include "rpc/interceptors/metrics_interceptor.h"

#include <algorithm>
#include <utility>

namespace h2rpc {

absl::string_view CallSideName(CallSide side) {
  return side == CallSide::kClient ? "client" : "server";
}

MetricsInterceptor::MetricsInterceptor(const Options& options)
    : client_(CallSide::kClient, options.max_methods),
      server_(CallSide::kServer, options.max_methods) {}

std::vector<MethodMetrics> MetricsInterceptor::Snapshot() const {
  std::vector<MethodMetrics> out;
  client_.AppendTo(&out);
  server_.AppendTo(&out);
  return out;
}

Status MetricsInterceptor::OnStart(const ClientCallInfo& call) {
  client_.Start(call.method);
  return Status();
}

void MetricsInterceptor::OnFinish(const ClientCallInfo& call,
                                  const Status& status,
                                  const Metadata& trailing,
                                  absl::Duration elapsed) {
  client_.Finish(call.method, status.code(), elapsed);
}

Status MetricsInterceptor::OnStart(const ServerCallInfo& call) {
  server_.Start(call.method);
  return Status();
}

void MetricsInterceptor::OnFinish(const ServerCallInfo& call,
                                  const Status& status,
                                  absl::Duration elapsed) {
  server_.Finish(call.method, status.code(), elapsed);
}

MetricsInterceptor::Table::Counters* MetricsInterceptor::Table::Find(
    absl::string_view method) {
  auto it = methods_.find(method);
  if (it != methods_.end()) return &it->second;
  if (methods_.size() >= max_methods_) return &other_;
  return &methods_.emplace(std::string(method), Counters()).first->second;
}

void MetricsInterceptor::Table::Start(absl::string_view method) {
  MutexLock lock(&mu_);
  ++Find(method)->started;
}

void MetricsInterceptor::Table::Finish(absl::string_view method,
                                       StatusCode code,
                                       absl::Duration elapsed) {
  int index = static_cast<int>(code);
  // A code outside the enum (none is made by h2rpc) counts as UNKNOWN.
  if (index < 0 || index > kMaxStatusCode) {
    index = static_cast<int>(StatusCode::kUnknown);
  }
  MutexLock lock(&mu_);
  Counters* counters = Find(method);
  ++counters->finished;
  ++counters->by_code[index];
  counters->latency.Record(elapsed);
}

void MetricsInterceptor::Table::AppendTo(
    std::vector<MethodMetrics>* out) const {
  auto append = [&](absl::string_view method, const Counters& counters) {
    MethodMetrics metrics;
    metrics.side = side_;
    metrics.method = std::string(method);
    metrics.started = counters.started;
    metrics.finished = counters.finished;
    metrics.by_code = counters.by_code;
    metrics.latency = counters.latency;
    out->push_back(std::move(metrics));
  };
  MutexLock lock(&mu_);
  const size_t first = out->size();
  for (const auto& [method, counters] : methods_) append(method, counters);
  if (other_.started != 0 || other_.finished != 0) {
    append(kOtherMethods, other_);
    // Keeps the side's entries sorted by name.
    std::inplace_merge(out->begin() + first, out->end() - 1, out->end(),
                       [](const MethodMetrics& a, const MethodMetrics& b) {
                         return a.method < b.method;
                       });
  }
}

}  // namespace h2rpc
