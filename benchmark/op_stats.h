#ifndef H2RPC_BENCHMARK_OP_STATS_H_
#define H2RPC_BENCHMARK_OP_STATS_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "benchmark/latency_histogram.h"

namespace h2rpc::benchmark {

// What a benchmark client counts, from any thread: completed round trips
// with their latency (unary and ping-pong), messages sent and received
// (unconstrained streaming), and failures.
class OpStats {
 public:
  // A request sent and its response received, `latency` apart.
  void RecordRoundTrip(absl::Duration latency) {
    std::lock_guard<std::mutex> lock(mu_);
    histogram_.Record(latency);
  }
  void CountSend() { sends_.fetch_add(1, std::memory_order_relaxed); }
  void CountRecv() { recvs_.fetch_add(1, std::memory_order_relaxed); }
  // A failed call or stream; the first message is kept for the report.
  void RecordError(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (errors_++ == 0) first_error_ = what;
  }

  struct Snapshot {
    LatencyHistogram histogram;
    int64_t sends = 0;
    int64_t recvs = 0;
    int64_t errors = 0;
    std::string first_error;
  };
  Snapshot Take() {
    Snapshot s;
    std::lock_guard<std::mutex> lock(mu_);
    s.histogram = histogram_;
    s.sends = sends_.load(std::memory_order_relaxed);
    s.recvs = recvs_.load(std::memory_order_relaxed);
    s.errors = errors_;
    s.first_error = first_error_;
    return s;
  }
  // Forgets the operations counted so far (the end of the warm-up). Errors
  // are kept: a call that failed while warming up is still a failure.
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    histogram_.Clear();
    sends_.store(0, std::memory_order_relaxed);
    recvs_.store(0, std::memory_order_relaxed);
  }

 private:
  std::mutex mu_;
  LatencyHistogram histogram_;  // guarded by mu_
  int64_t errors_ = 0;          // guarded by mu_
  std::string first_error_;     // guarded by mu_
  std::atomic<int64_t> sends_{0};
  std::atomic<int64_t> recvs_{0};
};

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_OP_STATS_H_
