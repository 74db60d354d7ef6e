// The h2rpc server with synchronous handlers ("h2rpc_sync"): every workload
// from both clients, briefly, and its worker threads' pinning.
#include <dirent.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/bench_stack.h"
#include "benchmark/brief_run.h"
#include "gtest/gtest.h"

namespace h2rpc::benchmark {
namespace {

std::unique_ptr<BenchServer> StartSyncServer(const ServerConfig& config) {
  std::string error;
  std::unique_ptr<BenchServer> server = StartH2rpcSyncServer(config, &error);
  EXPECT_NE(server, nullptr) << error;
  return server;
}

// Runs `config` briefly and checks that operations completed without
// errors and that the server counted the requests.
void RunBriefly(bool grpcpp_client, const ClientConfig& config,
                BenchServer* server) {
  const int64_t requests_before = server->requests();
  OpStats stats;
  std::unique_ptr<BenchClient> client = grpcpp_client
                                            ? NewGrpcppClient(config, &stats)
                                            : NewH2rpcClient(config, &stats);
  const OpStats::Snapshot result =
      RunClientBriefly(client.get(), &stats, absl::Milliseconds(200));
  client.reset();
  EXPECT_EQ(result.errors, 0) << result.first_error;
  if (config.workload == Workload::kUnconstrained) {
    EXPECT_GT(result.sends, 0);
    EXPECT_GT(result.recvs, 0);
    // Messages still in flight when the client stops never reach the
    // server: it counted some, not necessarily all.
    EXPECT_GT(server->requests() - requests_before, 0);
  } else if (config.workload == Workload::kStreamingFromServer) {
    EXPECT_GT(result.recvs, 0);
    // One request per stream.
    EXPECT_EQ(server->requests() - requests_before, config.concurrency);
  } else {
    EXPECT_GT(result.histogram.count(), 0);
    EXPECT_GE(server->requests() - requests_before, result.histogram.count());
  }
}

void RunAllWorkloads(bool grpcpp_client) {
  std::unique_ptr<BenchServer> server = StartSyncServer(ServerConfig());
  ASSERT_NE(server, nullptr);
  for (Workload workload :
       {Workload::kUnary, Workload::kStreaming, Workload::kUnconstrained,
        Workload::kStreamingFromServer}) {
    SCOPED_TRACE(static_cast<int>(workload));
    RunBriefly(grpcpp_client, BriefConfig(server->port(), workload),
               server.get());
  }
}

TEST(H2rpcSyncStackTest, H2rpcClient) { RunAllWorkloads(false); }

TEST(H2rpcSyncStackTest, GrpcppClient) { RunAllWorkloads(true); }

TEST(H2rpcSyncStackTest, Handshake) {
  std::unique_ptr<BenchServer> server = StartSyncServer(ServerConfig());
  ASSERT_NE(server, nullptr);
  ClientConfig config = BriefConfig(server->port(), Workload::kHandshake);
  config.concurrency = 2;
  RunBriefly(false, config, server.get());
}

// The CPU sets of this process's threads whose name starts with `prefix`.
std::vector<cpu_set_t> AffinitiesOf(const std::string& prefix) {
  std::vector<cpu_set_t> sets;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return sets;
  while (dirent* entry = readdir(dir)) {
    const int tid = std::atoi(entry->d_name);
    if (tid <= 0) continue;
    std::ifstream comm(absl::StrCat("/proc/self/task/", tid, "/comm"));
    std::string name;
    std::getline(comm, name);
    if (!absl::StartsWith(name, prefix)) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(tid, sizeof(set), &set) == 0) sets.push_back(set);
  }
  closedir(dir);
  return sets;
}

// The server's CPUs hold every worker thread, those it starts with and those
// it starts on demand; the caller's affinity is restored.
TEST(H2rpcSyncStackTest, WorkersPinnedToServerCpus) {
  cpu_set_t allowed;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed),
            0);
  ServerConfig server_config;
  cpu_set_t expected;
  CPU_ZERO(&expected);
  for (int cpu = 0; cpu < CPU_SETSIZE && server_config.cpus.size() < 2; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    server_config.cpus.push_back(cpu);
    CPU_SET(cpu, &expected);
  }
  ASSERT_FALSE(server_config.cpus.empty());
  std::unique_ptr<BenchServer> server = StartSyncServer(server_config);
  ASSERT_NE(server, nullptr);
  cpu_set_t after;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&allowed, &after));

  // Each stream holds a worker: more streams than the server starts workers
  // with (ServerOptions::min_sync_threads' default, 2 per core) make it
  // start the others on demand, from a loop thread pinned to one CPU.
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  ClientConfig config = BriefConfig(server->port(), Workload::kStreaming);
  config.concurrency = std::min(2 * std::max(cores, 2) + 8, 250);
  RunBriefly(false, config, server.get());

  const std::vector<cpu_set_t> workers = AffinitiesOf("h2rpc-worker");
  EXPECT_GE(workers.size(), static_cast<size_t>(config.concurrency));
  for (const cpu_set_t& set : workers) {
    EXPECT_TRUE(CPU_EQUAL(&set, &expected))
        << CPU_COUNT(&set) << " CPUs, expected " << CPU_COUNT(&expected);
  }
}

TEST(H2rpcSyncStackTest, UnusableCpuIsAnError) {
  ServerConfig config;
  config.cpus = {CPU_SETSIZE - 1};
  std::string error;
  EXPECT_EQ(StartH2rpcSyncServer(config, &error), nullptr);
  EXPECT_NE(error, "");
}

}  // namespace
}  // namespace h2rpc::benchmark
