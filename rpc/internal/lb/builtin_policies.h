#ifndef H2RPC_RPC_INTERNAL_LB_BUILTIN_POLICIES_H_
#define H2RPC_RPC_INTERNAL_LB_BUILTIN_POLICIES_H_

#include <memory>

#include "absl/strings/string_view.h"
#include "rpc/load_balancing.h"

namespace h2rpc::internal {

// The names of h2rpc's own policies, for messages.
inline constexpr char kBuiltinLbPolicyNames[] =
    "pick_first, round_robin, weighted_round_robin, "
    "outlier_detection_experimental";

// The factory of h2rpc's own policy `name`: "pick_first" (its config's
// shuffleAddressList), "round_robin", "weighted_round_robin" (gRPC's A58)
// or "outlier_detection_experimental" (A50); null for any other name. Any
// thread; the factories live as long as the process.
std::shared_ptr<LbPolicyFactory> BuiltinLbPolicyFactory(absl::string_view name);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_BUILTIN_POLICIES_H_
