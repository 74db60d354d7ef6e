#ifndef H2RPC_RPC_ORCA_H_
#define H2RPC_RPC_ORCA_H_

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "rpc/server_context.h"

namespace h2rpc {

// ORCA (gRPC's A51) on the server: load reports, sent in a call's trailers
// as xds.data.orca.v3.OrcaLoadReport or out of band by an OrcaService
// (rpc/orca_service.h), which the client's
// weighted_round_robin policy (A58) weighs backends by: qps /
// (utilization + eps / qps * errorUtilizationPenalty), utilization being
// application_utilization when set, else cpu_utilization. Part of
// //rpc:orca, which links the ORCA messages.

// The trailer a call's load report travels in (binary).
inline constexpr char kOrcaLoadReportTrailer[] = "endpoint-load-metrics-bin";

// A backend's load, the fields of xds.data.orca.v3.OrcaLoadReport.
struct LoadReport {
  // Fractions of what the backend has (CPU may exceed 1).
  double cpu_utilization = 0;
  double mem_utilization = 0;
  // The application's own measure; weighted_round_robin prefers it.
  double application_utilization = 0;
  double qps = 0;                               // rps_fractional
  double eps = 0;                               // errors per second
  std::map<std::string, double> utilization;    // named resources
  std::map<std::string, double> request_cost;   // this call's costs
  std::map<std::string, double> named_metrics;  // anything else
};

// Sends `report` as the load report of the call `context` serves, in its
// trailers. The handler's thread (or the loop thread, for a reactor),
// before the call finishes. Allocates the serialized report.
void SetCallLoadReport(ServerContext* context, const LoadReport& report);

// Reads a serialized xds.data.orca.v3.OrcaLoadReport (a per-call report's
// trailer, or an out-of-band report a policy's LbLoadReportWatcher got)
// into `*out`; false if it does not parse. Any thread. Allocates for the
// report's named entries (in the message parsed and in `*out`).
bool ParseLoadReport(absl::string_view serialized, LoadReport* out);

// A server's load figures (gRPC's ServerMetricRecorder), set by the
// application as it measures them and attached to calls by AttachTo.
// Thread-safe. The report is serialized once per change, not per call.
class OrcaServerMetrics {
 public:
  // Negative values are taken as 0.
  void SetCpuUtilization(double value);
  void SetMemoryUtilization(double value);
  void SetApplicationUtilization(double value);
  void SetQps(double value);
  void SetEps(double value);
  void SetNamedMetric(absl::string_view name, double value);

  // The figures as they are now.
  LoadReport Report() const;
  // The same, serialized as xds.data.orca.v3.OrcaLoadReport (a copy of
  // what the last change serialized).
  std::string SerializedReport() const;
  // Sends the figures as they are now as the load report of the call
  // `context` serves (see SetCallLoadReport). Copies the serialized report
  // into the call's trailers: no protobuf work.
  void AttachTo(ServerContext* context) const;

 private:
  // Sets `field` to `value` (at least 0).
  void Set(double LoadReport::*field, double value);
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  LoadReport report_ ABSL_GUARDED_BY(mu_);
  std::string serialized_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_ORCA_H_
