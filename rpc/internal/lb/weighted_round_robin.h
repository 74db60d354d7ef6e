#ifndef H2RPC_RPC_INTERNAL_LB_WEIGHTED_ROUND_ROBIN_H_
#define H2RPC_RPC_INTERNAL_LB_WEIGHTED_ROUND_ROBIN_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/xds/data/orca/v3/orca_load_report.pb.h"
#include "rpc/load_balancing.h"

namespace h2rpc::internal {

// The weighted_round_robin config (gRPC's A58), with its defaults.
struct WeightedRoundRobinConfig {
  // Weights from out-of-band reports (OpenRcaService, asked for every
  // oob_reporting_period), not from the calls' trailers.
  bool enable_oob_load_report = false;
  absl::Duration oob_reporting_period = absl::Seconds(10);
  // A backend's weight counts only once it has reported for this long.
  absl::Duration blackout_period = absl::Seconds(10);
  // A weight not refreshed for this long is dropped.
  absl::Duration weight_expiration_period = absl::Minutes(3);
  // How often the picks are rebuilt from the weights; at least 100 ms.
  absl::Duration weight_update_period = absl::Seconds(1);
  // How much the error rate weighs against a backend: weight = qps /
  // (utilization + eps / qps * penalty). At least 0.
  double error_utilization_penalty = 1.0;
};

// Parses {"blackoutPeriod": "10s", ...}; INVALID_ARGUMENT naming the field.
Status ParseWeightedRoundRobinConfig(absl::string_view json,
                                     WeightedRoundRobinConfig* out);

// gRPC's weighted_round_robin (gRFC A58): connects to every address, as
// round_robin does, and spreads calls over the READY ones in proportion to
// their weights, qps / (utilization + eps / qps * penalty), from the ORCA
// load reports (gRFC A51) their servers send in each call's
// "endpoint-load-metrics-bin" trailer, or, with enable_oob_load_report,
// on each subchannel's out-of-band stream (utilization:
// application_utilization, else cpu_utilization). Picks follow an
// earliest-deadline-first schedule over the weights, rebuilt every
// weight_update_period; a backend without a valid weight (none yet, still
// in its blackout period, or expired) gets the mean of the others', and
// with fewer than two valid weights the picks are plain round robin.
// Loop thread only; a pick allocates nothing, a report costs one
// protobuf parse into a reused message.
class WeightedRoundRobin final : public LbPolicy,
                                 private LbCallObserver,
                                 private LbLoadReportWatcher {
 public:
  WeightedRoundRobin(Helper* helper, WeightedRoundRobinConfig config,
                     std::function<absl::Time()> now = absl::Now);
  ~WeightedRoundRobin() override;

  void UpdateAddresses(const std::vector<ResolvedAddress>& addresses) override;
  void ExitIdle() override;
  LbSubchannel* Pick() override;
  void OnSubchannelStateChange(LbSubchannel* subchannel) override;

  // For tests: the weight `address` has now (0 without a valid one).
  double weight(const std::string& address) const;

 private:
  // What the policy knows of one address's load.
  struct Endpoint {
    double weight = 0;
    absl::Time non_empty_since = absl::InfinitePast();
    absl::Time last_update = absl::InfinitePast();
  };
  // A READY subchannel in the schedule.
  struct Entry {
    LbSubchannel* subchannel;
    double weight;
    double period;    // 1 / weight
    double deadline;  // of its next pick
  };
  // The heap order: the earliest deadline on top.
  static bool Later(const Entry& a, const Entry& b) {
    return a.deadline > b.deadline;
  }

  void OnCallEnded(LbSubchannel* subchannel, const Status& status,
                   const Metadata& trailers) override;
  // A report from `subchannel`'s backend: its weight.
  void OnLoadReport(LbSubchannel* subchannel,
                    absl::string_view report) override;
  double WeightOf(const std::string& address, absl::Time now) const;
  // Rebuilds the schedule from the READY subchannels and their weights.
  void Rebuild();
  void ReportState();
  void ScheduleUpdate();

  Helper* const helper_;
  const WeightedRoundRobinConfig config_;
  const std::function<absl::Time()> now_;
  std::mt19937 random_;
  std::vector<SubchannelPtr> subchannels_;
  std::map<std::string, Endpoint> endpoints_;
  // A min-heap on deadline; capacity kept.
  std::vector<Entry> schedule_;
  double now_deadline_ = 0;  // the deadline of the latest pick
  xds::data::orca::v3::OrcaLoadReport report_;  // reused for each parse
  uint64_t update_timer_ = 0;
  bool idle_ = true;
  Status last_error_;
};

// The weighted_round_robin factory.
std::shared_ptr<LbPolicyFactory> NewWeightedRoundRobinFactory();

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_WEIGHTED_ROUND_ROBIN_H_
