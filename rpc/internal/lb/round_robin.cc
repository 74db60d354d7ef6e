#include "rpc/internal/lb/round_robin.h"

#include <utility>

namespace h2rpc::internal {

void RoundRobin::UpdateAddresses(
    const std::vector<ResolvedAddress>& addresses) {
  std::vector<SubchannelPtr> old = std::move(subchannels_);
  subchannels_.clear();
  for (const ResolvedAddress& address : addresses) {
    SubchannelPtr subchannel;
    for (SubchannelPtr& candidate : old) {
      if (candidate != nullptr &&
          candidate->address().address == address.address) {
        subchannel = std::move(candidate);
        break;
      }
    }
    if (subchannel == nullptr) {
      subchannel = helper_->CreateSubchannel(address);
      if (!idle_) subchannel->RequestConnection();
    }
    subchannels_.push_back(std::move(subchannel));
  }
  old.clear();  // orphans the subchannels of addresses no longer listed
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
  switch (subchannel->state()) {
    case ConnectivityState::kIdle:
      // A connection ended: the address may be stale; reconnect at once.
      helper_->RequestReresolution();
      subchannel->RequestConnection();
      break;
    case ConnectivityState::kTransientFailure:
      last_error_ = subchannel->last_error();
      helper_->RequestReresolution();
      break;
    default:
      break;
  }
  ReportState();
}

void RoundRobin::ReportState() {
  ready_.clear();
  bool connecting = false;
  for (const SubchannelPtr& subchannel : subchannels_) {
    switch (subchannel->state()) {
      case ConnectivityState::kReady:
        ready_.push_back(subchannel.get());
        break;
      case ConnectivityState::kConnecting:
      case ConnectivityState::kIdle:
        connecting = true;
        break;
      default:
        break;
    }
  }
  if (!ready_.empty()) {
    helper_->UpdateState(ConnectivityState::kReady, Status());
  } else if (idle_) {
    helper_->UpdateState(ConnectivityState::kIdle, Status());
  } else if (connecting) {
    helper_->UpdateState(ConnectivityState::kConnecting, Status());
  } else {
    helper_->UpdateState(ConnectivityState::kTransientFailure, last_error_);
  }
}

}  // namespace h2rpc::internal
