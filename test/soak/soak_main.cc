// The soak under faults (soak_run.h) for as long as --duration says; prints
// its progress to stderr and its figures to stdout. Exit code 0 when it
// passed, 1 when it did not (the failures on stderr) or its result file
// could not be written, 2 when the result file cannot be created. Run it
// with tools/soak, which builds it and sets up its runfiles.
//
//   soak --duration=30m [--seed=N] [--result_file=FILE]
//
// --result_file writes the figures as one JSON document too (format
// h2rpc-soak/1; tools/perfdoc's soak block renders it):
//   {"format": "h2rpc-soak/1", "started": "2026-12-05T10:00:00Z",
//    "duration_s": 1802.4, "requested_duration_s": 1800, "seed": 1,
//    "sanitizer": "none", "passed": true, "failures": [],
//    "calls": {"total": N, "ended": N, "channels": {"plaintext": {
//      "unary": {"started": N, "ended": N, "ok": N,
//                "not_ok": {"UNAVAILABLE": N}, "wrong_answers": 0,
//                "examples": {"UNAVAILABLE": ["message", ...]}}, ...},
//      "tls": {...}}},
//    "faults": {"kills": N, "graceful_restarts": N, "proxy_resets": N,
//               "proxy_stalls": N},
//    "backend_starts": [1, N, N],
//    "probes": {"total": N, "by_kind": {"ping_flood": {"runs": N,
//               "last_outcome": "b1: ..."}, ...}},
//    "rss": {"windows_s": [[600, 1200], [1200, 1800]],
//            "processes": [{"process": "client", "pid": N,
//              "earlier_median_bytes": N, "later_median_bytes": N,
//              "growth_per_hour_bytes": X, "peak_bytes": N}, ...],
//            "restarted_backends": {"processes": N, "peak_bytes": N}},
//    "quiet_points": {"start": {"client": {"fds": N, "threads": N},
//                               "b0": {...}, ...},
//                     "end": {...}}}
// The RSS rows are the processes alive since the start (the medians are
// null for one not alive through both windows); a figure that could not be
// read is null. The file is written as FILE.tmp and renamed at the end.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "test/abuse/process_memory.h"
#include "test/soak/soak_run.h"

ABSL_FLAG(absl::Duration, duration, absl::Minutes(2),
          "How long the load runs under faults and probes.");
ABSL_FLAG(uint32_t, seed, 1, "Seed of the fault driver's choices.");
ABSL_FLAG(std::string, result_file, "",
          "Where to write the figures as JSON (format h2rpc-soak/1) too; "
          "none when empty.");

// Freed memory waits in ASan's quarantine and would look like growth.
extern "C" const char* __asan_default_options() {
  return h2rpc::testing::kAsanOptions;
}

