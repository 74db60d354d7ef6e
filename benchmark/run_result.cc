#include "benchmark/run_result.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "google/protobuf/stubs/common.h"
#include "grpcpp/grpcpp.h"
#include "rpc/version.h"

namespace h2rpc::benchmark {
namespace {

// The first "model name" of /proc/cpuinfo, or "" where there is none.
std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "model name")) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) break;
      return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "";
}

double PerOp(double value, int64_t ops) {
  return ops > 0 ? value / static_cast<double>(ops) : 0.0;
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string SideJson(const std::optional<SideUsage>& usage, int64_t ops) {
  if (!usage.has_value()) return "null";
  return absl::StrFormat(
      "{\"allocs_per_op\": %.3f, \"bytes_per_op\": %.1f, "
      "\"cpu_ns_per_op\": %.1f}",
      PerOp(usage->allocations, ops), PerOp(usage->bytes, ops),
      PerOp(usage->cpu_nanos, ops));
}

int64_t Nanos(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

std::string BackendsJson(const std::vector<BackendRequests>& backends) {
  if (backends.empty()) return "null";
  std::vector<std::string> items;
  for (const BackendRequests& b : backends) {
    items.push_back(absl::StrFormat("{\"address\": %s, \"requests\": %d}",
                                    JsonString(b.address), b.requests));
  }
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

std::string RunJson(const RunResult& r) {
  const RunFeatures& f = r.features;
  const LatencyHistogram& h = r.stats.histogram;
  std::vector<std::string> buckets;
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    if (h.bucket_count(i) > 0) {
      buckets.push_back(absl::StrFormat("[%d, %d]", i, h.bucket_count(i)));
    }
  }
  const double seconds = absl::ToDoubleSeconds(r.duration);
  auto bps = [seconds](int size, int64_t ops) {
    return seconds > 0 ? size * 8.0 * static_cast<double>(ops) / seconds : 0;
  };
  return absl::StrCat(
      "    {\n      \"features\": {",
      absl::StrFormat(
          "\"workload\": %s, \"client_stack\": %s, \"server_stack\": %s, "
          "\"max_concurrent_calls\": %d, \"req_size_bytes\": %d, "
          "\"resp_size_bytes\": %d, \"compression\": %s, \"connections\": %d, "
          "\"benchtime_s\": %.3f, \"process\": %s, \"secure\": %s, "
          "\"servers\": %d, \"lb_policy\": %s, \"interceptors\": %d, "
          "\"busy_poll_us\": %d, \"metrics\": %s, \"tracing\": %s},\n",
          JsonString(f.workload), JsonString(f.client_stack),
          JsonString(f.server_stack), f.max_concurrent_calls, f.req_size_bytes,
          f.resp_size_bytes, JsonString(f.compression), f.connections,
          absl::ToDoubleSeconds(f.benchtime),
          JsonString(f.two_processes ? "two" : "one"),
          f.secure ? "true" : "false", f.servers, JsonString(f.lb_policy),
          f.interceptors, f.busy_poll_us, f.metrics ? "true" : "false",
          f.tracing >= 0 ? absl::StrCat(f.tracing) : "false"),
      absl::StrFormat(
          "      \"duration_s\": %.3f, \"total_ops\": %d, \"send_ops\": %d, "
          "\"recv_ops\": %d, \"errors\": %d, \"qps\": %.1f,\n",
          seconds, r.total_ops(), r.send_ops(), r.recv_ops(), r.stats.errors,
          r.qps()),
      absl::StrFormat("      \"req_throughput_bps\": %.1f, "
                      "\"resp_throughput_bps\": %.1f,\n",
                      bps(f.req_size_bytes, r.send_ops()),
                      bps(f.resp_size_bytes, r.recv_ops())),
      absl::StrFormat(
          "      \"latency_ns\": {\"p50\": %d, \"p90\": %d, \"p99\": %d, "
          "\"p999\": %d, \"avg\": %d, \"max\": %d},\n",
          Nanos(h.Percentile(0.5)), Nanos(h.Percentile(0.9)),
          Nanos(h.Percentile(0.99)), Nanos(h.Percentile(0.999)),
          Nanos(h.Mean()), Nanos(h.Max())),
      absl::StrFormat("      \"latency_histogram\": {\"growth\": %.2f, "
                      "\"first_upper_ns\": %d, \"counts\": [%s]},\n",
                      LatencyHistogram::kGrowth,
                      Nanos(LatencyHistogram::BucketUpperBound(0)),
                      absl::StrJoin(buckets, ", ")),
      "      \"client\": ", SideJson(r.client, r.total_ops()),
      ",\n      \"server\": ", SideJson(r.server, r.total_ops()),
      ",\n      \"backends\": ", BackendsJson(r.backends),
      ",\n      \"proxy\": ",
      r.proxy_cpu_nanos.has_value()
          ? absl::StrFormat("{\"cpu_nanos\": %d, \"cpu_ns_per_op\": %.0f}",
                            *r.proxy_cpu_nanos,
                            PerOp(*r.proxy_cpu_nanos, r.total_ops()))
          : std::string("null"),
      "\n    }");
}

std::string Micros(absl::Duration d) {
  return absl::StrFormat("%.0fus", absl::ToDoubleMicroseconds(d));
}

std::string SideCells(const std::optional<SideUsage>& usage, int64_t ops) {
  if (!usage.has_value()) return absl::StrFormat("%9s %9s %8s", "-", "-", "-");
  return absl::StrFormat("%9.2f %9.0f %8.2f", PerOp(usage->allocations, ops),
                         PerOp(usage->bytes, ops),
                         PerOp(usage->cpu_nanos, ops) / 1000.0);
}

// Streams whose sides run independently count messages, not round trips.
bool CountsMessages(const RunFeatures& features) {
  return features.workload == "unconstrained" ||
         features.workload == "streaming_from_server";
}

}  // namespace

std::string RunFeatures::Title() const {
  return absl::StrFormat(
      "%s %s->%s c=%d %d/%dB %s%s%s%s%s%s%s%s%s", workload, client_stack,
      server_stack, max_concurrent_calls, req_size_bytes, resp_size_bytes,
      compression, connections > 1 ? absl::StrCat(" conns=", connections) : "",
      secure ? " tls" : "",
      servers > 1 ? absl::StrCat(" servers=", servers) : "",
      lb_policy != "pick_first" ? absl::StrCat(" ", lb_policy) : "",
      interceptors > 0 ? absl::StrCat(" interceptors=", interceptors) : "",
      busy_poll_us > 0 ? absl::StrCat(" busy_poll=", busy_poll_us, "us") : "",
      metrics ? " metrics" : "",
      tracing >= 0 ? absl::StrCat(" tracing=", tracing) : "");
}

int64_t RunResult::send_ops() const {
  return CountsMessages(features) ? stats.sends : stats.histogram.count();
}
int64_t RunResult::recv_ops() const {
  return CountsMessages(features) ? stats.recvs : stats.histogram.count();
}
int64_t RunResult::total_ops() const {
  // A server-streaming run's ops are the messages the server sent; its
  // client sent each stream's one request before the measured time.
  if (features.workload == "streaming_from_server") return recv_ops();
  return std::min(send_ops(), recv_ops());
}
double RunResult::qps() const {
  const double seconds = absl::ToDoubleSeconds(duration);
  return seconds > 0 ? static_cast<double>(total_ops()) / seconds : 0;
}

std::string TableHeader() {
  return absl::StrFormat(
      "%-50s %9s %8s %8s %8s | %9s %9s %8s | %9s %9s %8s | %6s", "run", "QPS",
      "p50", "p90", "p99", "cli alloc", "cli B", "cli cpu", "srv alloc",
      "srv B", "srv cpu", "errors");
}

std::string TableRow(const RunResult& r) {
  const LatencyHistogram& h = r.stats.histogram;
  return absl::StrFormat("%-50s %9.0f %8s %8s %8s | %s | %s | %6d",
                         r.features.Title(), r.qps(), Micros(h.Percentile(0.5)),
                         Micros(h.Percentile(0.9)), Micros(h.Percentile(0.99)),
                         SideCells(r.client, r.total_ops()),
                         SideCells(r.server, r.total_ops()), r.stats.errors);
}

std::string BackendsLine(const RunResult& r) {
  if (r.backends.size() < 2) return std::string();
  int64_t total = 0;
  for (const BackendRequests& b : r.backends) total += b.requests;
  std::vector<std::string> cells;
  for (const BackendRequests& b : r.backends) {
    cells.push_back(absl::StrFormat(
        "%s %d (%.1f%%)", b.address, b.requests,
        total > 0 ? 100.0 * static_cast<double>(b.requests) / total : 0.0));
  }
  return absl::StrCat("  backends (requests): ", absl::StrJoin(cells, ", "));
}

std::string ResultFileJson(const std::string& command,
                           const std::string& source_commit,
                           const std::vector<RunResult>& results) {
  std::vector<std::string> runs;
  for (const RunResult& r : results) runs.push_back(RunJson(r));
  const std::string commit =
      source_commit.empty()
          ? ""
          : absl::StrCat(", \"commit\": ", JsonString(source_commit));
  return absl::StrCat(
      "{\n  \"format\": \"h2rpc-benchmain/1\",\n", "  \"started\": ",
      JsonString(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(),
                                  absl::UTCTimeZone())),
      ",\n  \"command\": ", JsonString(command), ",\n",
      absl::StrFormat("  \"versions\": {\"h2rpc\": %s%s, \"nghttp2\": %s, "
                      "\"protobuf\": %s, \"grpcpp\": %s, \"compiler\": %s, "
                      "\"build\": %s},\n",
                      JsonString(kH2rpcVersion), commit,
                      JsonString(nghttp2_version(0)->version_str),
                      JsonString(google::protobuf::internal::VersionString(
                          GOOGLE_PROTOBUF_VERSION)),
                      JsonString(grpc::Version()), JsonString(__VERSION__),
#ifdef NDEBUG
                      JsonString("opt")
#else
                      JsonString("dbg")
#endif
                          ),
      absl::StrFormat("  \"machine\": {\"cpus\": %d, \"cpu_model\": %s},\n",
                      std::thread::hardware_concurrency(),
                      JsonString(CpuModel())),
      "  \"runs\": [\n", absl::StrJoin(runs, ",\n"), "\n  ]\n}\n");
}

}  // namespace h2rpc::benchmark
