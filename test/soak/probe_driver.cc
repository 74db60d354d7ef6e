#include "test/soak/probe_driver.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "test/soak/abuse_probes.h"

namespace h2rpc::testing {

int ProbeDriver::Report::runs() const {
  int total = 0;
  for (const auto& [name, probe] : probes) total += probe.runs;
  return total;
}

std::string ProbeDriver::Report::ToString() const {
  std::string text;
  for (const auto& [name, probe] : probes) {
    absl::StrAppend(&text, "    ", name, " x", probe.runs, ": ",
                    probe.last_outcome, "\n");
  }
  return text;
}

ProbeDriver::ProbeDriver(BackendCluster* cluster, absl::Duration pause)
    : cluster_(cluster), pause_(pause) {
  thread_ = std::thread([this] { Run(); });
}

ProbeDriver::~ProbeDriver() { Stop(); }

void ProbeDriver::Stop() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

ProbeDriver::Report ProbeDriver::report() const {
  MutexLock lock(&mu_);
  return report_;
}

bool ProbeDriver::Pause() {
  return !stop_.WaitForNotificationWithTimeout(pause_);
}

void ProbeDriver::Run() {
  const std::vector<AbuseProbe>& probes = AbuseProbes();
  for (size_t turn = 0; Pause(); ++turn) {
    const AbuseProbe& probe = probes[turn % probes.size()];
    // Each round of probes starts at the next backend, so that over three
    // rounds every probe meets every backend.
    const int backend = static_cast<int>((turn + turn / probes.size()) %
                                         BackendCluster::kBackends);
    std::string outcome;
    std::string error;
    const bool answered = cluster_->Probe(backend, probe, &outcome, &error);
    MutexLock lock(&mu_);
    ProbeRuns& runs = report_.probes[probe.name];
    ++runs.runs;
    runs.last_outcome = absl::StrCat(cluster_->name(backend), ": ", outcome);
    if (!answered) report_.failures.push_back(std::move(error));
    if (absl::StrContains(outcome, kNotAnsweredWhileHeld)) {
      report_.failures.push_back(absl::StrCat(
          cluster_->name(backend), " during ", probe.name, ": ", outcome));
    }
  }
}

}  // namespace h2rpc::testing
