#include "rpc/orca.h"

#include <algorithm>
#include <string>
#include <utility>

#include "proto/xds/data/orca/v3/orca_load_report.pb.h"

namespace h2rpc {
namespace {

std::string Serialize(const LoadReport& report) {
  xds::data::orca::v3::OrcaLoadReport message;
  message.set_cpu_utilization(report.cpu_utilization);
  message.set_mem_utilization(report.mem_utilization);
  message.set_application_utilization(report.application_utilization);
  message.set_rps_fractional(report.qps);
  message.set_eps(report.eps);
  message.mutable_utilization()->insert(report.utilization.begin(),
                                        report.utilization.end());
  message.mutable_request_cost()->insert(report.request_cost.begin(),
                                         report.request_cost.end());
  message.mutable_named_metrics()->insert(report.named_metrics.begin(),
                                          report.named_metrics.end());
  return message.SerializeAsString();
}

}  // namespace

bool ParseLoadReport(absl::string_view serialized, LoadReport* out) {
  xds::data::orca::v3::OrcaLoadReport message;
  if (!message.ParseFromArray(serialized.data(),
                              static_cast<int>(serialized.size()))) {
    return false;
  }
  LoadReport report;
  report.cpu_utilization = message.cpu_utilization();
  report.mem_utilization = message.mem_utilization();
  report.application_utilization = message.application_utilization();
  report.qps = message.rps_fractional();
  report.eps = message.eps();
  report.utilization.insert(message.utilization().begin(),
                            message.utilization().end());
  report.request_cost.insert(message.request_cost().begin(),
                             message.request_cost().end());
  report.named_metrics.insert(message.named_metrics().begin(),
                              message.named_metrics().end());
  *out = std::move(report);
  return true;
}

void SetCallLoadReport(ServerContext* context, const LoadReport& report) {
  context->AddTrailingMetadata(kOrcaLoadReportTrailer, Serialize(report));
}

void OrcaServerMetrics::SetCpuUtilization(double value) {
  Set(&LoadReport::cpu_utilization, value);
}

void OrcaServerMetrics::SetMemoryUtilization(double value) {
  Set(&LoadReport::mem_utilization, value);
}

void OrcaServerMetrics::SetApplicationUtilization(double value) {
  Set(&LoadReport::application_utilization, value);
}

void OrcaServerMetrics::SetQps(double value) { Set(&LoadReport::qps, value); }

void OrcaServerMetrics::SetEps(double value) { Set(&LoadReport::eps, value); }

void OrcaServerMetrics::Set(double LoadReport::*field, double value) {
  MutexLock lock(&mu_);
  report_.*field = std::max(value, 0.0);
  Changed();
}

void OrcaServerMetrics::SetNamedMetric(absl::string_view name, double value) {
  MutexLock lock(&mu_);
  report_.named_metrics[std::string(name)] = value;
  Changed();
}

LoadReport OrcaServerMetrics::Report() const {
  MutexLock lock(&mu_);
  return report_;
}

std::string OrcaServerMetrics::SerializedReport() const {
  MutexLock lock(&mu_);
  return serialized_;
}

void OrcaServerMetrics::AttachTo(ServerContext* context) const {
  MutexLock lock(&mu_);
  context->AddTrailingMetadata(kOrcaLoadReportTrailer, serialized_);
}

void OrcaServerMetrics::Changed() { serialized_ = Serialize(report_); }

}  // namespace h2rpc
