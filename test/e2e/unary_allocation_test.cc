// Heap allocations per unary RPC once warm, counted (not timed) on each side.
// Empty messages keep protobuf's own allocations out of the figure, so what is
// left is the transport's: h2rpc's goal is (close to) none.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"

namespace h2rpc {
namespace {

using grpc::testing::Empty;
using testing::AllocationsByRole;
using testing::ThreadRole;

constexpr char kSync[] = "/h2rpc.test.Alloc/Sync";
constexpr char kCallback[] = "/h2rpc.test.Alloc/Callback";

struct PerRpc {
  double client;
  double server;
};

class UnaryAllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 1;
    options.num_workers = 1;
    Status status;
    server_ =
        Server::Builder()
            .SetOptions(options)
            .AddListeningPort("127.0.0.1:0", &port_)
            .RegisterUnary<Empty, Empty>(kSync, [](ServerContext*, const Empty&,
                                                   Empty*) { return Status(); })
            .RegisterCallbackUnary<Empty, Empty>(
                kCallback, [](ServerContext*, const Empty*, Empty*,
                              UnaryDone done) { done(Status()); })
            .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = std::make_unique<Channel>("127.0.0.1:" + std::to_string(port_));
  }

  // Blocking calls from this thread: its allocations count as the client's.
  PerRpc Measure(const char* method, int warmup, int calls) {
    Empty request, response;
    for (int i = 0; i < warmup; ++i) Call(method, request, &response);
    const auto client0 = AllocationsByRole(ThreadRole::kClient);
    const auto other0 = AllocationsByRole(ThreadRole::kOther);
    const auto server0 = AllocationsByRole(ThreadRole::kServer);
    for (int i = 0; i < calls; ++i) Call(method, request, &response);
    const auto client1 = AllocationsByRole(ThreadRole::kClient);
    const auto other1 = AllocationsByRole(ThreadRole::kOther);
    const auto server1 = AllocationsByRole(ThreadRole::kServer);
    return {
        static_cast<double>(client1.allocations - client0.allocations +
                            other1.allocations - other0.allocations) /
            calls,
        static_cast<double>(server1.allocations - server0.allocations) / calls};
  }

  void Call(const char* method, const Empty& request, Empty* response) {
    ClientContext context;
    const Status status =
        channel_->UnaryCall(&context, method, request, response);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Channel> channel_;
};

TEST_F(UnaryAllocationTest, WarmCallbackCallsDoNotAllocate) {
  const PerRpc per_rpc = Measure(kCallback, 200, 1000);
  EXPECT_EQ(per_rpc.client, 0.0);
  EXPECT_EQ(per_rpc.server, 0.0);
}

TEST_F(UnaryAllocationTest, WarmSyncCallsDoNotAllocate) {
  const PerRpc per_rpc = Measure(kSync, 200, 1000);
  EXPECT_EQ(per_rpc.client, 0.0);
  EXPECT_EQ(per_rpc.server, 0.0);
}

}  // namespace
}  // namespace h2rpc
