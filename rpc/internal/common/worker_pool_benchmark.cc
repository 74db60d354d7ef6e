// Benchmarks of WorkerPool's hand-off: one task at a time, from TrySubmit()
// to its Done(), with the pool's thread polling for the next task after each
// one (a pool that may run on more than one CPU) or sleeping at once (a pool
// confined to one CPU, as a server pinned to one core has). "cpu_ns/task"
// is the whole process's CPU time per task, polling included; the
// benchmark's own time is wall time. main() comes from the benchmark main
// library.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "rpc/internal/common/worker_pool.h"

namespace h2rpc::internal {
namespace {

class FlagTask final : public WorkerTask {
 public:
  void Run() override {}
  void Done() override { done_.store(true, std::memory_order_release); }
  bool done() const { return done_.load(std::memory_order_acquire); }
  void Reset() { done_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool> done_{false};
};

int64_t ProcessCpuNanos() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

bool SetThisThreadsCpus(const cpu_set_t& set) {
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// range(0): 1 = the pool and the submitter may use every CPU of this
// thread's (the pool's thread polls), 0 = both are confined to one of them
// (it sleeps at once).
// range(1): microseconds the submitter waits after each task before the
// next: 0 (a steady stream of tasks) or 50 (each poll runs out).
void BM_WorkerPoolHandOff(benchmark::State& state) {
  const bool poll = state.range(0) != 0;
  const absl::Duration pause = absl::Microseconds(state.range(1));
  cpu_set_t own;
  if (pthread_getaffinity_np(pthread_self(), sizeof(own), &own) != 0) {
    state.SkipWithError("cannot read this thread's CPUs");
    return;
  }
  if (poll && CPU_COUNT(&own) < 2) {
    state.SkipWithError("needs two CPUs");
    return;
  }
  // One CPU of this thread's for the confined case.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &own)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  std::unique_ptr<WorkerPool> pool;
  bool confined = true;
  std::thread owner([&] {
    if (!poll) confined = SetThisThreadsCpus(one);
    pool = std::make_unique<WorkerPool>(1, 1, absl::InfiniteDuration());
  });
  owner.join();
  if (!poll && !(confined && SetThisThreadsCpus(one))) {
    state.SkipWithError("cannot confine this thread to one CPU");
    return;
  }
  FlagTask task;
  const int64_t cpu_start = ProcessCpuNanos();
  for (auto _ : state) {
    task.Reset();
    if (!pool->TrySubmit(&task).ok()) {
      state.SkipWithError("refused");
      break;
    }
    while (!task.done()) std::this_thread::yield();
    if (pause > absl::ZeroDuration()) {
      const absl::Time until = absl::Now() + pause;
      while (absl::Now() < until) {
      }
    }
  }
  state.counters["cpu_ns/task"] =
      benchmark::Counter(static_cast<double>(ProcessCpuNanos() - cpu_start),
                         benchmark::Counter::kAvgIterations);
  pool.reset();
  if (!poll && !SetThisThreadsCpus(own)) {
    state.SkipWithError("cannot give this thread its CPUs back");
  }
}
BENCHMARK(BM_WorkerPoolHandOff)
    ->ArgNames({"poll", "pause_us"})
    ->Args({1, 0})
    ->Args({0, 0})
    ->Args({1, 50})
    ->Args({0, 50})
    ->UseRealTime();

}  // namespace
}  // namespace h2rpc::internal
