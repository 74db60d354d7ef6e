#ifndef H2RPC_BENCHMARK_GRPCPP_COMMON_H_
#define H2RPC_BENCHMARK_GRPCPP_COMMON_H_

// What the gRPC C++ benchmark client and server share: the compression
// setting in gRPC's terms and the polling threads' start.

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/cpu_affinity.h"
#include "grpcpp/grpcpp.h"
#include "rpc/compression.h"

namespace h2rpc::benchmark {

inline grpc_compression_algorithm ToGrpc(CompressionAlgorithm algorithm) {
  switch (algorithm) {
    case CompressionAlgorithm::kIdentity:
      return GRPC_COMPRESS_NONE;
    case CompressionAlgorithm::kDeflate:
      return GRPC_COMPRESS_DEFLATE;
    case CompressionAlgorithm::kGzip:
      return GRPC_COMPRESS_GZIP;
  }
  return GRPC_COMPRESS_NONE;
}

// Starts `body` on a new thread that first pins itself to `cpu` (-1: not
// pinned). Returns once the thread is pinned; if it cannot be, the thread
// exits without running `body` and an error is returned (empty on success).
template <typename Body>
std::string StartPinnedThread(int cpu, const char* role, Body body,
                              std::vector<std::thread>* threads) {
  struct Started {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::string error;
  } started;
  threads->emplace_back([cpu, &started, body = std::move(body)]() mutable {
    std::string error =
        cpu >= 0 ? PinThisThread(std::vector<int>{cpu}) : std::string();
    const bool pinned = error.empty();
    {
      // `started` is gone once the starter has seen `done`.
      std::lock_guard<std::mutex> lock(started.mu);
      started.error = std::move(error);
      started.done = true;
      started.cv.notify_one();
    }
    if (pinned) body();
  });
  std::unique_lock<std::mutex> lock(started.mu);
  started.cv.wait(lock, [&started] { return started.done; });
  if (started.error.empty()) return std::string();
  return absl::StrCat("gRPC C++ ", role,
                      " completion queue thread: ", started.error);
}

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_GRPCPP_COMMON_H_
