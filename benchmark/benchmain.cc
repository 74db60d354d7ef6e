// benchmain: QPS, latency, and heap allocations and CPU time per op on each
// side, for h2rpc and gRPC C++ clients and servers in any pairing, on
// grpc.testing.BenchmarkService (grpc-go's benchmain, for C++). The h2rpc
// server serves it with callback handlers ("h2rpc") or with synchronous
// handlers on its worker threads ("h2rpc_sync").
//
//   tools/bazel run -c opt //benchmark:benchmain --
//       --workloads=unary,streaming --max_concurrent_calls=1,120
//       --client_stack=h2rpc,grpcpp --server_stack=h2rpc,grpcpp
//       --benchtime=10s --result_file=/tmp/new.json
//
// List-valued flags run every combination; the client→server pairings of
// one configuration run one after the other (--pairings=matched: h2rpc to
// h2rpc and gRPC C++ to gRPC C++ only; the README's main job,
// benchmark/main_job.sh, runs those). By default both sides run in one
// process (server threads on --server_cpus, client threads on
// --client_cpus), and allocations and CPU time are attributed by thread. Two
// gRPC C++ sides would share gRPC's internal threads, so that pairing runs
// the server in a child process (this binary with --server_only); so does
// --process=two for any pairing. --target drives a remote server (any gRPC
// target: host:port, dns:///host:port, ipv4:a:p,b:p, ipv6:[a]:p,
// unix:path, unix-abstract:name); --server_only --port=P (or
// --server_address=unix:path) serves for any gRPC client.
//
// --servers=N starts N server child processes on loopback ports of their
// own, and every client connection balances its calls over them all
// (target "ipv4:127.0.0.1:P1,127.0.0.1:P2,...", policy --lb_policy); the
// requests each one served are printed after the run and recorded in the
// result file, and the server figures are the children's together. A
// policy places each call when it starts: a streaming or unconstrained
// run's streams all start at once, when often only one backend is
// connected, so round_robin may put them all there (gRPC C++ does the
// same); unary and handshake runs spread over all.
//
// --secure runs everything over TLS with gRPC's interop test credentials
// (test/interop/testdata: servers serve server1.key/server1.pem, clients
// trust ca.pem and expect the name foo.test.google.fr), found in this
// binary's runfiles or at --tls_credentials_dir. --workloads=handshake opens
// a connection per op (one unary call on it, then closed): its QPS is
// connections per second.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "benchmark/backends.h"
#include "benchmark/bench_stack.h"
#include "benchmark/run_result.h"
#include "benchmark/server_process.h"
#include "benchmark/thread_cpu.h"
#include "benchmark/tls_credentials.h"
#include "proto/opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "rpc/call_metrics.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/metrics/prometheus_endpoint.h"
#include "rpc/otlp_exporter.h"
#include "rpc/server.h"
#include "rpc/tracing.h"
#include "test/util/allocation_counter.h"

ABSL_FLAG(std::string, workloads, "unary",
          "unary, streaming (ping-pong), unconstrained, streaming_from_server "
          "(one request, then the server writes back to back) and/or "
          "handshake (a new connection per unary call; --connections does not "
          "apply).");
ABSL_FLAG(std::string, max_concurrent_calls, "1,8,64,120",
          "Calls (unary) or streams in flight.");
ABSL_FLAG(std::string, req_size_bytes, "1024", "Request payload sizes.");
ABSL_FLAG(std::string, resp_size_bytes, "1024", "Response payload sizes.");
ABSL_FLAG(std::string, compression, "off", "off, gzip and/or deflate.");
ABSL_FLAG(std::string, connections, "1", "Connections per client.");
ABSL_FLAG(std::string, client_stack, "h2rpc",
          "h2rpc (callback reactors), h2rpc_coro (C++20 coroutines, "
          "//rpc/coro; not for the handshake workload) and/or grpcpp.");
ABSL_FLAG(std::string, server_stack, "h2rpc",
          "h2rpc (callback handlers on the event loops), h2rpc_coro "
          "(coroutine handlers on the event loops, //rpc/coro), h2rpc_sync "
          "(synchronous handlers on worker threads, a thread per call or "
          "stream in progress: at most 256) and/or grpcpp.");
ABSL_FLAG(std::string, pairings, "all",
          "all: every --client_stack with every --server_stack; matched: "
          "each client with the servers of its own library only (h2rpc and "
          "h2rpc_coro with h2rpc, h2rpc_coro and h2rpc_sync, grpcpp with "
          "grpcpp); same: each client with the server stack of its own name "
          "(h2rpc_coro with h2rpc_coro). The pairings of one "
          "configuration run one after the other.");
ABSL_FLAG(absl::Duration, benchtime, absl::Seconds(10),
          "Measured time per run.");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(1),
          "Unmeasured time before each run, from the client's first "
          "completed op (waited for up to 30 s).");
ABSL_FLAG(std::string, client_cpus, "default",
          "CPUs for the client's threads (comma-separated; empty: not "
          "pinned; default: 1 on a machine with 2 or more CPUs).");
ABSL_FLAG(std::string, server_cpus, "default",
          "CPUs for the server's threads (default: 0 on a machine with 2 or "
          "more CPUs).");
