// The gRPC C++ benchmark stack: every workload against its own server and
// across stacks (h2rpc client to gRPC C++ server and the reverse), briefly.
#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "benchmark/bench_stack.h"
#include "benchmark/brief_run.h"
#include "gtest/gtest.h"
#include "test/util/wait_for.h"

namespace h2rpc::benchmark {
namespace {

enum class Stack { kH2rpc, kGrpcpp };

std::unique_ptr<BenchServer> StartServer(Stack stack,
                                         const ServerConfig& config) {
  std::string error;
  std::unique_ptr<BenchServer> server = stack == Stack::kGrpcpp
                                            ? StartGrpcppServer(config, &error)
                                            : StartH2rpcServer(config, &error);
  EXPECT_NE(server, nullptr) << error;
  return server;
}

std::unique_ptr<BenchClient> NewClient(Stack stack, const ClientConfig& config,
                                       OpStats* stats) {
  return stack == Stack::kGrpcpp ? NewGrpcppClient(config, stats)
                                 : NewH2rpcClient(config, stats);
}

// Runs `config` briefly and checks that operations completed without
// errors.
void RunBriefly(Stack client_stack, const ClientConfig& config) {
  OpStats stats;
  std::unique_ptr<BenchClient> client = NewClient(client_stack, config, &stats);
  const OpStats::Snapshot result =
      RunClientBriefly(client.get(), &stats, absl::Milliseconds(300));
  client.reset();
  EXPECT_EQ(result.errors, 0) << result.first_error;
  if (config.workload == Workload::kUnconstrained) {
    EXPECT_GT(result.sends, 0);
    EXPECT_GT(result.recvs, 0);
    EXPECT_EQ(result.histogram.count(), 0);
  } else if (config.workload == Workload::kStreamingFromServer) {
    EXPECT_EQ(result.sends, 0);
    EXPECT_GT(result.recvs, 0);
    EXPECT_EQ(result.histogram.count(), 0);
  } else {
    EXPECT_GT(result.histogram.count(), 0);
    EXPECT_EQ(result.sends, 0);
  }
}

void RunAllWorkloads(Stack client_stack, Stack server_stack) {
  std::unique_ptr<BenchServer> server =
      StartServer(server_stack, ServerConfig());
  ASSERT_NE(server, nullptr);
  for (Workload workload :
       {Workload::kUnary, Workload::kStreaming, Workload::kUnconstrained,
        Workload::kStreamingFromServer}) {
    SCOPED_TRACE(static_cast<int>(workload));
    RunBriefly(client_stack, BriefConfig(server->port(), workload));
  }
}

TEST(GrpcppStackTest, GrpcppClientToGrpcppServer) {
  RunAllWorkloads(Stack::kGrpcpp, Stack::kGrpcpp);
}

TEST(GrpcppStackTest, H2rpcClientToGrpcppServer) {
  RunAllWorkloads(Stack::kH2rpc, Stack::kGrpcpp);
}

TEST(GrpcppStackTest, GrpcppClientToH2rpcServer) {
  RunAllWorkloads(Stack::kGrpcpp, Stack::kH2rpc);
}

TEST(GrpcppStackTest, CompressionBothWays) {
  for (CompressionAlgorithm compression :
       {CompressionAlgorithm::kGzip, CompressionAlgorithm::kDeflate}) {
    ServerConfig server_config;
    server_config.compression = compression;
    std::unique_ptr<BenchServer> server =
        StartServer(Stack::kGrpcpp, server_config);
    ASSERT_NE(server, nullptr);
    for (Stack client_stack : {Stack::kGrpcpp, Stack::kH2rpc}) {
      ClientConfig config = BriefConfig(server->port(), Workload::kStreaming);
      config.compression = compression;
      RunBriefly(client_stack, config);
    }
  }
}

// Both sides pinned to a CPU this process may use: one queue each.
TEST(GrpcppStackTest, PinnedThreads) {
  cpu_set_t allowed;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed),
            0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);

  ServerConfig server_config;
  server_config.cpus = {cpu};
  std::unique_ptr<BenchServer> server =
      StartServer(Stack::kGrpcpp, server_config);
  ASSERT_NE(server, nullptr);
  // The caller's affinity is restored.
  cpu_set_t after;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&allowed, &after));

  ClientConfig config = BriefConfig(server->port(), Workload::kUnary);
  config.cpus = {cpu};
  RunBriefly(Stack::kGrpcpp, config);
}

TEST(GrpcppStackTest, UnusableCpuIsAnError) {
  ServerConfig config;
  config.cpus = {CPU_SETSIZE - 1};
  std::string error;
  EXPECT_EQ(StartGrpcppServer(config, &error), nullptr);
  EXPECT_NE(error, "");
}

// A client destroyed without Stop() stops first; one never started too.
TEST(GrpcppStackTest, DestroyWithoutStop) {
  std::unique_ptr<BenchServer> server =
      StartServer(Stack::kGrpcpp, ServerConfig());
  ASSERT_NE(server, nullptr);
  for (Workload workload :
       {Workload::kUnary, Workload::kStreaming, Workload::kUnconstrained,
        Workload::kStreamingFromServer}) {
    OpStats stats;
    std::unique_ptr<BenchClient> client =
        NewGrpcppClient(BriefConfig(server->port(), workload), &stats);
    client->Start();
    // Destroyed running: operations complete, and more are in flight.
    ASSERT_TRUE(h2rpc::testing::WaitFor([&] { return Ops(&stats) > 0; }));
    client.reset();
    EXPECT_EQ(stats.Take().errors, 0);
  }
  OpStats stats;
  NewGrpcppClient(BriefConfig(server->port(), Workload::kUnary), &stats)
      .reset();
}

}  // namespace
}  // namespace h2rpc::benchmark
