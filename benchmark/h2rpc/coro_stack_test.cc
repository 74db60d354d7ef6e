// The coroutine benchmark stack (h2rpc_coro): every workload briefly, its
// client against its own server, against h2rpc's callback server and gRPC
// C++'s, and h2rpc's callback client against its server.
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "benchmark/bench_stack.h"
#include "benchmark/brief_run.h"
#include "gtest/gtest.h"

namespace h2rpc::benchmark {
namespace {

enum class Stack { kCoro, kCallback, kGrpcpp };

std::unique_ptr<BenchServer> StartServer(Stack stack) {
  std::string error;
  std::unique_ptr<BenchServer> server;
  switch (stack) {
    case Stack::kCoro:
      server = StartH2rpcCoroServer(ServerConfig(), &error);
      break;
    case Stack::kCallback:
      server = StartH2rpcServer(ServerConfig(), &error);
      break;
    case Stack::kGrpcpp:
      server = StartGrpcppServer(ServerConfig(), &error);
      break;
  }
  EXPECT_NE(server, nullptr) << error;
  return server;
}

// Runs every workload briefly and checks that operations completed without
// errors.
void RunAllWorkloads(Stack client_stack, Stack server_stack) {
  std::unique_ptr<BenchServer> server = StartServer(server_stack);
  ASSERT_NE(server, nullptr);
  for (Workload workload :
       {Workload::kUnary, Workload::kStreaming, Workload::kUnconstrained,
        Workload::kStreamingFromServer}) {
    SCOPED_TRACE(static_cast<int>(workload));
    const ClientConfig config = BriefConfig(server->port(), workload);
    OpStats stats;
    std::unique_ptr<BenchClient> client =
        client_stack == Stack::kCoro ? NewH2rpcCoroClient(config, &stats)
                                     : NewH2rpcClient(config, &stats);
    const OpStats::Snapshot result =
        RunClientBriefly(client.get(), &stats, absl::Milliseconds(300));
    client.reset();
    EXPECT_EQ(result.errors, 0) << result.first_error;
    if (workload == Workload::kUnconstrained) {
      EXPECT_GT(result.sends, 0);
      EXPECT_GT(result.recvs, 0);
    } else if (workload == Workload::kStreamingFromServer) {
      EXPECT_GT(result.recvs, 0);
    } else {
      EXPECT_GT(result.histogram.count(), 0);
    }
  }
  // Every request the clients sent reached the server's handlers.
  EXPECT_GT(server->requests(), 0);
}

TEST(CoroStackTest, CoroClientToCoroServer) {
  RunAllWorkloads(Stack::kCoro, Stack::kCoro);
}

TEST(CoroStackTest, CoroClientToCallbackServer) {
  RunAllWorkloads(Stack::kCoro, Stack::kCallback);
}

TEST(CoroStackTest, CallbackClientToCoroServer) {
  RunAllWorkloads(Stack::kCallback, Stack::kCoro);
}

TEST(CoroStackTest, CoroClientToGrpcppServer) {
  RunAllWorkloads(Stack::kCoro, Stack::kGrpcpp);
}

}  // namespace
}  // namespace h2rpc::benchmark
