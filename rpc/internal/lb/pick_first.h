#ifndef H2RPC_RPC_INTERNAL_LB_PICK_FIRST_H_
#define H2RPC_RPC_INTERNAL_LB_PICK_FIRST_H_

#include <cstddef>
#include <vector>

#include "rpc/load_balancing.h"

namespace h2rpc::internal {

// gRPC's pick_first: tries the addresses in order, one at a time, and sends
// every call to the first that connects; the others are dropped. Until the
// first pass over the addresses has ended the state is CONNECTING; after
// it, READY once any subchannel connects, else CONNECTING while one is
// attempting (each retries after its own backoff), else TRANSIENT_FAILURE
// with the latest attempt's error. When the chosen connection ends, the
// policy goes IDLE and asks for re-resolution; the next ExitIdle() starts a
// new pass from the first address. New addresses that still include the
// chosen one change nothing; otherwise a new pass starts (or waits for
// ExitIdle() when IDLE). With `shuffle` (the service config's
// shuffleAddressList) each address list is shuffled first, so that clients
// spread over the backends.
class PickFirst final : public LbPolicy {
 public:
  PickFirst(Helper* helper, bool shuffle = false)
      : helper_(helper), shuffle_(shuffle) {}

  void UpdateAddresses(const std::vector<ResolvedAddress>& addresses) override;
  void ExitIdle() override;
  LbSubchannel* Pick() override { return selected_; }
  void OnSubchannelStateChange(LbSubchannel* subchannel) override;

 private:
  // New subchannels for addresses_, the first one connecting.
  void StartPass();
  void ReportState();

  Helper* const helper_;
  const bool shuffle_;
  std::vector<ResolvedAddress> addresses_;
  std::vector<SubchannelPtr> subchannels_;
  LbSubchannel* selected_ = nullptr;  // READY, the only one left
  size_t attempting_ = 0;             // during the first pass
  bool first_pass_done_ = false;
  bool idle_ = true;
  Status last_error_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_PICK_FIRST_H_
