#include "rpc/orca.h"

#include <algorithm>
#include <string>

namespace h2rpc {

void SetCallLoadReport(ServerContext* context,
                       const xds::data::orca::v3::OrcaLoadReport& report) {
  context->AddTrailingMetadata(kOrcaLoadReportTrailer,
                               report.SerializeAsString());
}

void OrcaServerMetrics::SetCpuUtilization(double value) {
  MutexLock lock(&mu_);
  report_.set_cpu_utilization(std::max(value, 0.0));
  Changed();
}

void OrcaServerMetrics::SetMemoryUtilization(double value) {
  MutexLock lock(&mu_);
  report_.set_mem_utilization(std::max(value, 0.0));
  Changed();
}

void OrcaServerMetrics::SetApplicationUtilization(double value) {
  MutexLock lock(&mu_);
  report_.set_application_utilization(std::max(value, 0.0));
  Changed();
}

void OrcaServerMetrics::SetQps(double value) {
  MutexLock lock(&mu_);
  report_.set_rps_fractional(std::max(value, 0.0));
  Changed();
}

void OrcaServerMetrics::SetEps(double value) {
  MutexLock lock(&mu_);
  report_.set_eps(std::max(value, 0.0));
  Changed();
}

void OrcaServerMetrics::SetNamedMetric(absl::string_view name, double value) {
  MutexLock lock(&mu_);
  (*report_.mutable_named_metrics())[std::string(name)] = value;
  Changed();
}

xds::data::orca::v3::OrcaLoadReport OrcaServerMetrics::Report() const {
  MutexLock lock(&mu_);
  return report_;
}

void OrcaServerMetrics::AttachTo(ServerContext* context) const {
  MutexLock lock(&mu_);
  context->AddTrailingMetadata(kOrcaLoadReportTrailer, serialized_);
}

void OrcaServerMetrics::Changed() { serialized_ = report_.SerializeAsString(); }

}  // namespace h2rpc