ABSL_FLAG(std::string, process, "auto",
          "one, two, or auto (two for grpcpp->grpcpp and with --servers "
          "above 1, else one).");
ABSL_FLAG(std::string, target, "",
          "A running server (or servers) to drive instead of starting one, "
          "in gRPC's naming syntax: host:port, dns:///host:port, "
          "ipv4:addr:port,addr:port, ipv6:[addr]:port,..., unix:path, "
          "unix-abstract:name.");
ABSL_FLAG(int, servers, 1,
          "Server processes to start (1 to 64): more than 1 starts each in a "
          "child process on a loopback port of its own (all with the same "
          "--server_cpus) and makes the client's target name them all, "
          "balanced with --lb_policy. Not with --target.");
ABSL_FLAG(std::string, lb_policy, "pick_first",
          "pick_first or round_robin (any stack), or weighted_round_robin "
          "(h2rpc clients; with --orca servers): how each client connection "
          "spreads its calls over the target's addresses.");
ABSL_FLAG(std::string, service_config, "",
          "h2rpc clients: a service config in gRPC's JSON form for every "
          "channel (its loadBalancingConfig overrides --lb_policy), e.g. "
          "outlier_detection_experimental's.");
ABSL_FLAG(std::string, server_work_us, "0",
          "h2rpc callback servers: microseconds each unary call holds its "
          "server's loop (sleeping: the server then serves at most one call "
          "per that time), one value per server in --servers order (the last "
          "repeats), to make some servers slower than others.");
ABSL_FLAG(std::string, server_fail_percent, "0",
          "h2rpc callback servers: the share of unary calls (0 to 100) that "
          "fail with UNAVAILABLE, one value per server as --server_work_us; "
          "the errors are then expected.");
ABSL_FLAG(bool, orca, false,
          "h2rpc callback servers send ORCA load reports (queries per second, "
          "CPU utilization, and the share of time the handlers held the loop "
          "as application utilization, over the last second) in every unary "
          "call's trailers, for --lb_policy=weighted_round_robin.");
ABSL_FLAG(int, interceptors, 0,
          "No-op interceptors on each h2rpc channel and server (what the "
          "interceptor chain costs); gRPC C++ sides ignore it.");
ABSL_FLAG(int, busy_poll_us, 0,
          "Busy-polling of each h2rpc event loop, client and server "
          "(ChannelOptions and ServerOptions busy_poll_us): microseconds a "
          "loop polls before it sleeps, 0 to 1000000; 0: never. gRPC C++ "
          "sides ignore it.");
ABSL_FLAG(bool, metrics, false,
          "gRPC's standard call metrics (rpc/call_metrics.h) on every h2rpc "
          "channel and server, all recorded into one CallMetrics. gRPC C++ "
          "sides ignore it.");
ABSL_FLAG(int, metrics_port, -1,
          "Serves that CallMetrics (with --metrics implied) for Prometheus at "
          "http://127.0.0.1:PORT/metrics (0: a free port, printed as "
          "\"metrics on port N\"); -1: none.");
ABSL_FLAG(double, tracing, -1,
          "A72 tracing (rpc/tracing.h) on every h2rpc channel and server: one "
          "Tracer sampling traces with this probability (0 to 1), exporting "
          "over OTLP/gRPC to --otlp_target; -1: no tracing. gRPC C++ sides "
          "ignore it.");
ABSL_FLAG(std::string, otlp_target, "",
          "The OTLP/gRPC collector --tracing exports to (host:port); empty: "
          "a discarding one in a child process.");
ABSL_FLAG(bool, otlp_collector_only, false,
          "Serve a discarding OTLP/gRPC collector on 127.0.0.1 (a free port, "
          "announced as --server_only announces its own) until stdin "
          "closes.");
ABSL_FLAG(bool, bdp_probe, true,
          "Receive windows sized by BDP probing on every h2rpc connection, "
          "client and server (ConnectionOptions::bdp_probe); false: fixed "
          "windows. gRPC C++ sides ignore it.");
ABSL_FLAG(std::string, proxy_pids, "",
          "Processes between client and server (a proxy; comma-separated "
          "pids) whose CPU time over each measured run is recorded (result "
          "files: proxy.cpu_nanos) and printed per op.");
ABSL_FLAG(bool, server_only, false,
          "Serve BenchmarkService (one --server_stack) on --port; prints "
          "'listening on port N' and answers 'usage' lines on stdin until "
          "stdin closes.");
ABSL_FLAG(int, port, 0, "Port for --server_only (0: any).");
ABSL_FLAG(std::string, server_address, "",
          "For --server_only: where to listen instead of 0.0.0.0:--port, e.g. "
          "unix:/tmp/bench.sock or unix-abstract:bench (any stack).");
ABSL_FLAG(std::string, result_file, "", "Writes the results as JSON.");
ABSL_FLAG(std::string, source_commit, "",
          "Recorded in the result file as versions.commit: the commit the "
          "binary was built from (benchmark/results/record.sh passes git's "
          "HEAD).");
ABSL_FLAG(bool, secure, false,
          "TLS (ALPN h2) on every connection, with gRPC's interop test "
          "credentials (see --tls_credentials_dir); clients verify the "
          "server's certificate against ca.pem for the name "
          "foo.test.google.fr.");