namespace h2rpc::testing {
namespace {

using Json = nlohmann::ordered_json;

#if defined(__SANITIZE_ADDRESS__)
constexpr char kSanitizer[] = "address";
#elif defined(__SANITIZE_THREAD__)
constexpr char kSanitizer[] = "thread";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr char kSanitizer[] = "address";
#elif __has_feature(thread_sanitizer)
constexpr char kSanitizer[] = "thread";
#else
constexpr char kSanitizer[] = "none";
#endif
#else
constexpr char kSanitizer[] = "none";
#endif

// `value`, or null when it is negative (could not be read).
Json Known(int64_t value) { return value < 0 ? Json(nullptr) : Json(value); }

// Seconds, to the millisecond.
double Seconds(absl::Duration duration) {
  return absl::ToDoubleSeconds(absl::Trunc(duration, absl::Milliseconds(1)));
}

Json KindJson(const KindTally& tally) {
  Json not_ok = Json::object();
  int64_t ok = 0;
  for (const auto& [code, count] : tally.by_status) {
    if (code == StatusCode::kOk) {
      ok = count;
    } else {
      not_ok[std::string(StatusCodeName(code))] = count;
    }
  }
  Json examples = Json::object();
  for (const auto& [code, messages] : tally.examples) {
    examples[std::string(StatusCodeName(code))] = messages;
  }
  return Json{{"started", tally.started},
              {"ended", tally.ended},
              {"ok", ok},
              {"not_ok", not_ok},
              {"wrong_answers", tally.wrong_answers},
              {"examples", examples}};
}

Json ChannelJson(const CallTally& tally) {
  Json channel = Json::object();
  for (const auto& [kind, kind_tally] : tally.kinds) {
    channel[std::string(CallKindName(kind))] = KindJson(kind_tally);
  }
  return channel;
}

Json CountsJson(const std::map<std::string, ProcessSample>& counts) {
  Json processes = Json::object();
  for (const auto& [name, sample] : counts) {
    processes[name] = {{"fds", Known(sample.fds)},
                       {"threads", Known(sample.threads)}};
  }
  return processes;
}

Json ReportJson(const SoakReport& report, absl::Duration requested) {
  Json probes_by_kind = Json::object();
  for (const auto& [name, probe] : report.probes.probes) {
    probes_by_kind[name] = {{"runs", probe.runs},
                            {"last_outcome", probe.last_outcome}};
  }
  Json rss_rows = Json::array();
  for (const RssTrend& trend : report.rss) {
    rss_rows.push_back(
        {{"process", trend.label},
         {"pid", trend.pid},
         {"earlier_median_bytes", Known(trend.earlier_median)},
         {"later_median_bytes", Known(trend.later_median)},
         {"growth_per_hour_bytes",
          trend.complete() ? Json(trend.growth_per_hour()) : Json(nullptr)},
         {"peak_bytes", Known(trend.peak)}});
  }
  // RssTrendOf's thirds of the load.
  const double third = Seconds(report.ran) / 3;
  CallTally all = report.plaintext;
  all.Add(report.tls);
  return Json{
      {"format", "h2rpc-soak/1"},
      {"started", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", report.started,
                                   absl::UTCTimeZone())},
      {"duration_s", Seconds(report.ran)},
      {"requested_duration_s", Seconds(requested)},
      {"seed", report.seed},
      {"sanitizer", kSanitizer},
      {"passed", report.failures.empty()},
      {"failures", report.failures},
      {"calls",
       {{"total", all.started()},
        {"ended", all.ended()},
        {"channels",
         {{"plaintext", ChannelJson(report.plaintext)},
          {"tls", ChannelJson(report.tls)}}}}},
      {"faults",
       {{"kills", report.faults.kills},
        {"graceful_restarts", report.faults.terminations},
        {"proxy_resets", report.faults.resets},
        {"proxy_stalls", report.faults.delays}}},
      {"backend_starts", report.backend_starts},
      {"probes",
       {{"total", report.probes.runs()}, {"by_kind", probes_by_kind}}},
      {"rss",
       {{"windows_s", Json::array({Json::array({third, 2 * third}),
                                   Json::array({2 * third, 3 * third})})},
        {"processes", rss_rows},
        {"restarted_backends",
         {{"processes", report.restarted_backends},
          {"peak_bytes", Known(report.restarted_peak_rss)}}}}},
      {"quiet_points",
       {{"start", CountsJson(report.quiet_start)},
        {"end", CountsJson(report.quiet_end)}}}};
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  h2rpc::testing::SoakOptions options;
  options.duration = absl::GetFlag(FLAGS_duration);
  options.faults.seed = absl::GetFlag(FLAGS_seed);
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "[soak] %s\n", line.c_str());
  };
  // Created before the soak, so that a path that cannot be written fails
  // at once rather than after --duration.
  const std::string result_file = absl::GetFlag(FLAGS_result_file);
  const std::string partial = result_file + ".tmp";
  std::ofstream out;
  if (!result_file.empty()) {
    out.open(partial, std::ios::out | std::ios::trunc);
    if (!out) {
      std::fprintf(stderr, "soak: cannot create %s\n", partial.c_str());
      return 2;
    }
  }
  const h2rpc::testing::SoakReport report = h2rpc::testing::RunSoak(options);
  std::printf("%s", report.figures.c_str());
  std::fflush(stdout);
  for (const std::string& failure : report.failures) {
    std::fprintf(stderr, "FAILED: %s\n", failure.c_str());
  }
  bool written = true;
  if (!result_file.empty()) {
    out << h2rpc::testing::ReportJson(report, options.duration)
               .dump(2, ' ', false,
                     h2rpc::testing::Json::error_handler_t::replace)
        << "\n";
    out.close();
    written =
        !out.fail() && std::rename(partial.c_str(), result_file.c_str()) == 0;
    if (!written) {
      std::fprintf(stderr, "FAILED: writing %s\n", result_file.c_str());
    }
  }
  std::printf("%s\n", report.failures.empty() ? "PASSED" : "FAILED");
  return report.failures.empty() && written ? 0 : 1;
}
