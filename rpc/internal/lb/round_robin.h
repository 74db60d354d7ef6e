#ifndef H2RPC_RPC_INTERNAL_LB_ROUND_ROBIN_H_
#define H2RPC_RPC_INTERNAL_LB_ROUND_ROBIN_H_

#include <cstddef>
#include <vector>

#include "rpc/load_balancing.h"

namespace h2rpc::internal {

// gRPC's round_robin: a subchannel to every address, all connecting at once
// and reconnecting whenever their connection ends; calls go to the READY
// ones in turn. The state is READY while any subchannel is, else
// CONNECTING while any is connecting (or about to), else TRANSIENT_FAILURE
// with the latest attempt's error. New addresses keep the subchannels of
// addresses still listed.
class RoundRobin final : public LbPolicy {
 public:
  explicit RoundRobin(Helper* helper) : helper_(helper) {}

  void UpdateAddresses(const std::vector<ResolvedAddress>& addresses) override;
  void ExitIdle() override;
  LbSubchannel* Pick() override {
    if (ready_.empty()) return nullptr;
    if (next_ >= ready_.size()) next_ = 0;
    return ready_[next_++];
  }
  void OnSubchannelStateChange(LbSubchannel* subchannel) override;

 private:
  void ReportState();

  Helper* const helper_;
  std::vector<SubchannelPtr> subchannels_;
  // The READY subchannels, in address order; capacity kept.
  std::vector<LbSubchannel*> ready_;
  size_t next_ = 0;  // index into ready_ of the next pick
  bool idle_ = true;
  Status last_error_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_ROUND_ROBIN_H_
