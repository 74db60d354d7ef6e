#include "rpc/internal/lb/connect_all.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace h2rpc::internal {

void UpdateConnectAllSubchannels(const std::vector<ResolvedAddress>& addresses,
                                 LbPolicy::Helper* helper, bool idle,
                                 LbCallObserver* observer,
                                 std::vector<SubchannelPtr>* subchannels) {
  absl::flat_hash_map<std::string, SubchannelPtr> old;
  for (SubchannelPtr& subchannel : *subchannels) {
    std::string key = subchannel->address().address;
    old.emplace(std::move(key), std::move(subchannel));
  }
  subchannels->clear();
  for (const ResolvedAddress& address : addresses) {
    auto it = old.find(address.address);
    if (it != old.end()) {
      subchannels->push_back(std::move(it->second));
      old.erase(it);
      continue;
    }
    SubchannelPtr subchannel = helper->CreateSubchannel(address);
    if (observer != nullptr) subchannel->set_call_observer(observer);
    if (!idle) subchannel->RequestConnection();
    subchannels->push_back(std::move(subchannel));
  }
  // `old` goes: the subchannels of addresses no longer listed are orphaned.
}

void OnConnectAllSubchannelChange(LbSubchannel* subchannel,
                                  LbPolicy::Helper* helper,
                                  Status* last_error) {
  switch (subchannel->state()) {
    case ConnectivityState::kIdle:
      helper->RequestReresolution();
      subchannel->RequestConnection();
      break;
    case ConnectivityState::kTransientFailure:
      *last_error = subchannel->last_error();
      helper->RequestReresolution();
      break;
    default:
      break;
  }
}

void ReportConnectAllState(const std::vector<SubchannelPtr>& subchannels,
                           bool any_ready, bool idle, const Status& last_error,
                           LbPolicy::Helper* helper) {
  bool connecting = false;
  for (const SubchannelPtr& subchannel : subchannels) {
    const ConnectivityState state = subchannel->state();
    connecting = connecting || state == ConnectivityState::kConnecting ||
                 state == ConnectivityState::kIdle;
  }
  if (any_ready) {
    helper->UpdateState(ConnectivityState::kReady, Status());
  } else if (idle) {
    helper->UpdateState(ConnectivityState::kIdle, Status());
  } else if (connecting) {
    helper->UpdateState(ConnectivityState::kConnecting, Status());
  } else {
    helper->UpdateState(ConnectivityState::kTransientFailure, last_error);
  }
}

}  // namespace h2rpc::internal
