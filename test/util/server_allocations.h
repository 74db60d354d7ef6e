#ifndef H2RPC_TEST_UTIL_SERVER_ALLOCATIONS_H_
#define H2RPC_TEST_UTIL_SERVER_ALLOCATIONS_H_

#include "test/util/raw_h2_client.h"

namespace h2rpc::testing {

// The server's heap allocations per call (allocation_counter.h,
// ThreadRole::kServer) of `request` sent `calls` times on `client`, after
// 50 warm-up calls that must each answer HTTP 200 (checked with gtest).
double ServerAllocationsPerCall(RawH2Client* client, const RawRequest& request,
                                int calls);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_SERVER_ALLOCATIONS_H_
