#ifndef H2RPC_RPC_INTERNAL_LB_OUTLIER_DETECTION_H_
#define H2RPC_RPC_INTERNAL_LB_OUTLIER_DETECTION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/load_balancing.h"

namespace h2rpc::internal {

// gRPC's outlier_detection_experimental policy config (gRFC A50), with its
// defaults.
struct OutlierDetectionConfig {
  absl::Duration interval = absl::Seconds(10);
  absl::Duration base_ejection_time = absl::Seconds(30);
  absl::Duration max_ejection_time = absl::Seconds(300);
  uint32_t max_ejection_percent = 10;  // 0 to 100
  // An address whose success rate is below mean - stdev * stdev_factor /
  // 1000 of those with enough calls is ejected.
  struct SuccessRate {
    uint32_t stdev_factor = 1900;
    uint32_t enforcement_percentage = 100;  // 0 to 100
    uint32_t minimum_hosts = 5;
    uint32_t request_volume = 100;
  };
  std::optional<SuccessRate> success_rate;
  // An address whose failure percentage is above threshold is ejected.
  struct FailurePercentage {
    uint32_t threshold = 85;                // 0 to 100
    uint32_t enforcement_percentage = 100;  // 0 to 100
    uint32_t minimum_hosts = 5;
    uint32_t request_volume = 50;
  };
  std::optional<FailurePercentage> failure_percentage;
  // The policy balancing over the addresses (childPolicy's first entry
  // with a known policy) and its config.
  std::string child_policy;
  std::string child_config = "{}";
};

// Finds the factories of child policies by name (the process's registered
// ones, then h2rpc's own); null for none.
using ChildPolicyFinder =
    std::function<std::shared_ptr<LbPolicyFactory>(absl::string_view)>;

// Parses the policy's JSON config ({"interval": "10s", ...,
// "childPolicy": [{"round_robin": {}}]}) into `*out`; INVALID_ARGUMENT
// naming the field otherwise (a child policy `find` does not know, or
// whose config it refuses, included).
Status ParseOutlierDetectionConfig(absl::string_view json,
                                   const ChildPolicyFinder& find,
                                   OutlierDetectionConfig* out);

// gRPC's outlier detection (gRFC A50): a parent policy that counts each
// address's call outcomes, and every interval ejects the outliers (by
// success rate against the others, or by failure percentage) for
// base_ejection_time times the number of times in a row it was ejected
// (at most max(base, max_ejection_time)), never more than
// max_ejection_percent of the addresses at once. Its child policy (say
// round_robin) balances over the addresses and sees an ejected address's
// subchannels in TRANSIENT_FAILURE. Without either ejection algorithm it
// only passes through: no counting, no timer. Loop thread only; Pick()
// costs one virtual call more than the child's, and counting a call one
// hash lookup.
class OutlierDetection final : public LbPolicy,
                               private LbPolicy::Helper,
                               private LbCallObserver {
 public:
  // `child` is the factory of config.child_policy. `now` gives the time
  // (tests step it); `random` picks enforcement (0 to 99).
  OutlierDetection(LbPolicy::Helper* helper, OutlierDetectionConfig config,
                   std::shared_ptr<LbPolicyFactory> child,
                   std::function<absl::Time()> now = absl::Now);
  ~OutlierDetection() override;

  void UpdateAddresses(const std::vector<ResolvedAddress>& addresses) override;
  void ExitIdle() override { child_->ExitIdle(); }
  LbSubchannel* Pick() override;
  void OnSubchannelStateChange(LbSubchannel* subchannel) override;

  // For tests: whether `address` is ejected now.
  bool ejected(const std::string& address) const;

 private:
  class EjectableSubchannel;
  struct AddressState;

  // LbPolicy::Helper, for the child.
  SubchannelPtr CreateSubchannel(const ResolvedAddress& address) override;
  void UpdateState(ConnectivityState state, const Status& error) override {
    helper_->UpdateState(state, error);
  }
  void RequestReresolution() override { helper_->RequestReresolution(); }
  uint64_t StartTimer(absl::Duration delay,
                      absl::AnyInvocable<void()> task) override {
    return helper_->StartTimer(delay, std::move(task));
  }
  void CancelTimer(uint64_t id) override { helper_->CancelTimer(id); }
  const std::string& target() const override { return helper_->target(); }

  // LbCallObserver, on the channel's subchannels.
  void OnCallEnded(LbSubchannel* subchannel, const Status& status,
                   const Metadata& trailers) override;

  bool counting() const {
    return config_.success_rate.has_value() ||
           config_.failure_percentage.has_value();
  }
  void ScheduleInterval();
  // The interval timer: swaps the call counts, ejects, un-ejects.
  void RunInterval();
  void SuccessRateEjection();
  void FailurePercentageEjection();
  // Whether one more ejection stays within max_ejection_percent.
  bool MayEject() const;
  void Eject(AddressState& state, absl::Time now);
  void Uneject(AddressState& state);
  // Tells the child of each of `state`'s subchannels (their seen state
  // changed).
  void ReportTo(AddressState& state);
  EjectableSubchannel* Wrapper(LbSubchannel* subchannel) const;

  LbPolicy::Helper* const helper_;
  const OutlierDetectionConfig config_;
  const std::function<absl::Time()> now_;
  std::mt19937 random_;
  std::map<std::string, AddressState> addresses_;
  // The channel's subchannel -> the wrapper the child holds.
  std::map<LbSubchannel*, EjectableSubchannel*> wrappers_;
  uint64_t interval_timer_ = 0;
  absl::Time interval_start_;
  // Last: destroyed first, orphaning its wrappers while the maps above
  // still exist.
  std::unique_ptr<LbPolicy> child_;
};

// The outlier_detection_experimental factory (child policies found by
// `find`).
std::shared_ptr<LbPolicyFactory> NewOutlierDetectionFactory(
    ChildPolicyFinder find);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_OUTLIER_DETECTION_H_
