#ifndef H2RPC_RPC_ORCA_H_
#define H2RPC_RPC_ORCA_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "proto/xds/data/orca/v3/orca_load_report.pb.h"
#include "rpc/server_context.h"

namespace h2rpc {

// ORCA (gRPC's A51) on the server: load reports in xds.data.orca.v3's
// OrcaLoadReport, sent in a call's trailers, which the client's
// weighted_round_robin policy (A58) weighs backends by: qps /
// (utilization + eps / qps * errorUtilizationPenalty), utilization being
// application_utilization when set, else cpu_utilization. Part of
// //rpc:orca, which links the ORCA messages.

// The trailer a call's load report travels in (binary).
inline constexpr char kOrcaLoadReportTrailer[] = "endpoint-load-metrics-bin";

// Sends `report` as the load report of the call `context` serves, in its
// trailers. The handler's thread (or the loop thread, for a reactor),
// before the call finishes. Allocates the serialized report.
void SetCallLoadReport(ServerContext* context,
                       const xds::data::orca::v3::OrcaLoadReport& report);

// A server's load figures (gRPC's ServerMetricRecorder), set by the
// application as it measures them and attached to calls by AttachTo.
// Thread-safe. The report is serialized once per change, not per call.
class OrcaServerMetrics {
 public:
  // Fractions of what the server has (CPU may exceed 1); negative values
  // are taken as 0.
  void SetCpuUtilization(double value);
  void SetMemoryUtilization(double value);
  void SetApplicationUtilization(double value);
  // Queries and errors per second.
  void SetQps(double value);
  void SetEps(double value);
  void SetNamedMetric(absl::string_view name, double value);

  // The figures as they are now.
  xds::data::orca::v3::OrcaLoadReport Report() const;
  // Sends the figures as they are now as the load report of the call
  // `context` serves (see SetCallLoadReport). Copies the serialized report
  // into the call's trailers: no protobuf work.
  void AttachTo(ServerContext* context) const;

 private:
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  xds::data::orca::v3::OrcaLoadReport report_ ABSL_GUARDED_BY(mu_);
  std::string serialized_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_ORCA_H_
