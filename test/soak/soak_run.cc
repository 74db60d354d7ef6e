#include "test/soak/soak_run.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/credentials.h"
#include "test/soak/backend_cluster.h"
#include "test/soak/probe_driver.h"
#include "test/soak/process_sample.h"
#include "test/soak/resource_monitor.h"
#include "test/soak/rss_trend.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc::testing {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::TestService;

// round_robin over the backends that report the service SERVING; calls that
// fail with UNAVAILABLE before the response headers are retried.
constexpr char kServiceConfig[] = R"json({
  "loadBalancingConfig": [{"round_robin": {}}],
  "healthCheckConfig": {"serviceName": "grpc.testing.TestService"},
  "methodConfig": [{
    "name": [{"service": "grpc.testing.TestService"}],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.05s",
      "maxBackoff": "0.5s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json";

// How long every backend may take to answer through a channel, at the
// start and once the faults have stopped.
constexpr absl::Duration kAllAnswerTimeout = absl::Seconds(60);
// How long descriptors and threads may take to come back to their first
// count once everything is quiet.
constexpr absl::Duration kQuietTimeout = absl::Seconds(30);
// How long calls in flight at the end may take beyond their deadline.
constexpr absl::Duration kEndSlack = absl::Seconds(30);

std::shared_ptr<Channel> MakeChannel(const std::string& target, bool tls) {
  ChannelOptions options;
  options.service_config = kServiceConfig;
  // Restarted backends are found again within a second.
  options.initial_backoff = absl::Milliseconds(100);
  options.max_backoff = absl::Seconds(1);
  options.min_connect_timeout = absl::Seconds(5);
  if (!tls) return CreateChannel(target, InsecureChannelCredentials(), options);
  options.ssl_target_name_override = "localhost";
  SslCredentialsOptions ssl;
  ssl.pem_root_certs = transport::tls::testing::GetTestPki().ca_pem;
  return CreateChannel(target, SslCredentials(ssl), options);
}

// Makes wait_for_ready UnaryCalls on `channel` until each backend of
// `cluster` has answered one (true) or `timeout` passes (false, with
// `*seen` naming who answered). round_robin picks only READY backends, so
// this waits until every one is.
bool AllBackendsAnswer(Channel& channel, const BackendCluster& cluster,
                       absl::Duration timeout, std::string* seen) {
  std::set<std::string> names;
  for (int i = 0; i < BackendCluster::kBackends; ++i) {
    names.insert(cluster.name(i));
  }
  std::set<std::string> answered;
  const absl::Time deadline = absl::Now() + timeout;
  while (answered != names && absl::Now() < deadline) {
    ClientContext context;
    context.set_wait_for_ready(true);
    context.set_deadline(deadline);
    SimpleResponse response;
    if (channel
            .UnaryCall(&context, TestService::kUnaryCallPath, SimpleRequest(),
                       &response)
            .ok()) {
      answered.insert(response.hostname());
    }
  }
  *seen = absl::StrJoin(answered, ",");
  return answered == names;
}

// Descriptors and threads of this process ("client") and of each backend,
// by name.
using Counts = std::map<std::string, ProcessSample>;

Counts TakeCounts(const BackendCluster& cluster) {
  Counts counts;
  counts["client"] = SampleSelf();
  for (int i = 0; i < BackendCluster::kBackends; ++i) {
    counts[cluster.name(i)] = SampleProcess(cluster.pid(i));
  }
  return counts;
}

std::string Describe(const Counts& counts) {
  std::vector<std::string> parts;
  for (const auto& [name, sample] : counts) {
    parts.push_back(absl::StrCat(name, " ", sample.fds, " fds/", sample.threads,
                                 " threads"));
  }
  return absl::StrJoin(parts, ", ");
}

// Every process of `now` has at most `fd_slack` descriptors and
// `thread_slack` threads more than in `base` (and could be read).
bool WithinSlack(const Counts& now, const Counts& base,
                 const SoakOptions& options) {
  for (const auto& [name, sample] : now) {
    const ProcessSample& first = base.at(name);
    if (sample.fds < 0 || sample.threads < 0 ||
        sample.fds > first.fds + options.fd_slack ||
        sample.threads > first.threads + options.thread_slack) {
      return false;
    }
  }
  return true;
}

// Checks one channel's outcomes: every call ended; wait_for_ready calls all
// succeeded; the others ended OK or UNAVAILABLE; every answer was right;
// every kind had successes.
void CheckTally(const std::string& channel, const CallTally& tally,
                std::vector<std::string>* failures) {
  for (CallKind kind : kCallKinds) {
    const auto it = tally.kinds.find(kind);
    const std::string what = absl::StrCat(channel, " ", CallKindName(kind));
    if (it == tally.kinds.end()) {
      failures->push_back(absl::StrCat(what, ": no call made"));
      continue;
    }
    const KindTally& calls = it->second;
    if (calls.ended != calls.started) {
      failures->push_back(absl::StrCat(what, ": ", calls.started - calls.ended,
                                       " calls never ended (lost)"));
    }
    if (calls.wrong_answers > 0) {
      failures->push_back(
          absl::StrCat(what, ": ", calls.wrong_answers, " wrong answers"));
    }
    const auto ok = calls.by_status.find(StatusCode::kOk);
    if (ok == calls.by_status.end() || ok->second == 0) {
      failures->push_back(absl::StrCat(what, ": no call succeeded"));
    }
    for (const auto& [code, count] : calls.by_status) {
      const bool allowed =
          code == StatusCode::kOk || (code == StatusCode::kUnavailable &&
                                      kind != CallKind::kUnaryWaitForReady);
      if (allowed) continue;
      const auto examples = calls.examples.find(code);
      failures->push_back(absl::StrCat(
          what, ": ", count, " calls ended ", StatusCodeName(code), " (\"",
          examples == calls.examples.end()
              ? ""
              : absl::StrJoin(examples->second, "\" | \""),
          "\")"));
    }
  }
}

// A fresh directory for the TLS files, removed with them.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern =
        absl::StrCat(base != nullptr ? base : "/tmp", "/h2rpc_soak_XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (path_.empty()) return;
    unlink((path_ + "/server.key").c_str());
    unlink((path_ + "/server.pem").c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

SoakReport RunSoak(const SoakOptions& options) {
  SoakReport report;
  report.started = absl::Now();
  report.seed = options.faults.seed;
  std::vector<std::string>& failures = report.failures;
  auto log = [&options](const std::string& line) {
    if (options.log) options.log(line);
  };
  TempDir dir;
  if (dir.path().empty()) {
    failures.push_back("mkdtemp failed");
    return report;
  }
  BackendCluster cluster;
  std::string error;
  if (!cluster.Start(dir.path(), &error)) {
    failures.push_back(error);
    return report;
  }
  std::shared_ptr<Channel> plain = MakeChannel(cluster.PlainTarget(), false);
  std::shared_ptr<Channel> tls = MakeChannel(cluster.TlsTarget(), true);
  const std::pair<const char*, Channel*> channels[] = {
      {"plaintext", plain.get()}, {"tls", tls.get()}};
  // Its thread runs at both quiet points.
  ResourceMonitor monitor(&cluster, options.sample_period);

  // The first quiet point: every backend READY on both channels, no load.
  for (const auto& [name, channel] : channels) {
    std::string seen;
    if (!AllBackendsAnswer(*channel, cluster, kAllAnswerTimeout, &seen)) {
      failures.push_back(absl::StrCat("at the start, only ", seen,
                                      " answered through the ", name,
                                      " channel"));
      return report;
    }
  }
  const Counts base = TakeCounts(cluster);
  log(absl::StrCat("quiet at the start: ", Describe(base)));

  const absl::Time start = absl::Now();
  CallTally plain_tally;
  CallTally tls_tally;
  FaultDriver::Counts faults;
  ProbeDriver::Report probes;
  {
    MixedLoad plain_load(plain, options.load);
    MixedLoad tls_load(tls, options.load);
    FaultDriver fault_driver(&cluster, options.faults);
    ProbeDriver probe_driver(&cluster, options.probe_pause);
    const absl::Time end = start + options.duration;
    const absl::Duration step =
        std::max(options.duration / 10, absl::Seconds(10));
    for (absl::Time now = absl::Now(); now < end; now = absl::Now()) {
      // The soak's length: nothing is awaited here.
      absl::SleepFor(std::min(step, end - now));
      CallTally total = plain_load.Tally();
      total.Add(tls_load.Tally());
      log(absl::StrCat(absl::FormatDuration(
                           absl::Trunc(absl::Now() - start, absl::Seconds(1))),
                       ": ", total.ended(), " calls ended; ",
                       fault_driver.counts().ToString(), "; ",
                       probe_driver.report().runs(), " probes"));
    }
    fault_driver.Stop();
    probe_driver.Stop();
    plain_load.Stop();
    tls_load.Stop();
    const absl::Duration wait = std::max(options.load.call_timeout,
                                         options.load.wait_for_ready_timeout) +
                                kEndSlack;
    for (MixedLoad* load : {&plain_load, &tls_load}) {
      if (!load->WaitAllEnded(wait)) {
        failures.push_back(absl::StrCat("calls still in flight ",
                                        absl::FormatDuration(wait),
                                        " after the load stopped"));
      }
    }
    plain_tally = plain_load.Tally();
    tls_tally = tls_load.Tally();
    faults = fault_driver.counts();
    probes = probe_driver.report();
  }
  const absl::Time end = absl::Now();
  CheckTally("plaintext", plain_tally, &failures);
  CheckTally("tls", tls_tally, &failures);
  for (const std::string& failure : faults.failures) {
    failures.push_back(absl::StrCat("fault driver: ", failure));
  }
  for (const std::string& failure : probes.failures) {
    failures.push_back(absl::StrCat("probe: ", failure));
  }
  std::string crashes;
  if (!cluster.NoneCrashed(&crashes)) {
    failures.push_back(absl::StrCat("crashed: ", crashes));
  }

  // The last quiet point: as the first, once descriptors and threads have
  // had time to be released.
  for (const auto& [name, channel] : channels) {
    std::string seen;
    if (!AllBackendsAnswer(*channel, cluster, kAllAnswerTimeout, &seen)) {
      failures.push_back(absl::StrCat("at the end, only ", seen,
                                      " answered through the ", name,
                                      " channel"));
    }
  }
  Counts last;
  const bool quiet = WaitFor(
      [&] {
        last = TakeCounts(cluster);
        return WithinSlack(last, base, options);
      },
      kQuietTimeout);
  if (!quiet) {
    failures.push_back(absl::StrCat("descriptors or threads grew (slack ",
                                    options.fd_slack, " fds, ",
                                    options.thread_slack, " threads): start ",
                                    Describe(base), "; end ", Describe(last)));
  }
  monitor.Stop();

  // Memory: processes that lived through the soak stay flat after their
  // warm-up; restarted backends stay near b0.
  const std::vector<ResourceSeries> all_series = monitor.series();
  int64_t b0_peak = -1;
  for (const ResourceSeries& series : all_series) {
    if (series.label == cluster.name(0)) {
      b0_peak = std::max(b0_peak, RssTrendOf(series, start, end).peak);
    }
  }
  std::string memory;
  int restarted = 0;
  int64_t restarted_peak = -1;
  for (const ResourceSeries& series : all_series) {
    const RssTrend trend = RssTrendOf(series, start, end);
    // Only processes alive since the start had their warm-up before the
    // second third (a backend started later may be warming up in it).
    const bool from_start =
        !series.points.empty() && series.points.front().time <= start;
    if (!from_start) {
      ++restarted;
      restarted_peak = std::max(restarted_peak, trend.peak);
      if (b0_peak >= 0 &&
          trend.peak > b0_peak + options.restarted_peak_slack_bytes) {
        failures.push_back(absl::StrCat("a restarted backend's RSS went ",
                                        Mib(options.restarted_peak_slack_bytes),
                                        " past b0's peak ", Mib(b0_peak), ": ",
                                        trend.ToString()));
      }
      continue;
    }
    absl::StrAppend(&memory, "    ", trend.ToString(), "\n");
    report.rss.push_back(trend);
    if (!trend.complete()) {
      if (trend.label == "client" || trend.label == cluster.name(0)) {
        failures.push_back(absl::StrCat("no RSS samples through the soak: ",
                                        trend.ToString()));
      }
      continue;
    }
    const int64_t bound = std::max<int64_t>(
        options.rss_growth_bytes,
        static_cast<int64_t>(options.rss_growth_fraction *
                             static_cast<double>(trend.earlier_median)));
    if (trend.growth() > bound) {
      failures.push_back(absl::StrCat("RSS grew by more than ", Mib(bound),
                                      ": ", trend.ToString()));
    }
  }
  report.restarted_backends = restarted;
  report.restarted_peak_rss = restarted_peak;
  absl::StrAppend(&memory, "    ", restarted,
                  " backend processes started during the soak: peak ",
                  Mib(static_cast<double>(restarted_peak)), "\n");

  plain.reset();
  tls.reset();
  std::string how;
  if (!cluster.TerminateAll(&how)) {
    failures.push_back(absl::StrCat("graceful shutdown at the end: ", how));
  }

  report.ran = end - start;
  report.plaintext = plain_tally;
  report.tls = tls_tally;
  report.faults = faults;
  for (int i = 0; i < BackendCluster::kBackends; ++i) {
    report.backend_starts.push_back(cluster.starts(i));
  }
  report.probes = probes;
  report.quiet_start = base;
  report.quiet_end = last;
  report.figures = absl::StrCat(
      "soak of ",
      absl::FormatDuration(absl::Trunc(end - start, absl::Seconds(1))),
      " (load, faults and probes), seed ", options.faults.seed, "\n",
      "  plaintext channel:\n", plain_tally.ToString(), "  tls channel:\n",
      tls_tally.ToString(), "  faults: ", faults.ToString(), "\n",
      "  backend starts: ", cluster.starts(0), "/", cluster.starts(1), "/",
      cluster.starts(2), "\n", "  probes (", probes.runs(), " runs):\n",
      probes.ToString(), "  RSS (median of the 2nd third -> of the 3rd):\n",
      memory, "  quiet points: start ", Describe(base), "\n",
      "               end ", Describe(last), "\n");
  return report;
}

}  // namespace h2rpc::testing