ABSL_FLAG(std::string, tls_credentials_dir, "",
          "With --secure: the directory holding ca.pem, server1.key and "
          "server1.pem (the workspace's test/interop/testdata). Empty: this "
          "binary's runfiles (bazel run, bazel-bin/benchmark/benchmain), "
          "then test/interop/testdata under the working directory.");

namespace h2rpc::benchmark {
namespace {

using ::h2rpc::testing::AllocationsByRole;
using ::h2rpc::testing::AllocationTotals;
using ::h2rpc::testing::SetDefaultRole;
using ::h2rpc::testing::SetThisThreadRole;
using ::h2rpc::testing::ThreadRole;

// The most --servers: each is a process with its own threads.
constexpr int kMaxServers = 64;

std::vector<std::string> ListFlag(const std::string& value) {
  return absl::StrSplit(value, ',', absl::SkipEmpty());
}

bool IntList(const std::string& name, const std::string& value,
             std::vector<int>* out) {
  for (const std::string& item : ListFlag(value)) {
    int n = 0;
    if (!absl::SimpleAtoi(item, &n) || n < 0) {
      std::fprintf(stderr, "bad --%s entry '%s'\n", name.c_str(), item.c_str());
      return false;
    }
    out->push_back(n);
  }
  return true;
}

bool IsServerStack(const std::string& name) {
  return name == "h2rpc" || name == "h2rpc_coro" || name == "h2rpc_sync" ||
         name == "grpcpp";
}

bool IsClientStack(const std::string& name) {
  return name == "h2rpc" || name == "h2rpc_coro" || name == "grpcpp";
}

// The library a client or server stack belongs to.
std::string Library(const std::string& stack) {
  return stack == "grpcpp" ? "grpcpp" : "h2rpc";
}

// --busy_poll_us within what h2rpc's options accept, or false after
// printing why.
bool BusyPollInRange(int busy_poll_us) {
  if (busy_poll_us >= 0 && busy_poll_us <= kMaxBusyPollUs) return true;
  std::fprintf(stderr, "bad --busy_poll_us=%d: from 0 to %d\n", busy_poll_us,
               kMaxBusyPollUs);
  return false;
}

// "default": `default_cpu` on a machine with two or more CPUs, else none.
bool Cpus(const std::string& name, const std::string& value, int default_cpu,
          std::vector<int>* cpus) {
  if (value == "default") {
    if (std::thread::hardware_concurrency() >= 2) cpus->push_back(default_cpu);
    return true;
  }
  return IntList(name, value, cpus);
}

bool ParseCompression(const std::string& name, CompressionAlgorithm* out) {
  if (name == "off") {
    *out = CompressionAlgorithm::kIdentity;
    return true;
  }
  const auto parsed = ParseCompressionAlgorithm(name);
  if (!parsed.has_value() || *parsed == CompressionAlgorithm::kIdentity) {
    return false;
  }
  *out = *parsed;
  return true;
}

bool ParseWorkload(const std::string& name, Workload* out) {
  if (name == "unary")
    *out = Workload::kUnary;
  else if (name == "streaming")
    *out = Workload::kStreaming;
  else if (name == "unconstrained")
    *out = Workload::kUnconstrained;
  else if (name == "streaming_from_server")
    *out = Workload::kStreamingFromServer;
  else if (name == "handshake")
    *out = Workload::kHandshake;
  else
    return false;
  return true;
}

// Prints the run's progress on stderr every second until stopped.
class ProgressReporter {
 public:
  ProgressReporter(std::string title, OpStats* stats)
      : title_(std::move(title)), stats_(stats), start_(absl::Now()) {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "bench-progress");
      SetThisThreadRole(ThreadRole::kOther);
      while (!stop_.load()) {
        absl::SleepFor(absl::Milliseconds(100));
        if (absl::Now() - last_ < absl::Seconds(1)) continue;
        last_ = absl::Now();
        const OpStats::Snapshot s = stats_->Take();
        const double elapsed = absl::ToDoubleSeconds(last_ - start_);
        const int64_t ops = s.histogram.count() > 0
                                ? s.histogram.count()
                                : std::min(s.sends, s.recvs);
        std::fprintf(stderr,
                     "[%s] %4.1fs %10lld ops %10.0f ops/s %lld errors\n",
                     title_.c_str(), elapsed, static_cast<long long>(ops),
                     elapsed > 0 ? ops / elapsed : 0.0,
                     static_cast<long long>(s.errors));
      }
    });
  }
  ~ProgressReporter() {
    stop_.store(true);
    thread_.join();
  }

 private:
  const std::string title_;
  OpStats* const stats_;
  const absl::Time start_;
  absl::Time last_ = absl::Now();
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct Plan {
  std::vector<int> client_cpus;
  std::vector<int> server_cpus;
  std::string process;
  std::string target;
  int servers = 1;
  std::string lb_policy;
  std::string service_config;
  // Per server, by index (the last repeats); not empty.
  std::vector<int> server_work_us;
  std::vector<int> server_fail_percent;
  bool orca = false;
  absl::Duration warmup;
  TlsCredentialFiles tls;  // --secure only
  std::vector<int> proxy_pids;
};

