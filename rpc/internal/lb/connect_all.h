#ifndef H2RPC_RPC_INTERNAL_LB_CONNECT_ALL_H_
#define H2RPC_RPC_INTERNAL_LB_CONNECT_ALL_H_

#include <vector>

#include "rpc/load_balancing.h"
#include "rpc/status.h"

namespace h2rpc::internal {

// The rules round_robin and weighted_round_robin share as policies that
// keep a connection to every address. Loop thread only.

// Replaces `*subchannels` with one per address, in address order: the
// subchannel an address already had is kept; a new one is made with
// `helper` (and started connecting unless `idle`, `observer` set as its
// call observer when not null); those of addresses no longer listed are
// orphaned. One hash lookup per address.
void UpdateConnectAllSubchannels(const std::vector<ResolvedAddress>& addresses,
                                 LbPolicy::Helper* helper, bool idle,
                                 LbCallObserver* observer,
                                 std::vector<SubchannelPtr>* subchannels);

// A subchannel changed state: one whose connection ended (IDLE) reconnects
// at once; it, and one whose attempt failed (TRANSIENT_FAILURE, recorded
// in `*last_error`), may have a stale address, so the target is resolved
// again.
void OnConnectAllSubchannelChange(LbSubchannel* subchannel,
                                  LbPolicy::Helper* helper, Status* last_error);

// Reports the policy's state: READY when `any_ready`, else IDLE while the
// policy is `idle`, else CONNECTING while a subchannel connects (or is
// IDLE, about to), else TRANSIENT_FAILURE with `last_error`.
void ReportConnectAllState(const std::vector<SubchannelPtr>& subchannels,
                           bool any_ready, bool idle, const Status& last_error,
                           LbPolicy::Helper* helper);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_CONNECT_ALL_H_
