#include "rpc/internal/lb/round_robin.h"

#include <utility>

#include "rpc/internal/lb/connect_all.h"

namespace h2rpc::internal {

void RoundRobin::UpdateAddresses(
    const std::vector<ResolvedAddress>& addresses) {
  UpdateConnectAllSubchannels(addresses, helper_, idle_, nullptr,
                              &subchannels_);
  ReportState();
}

void RoundRobin::ExitIdle() {
  idle_ = false;
  for (SubchannelPtr& subchannel : subchannels_) {
    subchannel->RequestConnection();
  }
  ReportState();
}

void RoundRobin::OnSubchannelStateChange(LbSubchannel* subchannel) {
  OnConnectAllSubchannelChange(subchannel, helper_, &last_error_);
  ReportState();
}

void RoundRobin::ReportState() {
  ready_.clear();
  for (const SubchannelPtr& subchannel : subchannels_) {
    if (subchannel->state() == ConnectivityState::kReady) {
      ready_.push_back(subchannel.get());
    }
  }
  ReportConnectAllState(subchannels_, !ready_.empty(), idle_, last_error_,
                        helper_);
}

}  // namespace h2rpc::internal