// --server_work_us and --server_fail_percent; false after printing why.
bool ServerLoadFlags(std::vector<int>* work_us,
                     std::vector<int>* fail_percent) {
  if (!IntList("server_work_us", absl::GetFlag(FLAGS_server_work_us),
               work_us) ||
      !IntList("server_fail_percent", absl::GetFlag(FLAGS_server_fail_percent),
               fail_percent)) {
    return false;
  }
  for (int percent : *fail_percent) {
    if (percent < 0 || percent > 100) {
      std::fprintf(stderr, "bad --server_fail_percent: %d is not 0 to 100\n",
                   percent);
      return false;
    }
  }
  for (int us : *work_us) {
    if (us < 0) {
      std::fprintf(stderr, "bad --server_work_us: %d is negative\n", us);
      return false;
    }
  }
  return !work_us->empty() && !fail_percent->empty();
}

// --secure: the interop test credentials, or false after printing why.
bool LoadTls(TlsCredentialFiles* tls) {
  std::string error;
  if (!LoadTlsCredentialFiles(absl::GetFlag(FLAGS_tls_credentials_dir), tls,
                              &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return false;
  }
  return true;
}

void SetServerTls(const TlsCredentialFiles& tls, ServerConfig* config) {
  config->secure = true;
  config->pem_private_key = tls.server_key;
  config->pem_cert_chain = tls.server_cert;
}

SideUsage UsageOf(ThreadRole role, const ThreadCpuSnapshot& cpu0,
                  const ThreadCpuSnapshot& cpu1, AllocationTotals a0,
                  AllocationTotals a1) {
  return {a1.allocations - a0.allocations, a1.bytes - a0.bytes,
          cpu1.RoleNanosSince(cpu0, role)};
}

// Returns once the client's first op has completed or failed, or after 30 s
// (the run then reports what it got): connection setup that is slow (a
// server process still starting, gRPC C++ or TLS under a sanitizer) is not
// taken out of the warm-up.
void WaitForFirstOp(OpStats* stats) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    const OpStats::Snapshot s = stats->Take();
    if (s.histogram.count() > 0 || s.recvs > 0 || s.errors > 0) return;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

// The process's one CallMetrics, made on first use, when --metrics or
// --metrics_port asks for it; null otherwise.
std::shared_ptr<CallMetrics> ProcessMetrics() {
  static const std::shared_ptr<CallMetrics> metrics =
      absl::GetFlag(FLAGS_metrics) || absl::GetFlag(FLAGS_metrics_port) >= 0
          ? std::make_shared<CallMetrics>()
          : nullptr;
  return metrics;
}

// A discarding OTLP/gRPC collector on 127.0.0.1:`port` (0: a free one);
// null, with `*status`, if it cannot listen.
std::unique_ptr<Server> StartDiscardingCollector(int* port, Status* status) {
  using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
  using opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;
  return Server::Builder()
      .AddListeningPort("127.0.0.1:0", port)
      .RegisterCallbackUnary<ExportTraceServiceRequest,
                             ExportTraceServiceResponse>(
          OtlpGrpcExporter::kExportMethod,
          [](ServerContext*, const ExportTraceServiceRequest*,
             ExportTraceServiceResponse*, UnaryDone done) { done(Status()); })
      .BuildAndStart(status);
}

// Where --tracing exports: --otlp_target, or a discarding collector in a
// child process (this binary with --otlp_collector_only), started on first
// use, so that its work counts on neither side.
std::string OtlpTarget() {
  static const std::string* const target = [] {
    if (!absl::GetFlag(FLAGS_otlp_target).empty()) {
      return new std::string(absl::GetFlag(FLAGS_otlp_target));
    }
    std::string error;
    static std::unique_ptr<ServerProcess> collector =
        ServerProcess::Start({"--otlp_collector_only"}, &error);
    if (collector == nullptr) {
      std::fprintf(stderr, "OTLP collector: %s\n", error.c_str());
      std::exit(1);
    }
    return new std::string(absl::StrCat("127.0.0.1:", collector->port()));
  }();
  return *target;
}

// The process's one Tracer, made on first use when --tracing asks for it;
// null otherwise.
std::shared_ptr<Tracer> ProcessTracer() {
  static const std::shared_ptr<Tracer> tracer =
      []() -> std::shared_ptr<Tracer> {
    if (absl::GetFlag(FLAGS_tracing) < 0) return nullptr;
    TracerOptions options;
    options.sampling_probability = absl::GetFlag(FLAGS_tracing);
    options.exporter =
        std::make_shared<OtlpGrpcExporter>(CreateChannel(OtlpTarget()));
    return std::make_shared<Tracer>(std::move(options));
  }();
  return tracer;
}

SideUsage Minus(const SideUsage& a, const SideUsage& b) {
  return {a.allocations - b.allocations, a.bytes - b.bytes,
          a.cpu_nanos - b.cpu_nanos};
}

// The run's servers (without --target): features.servers children, or one
// in this process.
// The `index`th server's value of a per-server list flag.
int PerServer(const std::vector<int>& values, int index) {
  return values[std::min<size_t>(index, values.size() - 1)];
}

std::unique_ptr<Backends> StartBackends(const RunFeatures& features,
                                        CompressionAlgorithm compression,
                                        const Plan& plan, std::string* error) {
  if (features.two_processes) {
    std::vector<std::vector<std::string>> per_child;
    for (int i = 0; i < features.servers; ++i) {
      per_child.push_back(
          {absl::StrCat("--server_work_us=", PerServer(plan.server_work_us, i)),
           absl::StrCat("--server_fail_percent=",
                        PerServer(plan.server_fail_percent, i)),
           absl::StrCat("--orca=", plan.orca ? "true" : "false")});
    }
    return Backends::StartProcesses(
        features.servers,
        {"--server_only", "--server_stack=" + features.server_stack, "--port=0",
         "--compression=" + features.compression,
         "--server_cpus=" + absl::StrJoin(plan.server_cpus, ","),
         absl::StrCat("--secure=", features.secure ? "true" : "false"),
         absl::StrCat("--interceptors=", features.interceptors),
         absl::StrCat("--busy_poll_us=", features.busy_poll_us),
         absl::StrCat("--metrics=", features.metrics ? "true" : "false"),
         absl::StrCat("--tracing=", features.tracing),
         "--otlp_target=" + (features.tracing >= 0 ? OtlpTarget() : ""),
         absl::StrCat("--bdp_probe=",
                      absl::GetFlag(FLAGS_bdp_probe) ? "true" : "false"),
         "--tls_credentials_dir=" + plan.tls.dir},
        per_child, error);
  }
  ServerConfig config;
  config.compression = compression;
  config.work_per_call = absl::Microseconds(plan.server_work_us[0]);
  config.fail_percent = plan.server_fail_percent[0];
  config.orca = plan.orca;
  config.cpus = plan.server_cpus;
  config.interceptors = features.interceptors;
  if (features.metrics) config.metrics = ProcessMetrics();
  config.tracer = ProcessTracer();
  config.busy_poll_us = features.busy_poll_us;
  config.bdp_probe = absl::GetFlag(FLAGS_bdp_probe);
  if (features.secure) SetServerTls(plan.tls, &config);
  return Backends::StartInProcess(features.server_stack, config, error);
}

// Runs one combination; false if the servers could not be started.
bool RunOne(const RunFeatures& features, Workload workload,
            CompressionAlgorithm compression, const Plan& plan,
            RunResult* result) {
  result->features = features;
  std::unique_ptr<Backends> backends;
  std::string target = plan.target;
  if (target.empty()) {
    std::string error;
    backends = StartBackends(features, compression, plan, &error);
    if (backends == nullptr) {
      std::fprintf(stderr, "server: %s\n", error.c_str());
      return false;
    }
    target = backends->target();
  }
  BenchServer* const server =
      backends != nullptr ? backends->in_process() : nullptr;

  // Threads without an h2rpc name belong to the gRPC C++ side of the
  // process (both sides are never gRPC C++ in one process).
  ThreadRole unnamed = ThreadRole::kOther;
  if (server != nullptr && features.server_stack == "grpcpp") {
    unnamed = ThreadRole::kServer;
  } else if (features.client_stack == "grpcpp") {
    unnamed = ThreadRole::kClient;
  }
  SetDefaultRole(unnamed);

  ClientConfig config;
  config.target = target;
  config.lb_policy = features.lb_policy;
  config.service_config = plan.service_config;
  config.interceptors = features.interceptors;
  if (features.metrics) config.metrics = ProcessMetrics();
  config.tracer = ProcessTracer();
  config.busy_poll_us = features.busy_poll_us;
  config.bdp_probe = absl::GetFlag(FLAGS_bdp_probe);
  config.workload = workload;
  config.concurrency = features.max_concurrent_calls;
  config.connections = features.connections;
  config.req_size = features.req_size_bytes;
  config.resp_size = features.resp_size_bytes;
  config.compression = compression;
  config.cpus = plan.client_cpus;
  if (features.secure) {
    config.secure = true;
    config.pem_root_certs = plan.tls.ca_pem;
    config.ssl_target_name_override = kTlsTargetNameOverride;
  }
  OpStats stats;
  std::unique_ptr<BenchClient> client = features.client_stack == "grpcpp"
                                            ? NewGrpcppClient(config, &stats)
                                        : features.client_stack == "h2rpc_coro"
                                            ? NewH2rpcCoroClient(config, &stats)
                                            : NewH2rpcClient(config, &stats);
  client->Start();
  WaitForFirstOp(&stats);
  absl::SleepFor(plan.warmup);
  {
    ProgressReporter progress(features.Title(), &stats);
    stats.Reset();
    const absl::Time start = absl::Now();
    const ThreadCpuSnapshot cpu0 = ThreadCpuSnapshot::Take(unnamed);
    const int64_t process_cpu0 = ProcessCpuNanos();
    const int64_t proxy_cpu0 = OtherProcessesCpuNanos(plan.proxy_pids);
    const AllocationTotals client0 = AllocationsByRole(ThreadRole::kClient);
    const AllocationTotals server0 = AllocationsByRole(ThreadRole::kServer);
    Backends::Snapshot backends0;
    const bool backends_ok0 = backends != nullptr && backends->Take(&backends0);

    absl::SleepFor(features.benchtime);

    result->stats = stats.Take();
    result->duration = absl::Now() - start;
    const ThreadCpuSnapshot cpu1 = ThreadCpuSnapshot::Take(unnamed);
    const int64_t process_cpu1 = ProcessCpuNanos();
    if (!plan.proxy_pids.empty()) {
      result->proxy_cpu_nanos =
          OtherProcessesCpuNanos(plan.proxy_pids) - proxy_cpu0;
    }
    const AllocationTotals client1 = AllocationsByRole(ThreadRole::kClient);
    const AllocationTotals server1 = AllocationsByRole(ThreadRole::kServer);
    Backends::Snapshot backends1;
    if (backends_ok0 && backends->Take(&backends1)) {
      for (size_t i = 0; i < backends1.requests.size(); ++i) {
        result->backends.push_back(
            {backends->addresses()[i],
             backends1.requests[i] - backends0.requests[i]});
      }
      if (backends0.usage.has_value() && backends1.usage.has_value()) {
        result->server = Minus(*backends1.usage, *backends0.usage);
      }
    }
    result->client = UsageOf(ThreadRole::kClient, cpu0, cpu1, client0, client1);
    if (server != nullptr) {
      result->server =
          UsageOf(ThreadRole::kServer, cpu0, cpu1, server0, server1);
    }
    if (workload == Workload::kHandshake) {
      // An h2rpc channel's loop thread lives for one op, and threads that
      // exit are missing from per-thread figures: the client's CPU is the
      // process's less that of the other sides, whose threads live through
      // the run.
      const int64_t others =
          cpu1.RoleNanosSince(cpu0, ThreadRole::kOther) +
          (server != nullptr ? result->server->cpu_nanos : 0);
      result->client->cpu_nanos =
          std::max<int64_t>(0, process_cpu1 - process_cpu0 - others);
    }
  }
  client->Stop();
  return true;
}

// --server_only: one server until stdin closes.
int ServeOnly() {
  SetThisThreadRole(ThreadRole::kServer);
  SetDefaultRole(ThreadRole::kServer);
  CompressionAlgorithm compression;
  if (!ParseCompression(absl::GetFlag(FLAGS_compression), &compression)) {
    std::fprintf(stderr, "bad --compression\n");
    return 2;
  }
  const std::vector<std::string> stacks =
      ListFlag(absl::GetFlag(FLAGS_server_stack));
  if (stacks.size() != 1 || !IsServerStack(stacks[0])) {
    std::fprintf(stderr, "--server_only takes one --server_stack\n");
    return 2;
  }
  ServerConfig config;
  config.compression = compression;
  config.interceptors = absl::GetFlag(FLAGS_interceptors);
  config.metrics = ProcessMetrics();
  config.tracer = ProcessTracer();
  config.busy_poll_us = absl::GetFlag(FLAGS_busy_poll_us);
  config.bdp_probe = absl::GetFlag(FLAGS_bdp_probe);
  std::vector<int> work_us, fail_percent;
  if (!ServerLoadFlags(&work_us, &fail_percent)) return 2;
  config.work_per_call = absl::Microseconds(work_us[0]);
  config.fail_percent = fail_percent[0];
  config.orca = absl::GetFlag(FLAGS_orca);
  if (!BusyPollInRange(config.busy_poll_us)) return 2;
  if (!Cpus("server_cpus", absl::GetFlag(FLAGS_server_cpus), 0, &config.cpus)) {
    return 2;
  }
  if (!absl::GetFlag(FLAGS_server_address).empty()) {
    config.address = absl::GetFlag(FLAGS_server_address);
  } else if (absl::GetFlag(FLAGS_port) != 0) {
    config.address = absl::StrCat("0.0.0.0:", absl::GetFlag(FLAGS_port));
  }
  if (absl::GetFlag(FLAGS_secure)) {
    TlsCredentialFiles tls;
    if (!LoadTls(&tls)) return 2;
    SetServerTls(tls, &config);
  }
  std::string error;
  std::unique_ptr<Backends> backends =
      Backends::StartInProcess(stacks[0], config, &error);
  if (backends == nullptr) {
    std::fprintf(stderr, "server on %s: %s\n", config.address.c_str(),
                 error.c_str());
    return 1;
  }
  BenchServer* const server = backends->in_process();
  ServeUsageRequests(server->port(), [server] {
    const AllocationTotals a = AllocationsByRole(ThreadRole::kServer);
    return ServerReport{SideUsage{a.allocations, a.bytes, ProcessCpuNanos()},
                        server->requests()};
  });
  return 0;
}

// --otlp_collector_only: a discarding collector until stdin closes.
int CollectOnly() {
  int port = 0;
  Status status;
  std::unique_ptr<Server> collector = StartDiscardingCollector(&port, &status);
  if (collector == nullptr) {
    std::fprintf(stderr, "OTLP collector: %s\n", status.ToString().c_str());
    return 1;
  }
  ServeUsageRequests(port, [] { return ServerReport(); });
  return 0;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  const std::string command = absl::StrJoin(args, " ");
  std::unique_ptr<PrometheusEndpoint> metrics_endpoint;
  if (absl::GetFlag(FLAGS_metrics_port) >= 0) {
    PrometheusEndpoint::Options options;
    options.port = absl::GetFlag(FLAGS_metrics_port);
    Status status;
    metrics_endpoint =
        PrometheusEndpoint::Start(ProcessMetrics(), options, &status);
    if (metrics_endpoint == nullptr) {
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      return 1;
    }
    std::printf("metrics on port %d\n", metrics_endpoint->port());
    std::fflush(stdout);
  }
  if (absl::GetFlag(FLAGS_server_only)) return ServeOnly();
  if (absl::GetFlag(FLAGS_otlp_collector_only)) return CollectOnly();
  SetThisThreadRole(ThreadRole::kOther);

  Plan plan;
  if (!Cpus("client_cpus", absl::GetFlag(FLAGS_client_cpus), 1,
            &plan.client_cpus) ||
      !Cpus("server_cpus", absl::GetFlag(FLAGS_server_cpus), 0,
            &plan.server_cpus)) {
    return 2;
  }
  plan.process = absl::GetFlag(FLAGS_process);
  plan.target = absl::GetFlag(FLAGS_target);
  plan.warmup = absl::GetFlag(FLAGS_warmup);
  for (const std::string& pid : ListFlag(absl::GetFlag(FLAGS_proxy_pids))) {
    int value = 0;
    if (!absl::SimpleAtoi(pid, &value) || value <= 0) {
      std::fprintf(stderr, "bad --proxy_pids: %s\n", pid.c_str());
      return 2;
    }
    plan.proxy_pids.push_back(value);
  }
  const bool secure = absl::GetFlag(FLAGS_secure);
  if (secure && !LoadTls(&plan.tls)) return 2;
  if (plan.process != "auto" && plan.process != "one" &&
      plan.process != "two") {
    std::fprintf(stderr, "bad --process\n");
    return 2;
  }
  plan.servers = absl::GetFlag(FLAGS_servers);
  plan.lb_policy = absl::GetFlag(FLAGS_lb_policy);
  if (plan.servers < 1 || plan.servers > kMaxServers) {
    std::fprintf(stderr, "bad --servers=%d: from 1 to %d server processes\n",
                 plan.servers, kMaxServers);
    return 2;
  }
  if (plan.servers > 1 && !plan.target.empty()) {
    std::fprintf(stderr,
                 "--servers=%d starts servers, --target=%s drives running "
                 "ones: give one or the other\n",
                 plan.servers, plan.target.c_str());
    return 2;
  }
  if (plan.servers > 1 && plan.process == "one") {
    std::fprintf(stderr,
                 "--servers=%d runs each server in a process of its own: "
                 "not with --process=one\n",
                 plan.servers);
    return 2;
  }
  if (!BusyPollInRange(absl::GetFlag(FLAGS_busy_poll_us))) return 2;
  if (plan.lb_policy != "pick_first" && plan.lb_policy != "round_robin" &&
      plan.lb_policy != "weighted_round_robin") {
    std::fprintf(stderr,
                 "bad --lb_policy=%s: pick_first, round_robin or "
                 "weighted_round_robin\n",
                 plan.lb_policy.c_str());
    return 2;
  }
  plan.service_config = absl::GetFlag(FLAGS_service_config);
  plan.orca = absl::GetFlag(FLAGS_orca);
  if (!ServerLoadFlags(&plan.server_work_us, &plan.server_fail_percent)) {
    return 2;
  }
  std::vector<int> concurrencies, req_sizes, resp_sizes, connections;
  if (!IntList("max_concurrent_calls",
               absl::GetFlag(FLAGS_max_concurrent_calls), &concurrencies) ||
      !IntList("req_size_bytes", absl::GetFlag(FLAGS_req_size_bytes),
               &req_sizes) ||
      !IntList("resp_size_bytes", absl::GetFlag(FLAGS_resp_size_bytes),
               &resp_sizes) ||
      !IntList("connections", absl::GetFlag(FLAGS_connections), &connections)) {
    return 2;
  }
  const std::vector<std::string> workloads =
      ListFlag(absl::GetFlag(FLAGS_workloads));
  const std::vector<std::string> compressions =
      ListFlag(absl::GetFlag(FLAGS_compression));
  const std::vector<std::string> client_stacks =
      ListFlag(absl::GetFlag(FLAGS_client_stack));
  std::vector<std::string> server_stacks =
      ListFlag(absl::GetFlag(FLAGS_server_stack));
  if (!plan.target.empty()) server_stacks = {"remote"};
  for (const std::string& s : client_stacks) {
    if (!IsClientStack(s)) {
      std::fprintf(stderr, "bad --client_stack '%s'\n", s.c_str());
      return 2;
    }
  }
  for (const std::string& s : server_stacks) {
    if (!IsServerStack(s) && s != "remote") {
      std::fprintf(stderr, "bad --server_stack '%s'\n", s.c_str());
      return 2;
    }
  }
  // What only h2rpc's callback server and client do.
  const bool shaped_load =
      plan.orca ||
      *std::max_element(plan.server_work_us.begin(),
                        plan.server_work_us.end()) > 0 ||
      *std::max_element(plan.server_fail_percent.begin(),
                        plan.server_fail_percent.end()) > 0;
  for (const std::string& s : server_stacks) {
    if (shaped_load && s != "h2rpc") {
      std::fprintf(stderr,
                   "--orca, --server_work_us and --server_fail_percent are "
                   "for --server_stack=h2rpc only, not '%s'\n",
                   s.c_str());
      return 2;
    }
  }
  for (const std::string& s : client_stacks) {
    if ((!plan.service_config.empty() ||
         plan.lb_policy == "weighted_round_robin") &&
        s != "h2rpc") {
      std::fprintf(stderr,
                   "--service_config and --lb_policy=weighted_round_robin are "
                   "for --client_stack=h2rpc only, not '%s'\n",
                   s.c_str());
      return 2;
    }
  }

  const std::string pairing_rule = absl::GetFlag(FLAGS_pairings);
  if (pairing_rule != "all" && pairing_rule != "matched" &&
      pairing_rule != "same") {
    std::fprintf(stderr, "bad --pairings '%s'\n", pairing_rule.c_str());
    return 2;
  }
  // (client stack, server stack), in flag order: server, then client.
  std::vector<std::pair<std::string, std::string>> pairings;
  for (const std::string& server_stack : server_stacks) {
    for (const std::string& client_stack : client_stacks) {
      const bool paired = pairing_rule == "all" || server_stack == "remote" ||
                          (pairing_rule == "matched"
                               ? Library(server_stack) == Library(client_stack)
                               : server_stack == client_stack);
      if (paired) {
        pairings.emplace_back(client_stack, server_stack);
      }
    }
  }
  if (pairings.empty()) {
    std::fprintf(stderr,
                 "--pairings=%s: no client for any server among the "
                 "stacks\n",
                 pairing_rule.c_str());
    return 2;
  }

  std::printf("%s\n", TableHeader().c_str());
  std::vector<RunResult> results;
  bool failed = false;
  for (const std::string& workload_name : workloads) {
    Workload workload;
    if (!ParseWorkload(workload_name, &workload)) {
      std::fprintf(stderr, "bad --workloads entry '%s'\n",
                   workload_name.c_str());
      return 2;
    }
    for (const std::string& compression_name : compressions) {
      CompressionAlgorithm compression;
      if (!ParseCompression(compression_name, &compression)) {
        std::fprintf(stderr, "bad --compression entry '%s'\n",
                     compression_name.c_str());
        return 2;
      }
      for (int concurrency : concurrencies) {
        for (int req_size : req_sizes) {
          for (int resp_size : resp_sizes) {
            for (int conns : connections) {
              for (const auto& [client_stack, server_stack] : pairings) {
                // One connection per op whatever --connections says: the
                // first entry only.
                if (workload == Workload::kHandshake &&
                    conns != connections.front()) {
                  continue;
                }
                if (workload == Workload::kHandshake &&
                    client_stack == "h2rpc_coro") {
                  std::fprintf(stderr,
                               "--client_stack=h2rpc_coro does not run the "
                               "handshake workload\n");
                  return 2;
                }
                RunFeatures f;
                f.workload = workload_name;
                f.client_stack = client_stack;
                f.server_stack = server_stack;
                f.max_concurrent_calls = concurrency;
                f.req_size_bytes = req_size;
                f.resp_size_bytes = resp_size;
                f.compression = compression_name;
                f.connections =
                    workload == Workload::kHandshake ? 1 : std::max(1, conns);
                f.secure = secure;
                f.benchtime = absl::GetFlag(FLAGS_benchtime);
                f.servers = plan.servers;
                f.lb_policy = plan.lb_policy;
                f.interceptors = absl::GetFlag(FLAGS_interceptors);
                f.busy_poll_us = absl::GetFlag(FLAGS_busy_poll_us);
                f.metrics = ProcessMetrics() != nullptr;
                f.tracing = absl::GetFlag(FLAGS_tracing);
                f.two_processes =
                    plan.target.empty() &&
                    (plan.process == "two" || plan.servers > 1 ||
                     (plan.process == "auto" && client_stack == "grpcpp" &&
                      server_stack == "grpcpp"));
                RunResult result;
                if (!RunOne(f, workload, compression, plan, &result)) {
                  return 1;
                }
                std::printf("%s\n", TableRow(result).c_str());
                if (result.proxy_cpu_nanos.has_value()) {
                  std::printf("  proxy cpu: %.2fus per op\n",
                              static_cast<double>(*result.proxy_cpu_nanos) /
                                  1000.0 /
                                  std::max<int64_t>(1, result.total_ops()));
                }
                const std::string backends_line = BackendsLine(result);
                if (!backends_line.empty()) {
                  std::printf("%s\n", backends_line.c_str());
                }
                std::fflush(stdout);
                if (result.stats.errors > 0) {
                  std::fprintf(stderr, "%s: %lld errors, first: %s\n",
                               f.Title().c_str(),
                               static_cast<long long>(result.stats.errors),
                               result.stats.first_error.c_str());
                }
                const bool errors_expected =
                    *std::max_element(plan.server_fail_percent.begin(),
                                      plan.server_fail_percent.end()) > 0;
                failed |= (result.stats.errors > 0 && !errors_expected) ||
                          result.total_ops() == 0;
                results.push_back(std::move(result));
              }
            }
          }
        }
      }
    }
  }
  const std::string result_file = absl::GetFlag(FLAGS_result_file);
  if (!result_file.empty()) {
    std::ofstream out(result_file);
    out << ResultFileJson(command, absl::GetFlag(FLAGS_source_commit), results);
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", result_file.c_str());
      return 1;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace h2rpc::benchmark

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::benchmark::Main(argc, argv);
}
