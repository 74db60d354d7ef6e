#include "rpc/internal/lb/connect_all.h"

namespace h2rpc::internal {

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
