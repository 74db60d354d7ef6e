#ifndef H2RPC_BENCHMARK_H2RPC_LOAD_REPORTER_H_
#define H2RPC_BENCHMARK_H2RPC_LOAD_REPORTER_H_

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "benchmark/bench_stack.h"
#include "rpc/orca.h"
#include "rpc/server_context.h"

namespace h2rpc::benchmark {

// A benchmark server's ORCA load reports (--orca): every 100 ms, a thread
// of its own measures, over the last second, the requests served per
// second, the process's CPU utilization (user and system time over wall
// time) and the application utilization (the share of the time the
// handlers held the loop, --server_work_us), and each unary call's
// trailers carry the latest figures (OrcaServerMetrics::AttachTo).
class LoadReporter {
 public:
  // `busy_nanos`: the handlers' busy time so far; outlives the reporter.
  LoadReporter(const RequestCounter* requests,
               const std::atomic<int64_t>* busy_nanos);
  // Stops the thread.
  ~LoadReporter();
  LoadReporter(const LoadReporter&) = delete;
  LoadReporter& operator=(const LoadReporter&) = delete;

  // Any thread.
  void AttachTo(ServerContext* context) const { metrics_.AttachTo(context); }

 private:
  void Run();

  const RequestCounter* const requests_;
  const std::atomic<int64_t>* const busy_nanos_;
  OrcaServerMetrics metrics_;
  Mutex mu_;
  CondVar stop_requested_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_H2RPC_LOAD_REPORTER_H_
