#include "test/soak/resource_monitor.h"

#include <unistd.h>

#include "absl/time/clock.h"

namespace h2rpc::testing {

ResourceMonitor::ResourceMonitor(const BackendCluster* cluster,
                                 absl::Duration period)
    : cluster_(cluster), period_(period) {
  thread_ = std::thread([this] { Run(); });
}

ResourceMonitor::~ResourceMonitor() { Stop(); }

void ResourceMonitor::Stop() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

std::vector<ResourceSeries> ResourceMonitor::series() const {
  MutexLock lock(&mu_);
  return series_;
}

ResourceSeries& ResourceMonitor::SeriesOf(const std::string& label, pid_t pid) {
  for (ResourceSeries& series : series_) {
    if (series.pid == pid && series.label == label) return series;
  }
  series_.push_back(ResourceSeries{label, pid, {}});
  return series_.back();
}

void ResourceMonitor::SampleAll() {
  const absl::Time now = absl::Now();
  const ProcessSample self = SampleSelf();
  struct Backend {
    int index;
    pid_t pid;
    ProcessSample sample;
  };
  std::vector<Backend> backends;
  for (int i = 0; i < BackendCluster::kBackends; ++i) {
    const pid_t pid = cluster_->pid(i);
    if (pid <= 0) continue;
    const ProcessSample sample = SampleProcess(pid);
    // A process that ended between the two reads has nothing to add.
    if (sample.rss_bytes < 0 || cluster_->pid(i) != pid) continue;
    backends.push_back({i, pid, sample});
  }
  MutexLock lock(&mu_);
  SeriesOf("client", getpid()).points.push_back({now, self});
  for (const Backend& backend : backends) {
    SeriesOf(cluster_->name(backend.index), backend.pid)
        .points.push_back({now, backend.sample});
  }
}

void ResourceMonitor::Run() {
  do {
    SampleAll();
  } while (!stop_.WaitForNotificationWithTimeout(period_));
}

}  // namespace h2rpc::testing
