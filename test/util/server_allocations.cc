#include "test/util/server_allocations.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::testing {

double ServerAllocationsPerCall(RawH2Client* client, const RawRequest& request,
                                int calls) {
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(client->Call(request).Header(":status"), "200");
  }
  const int64_t before = AllocationsByRole(ThreadRole::kServer).allocations;
  for (int i = 0; i < calls; ++i) {
    EXPECT_TRUE(client->Call(request).end_stream_received);
  }
  const int64_t after = AllocationsByRole(ThreadRole::kServer).allocations;
  return static_cast<double>(after - before) / calls;
}

}  // namespace h2rpc::testing
