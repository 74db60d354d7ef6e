#include "benchmark/h2rpc/load_reporter.h"

#include <sys/resource.h>

#include <cstdint>
#include <deque>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace h2rpc::benchmark {
namespace {

constexpr absl::Duration kTick = absl::Milliseconds(100);
constexpr absl::Duration kWindow = absl::Seconds(1);

// User and system CPU time of the process.
absl::Duration ProcessCpu() {
  rusage usage = {};
  getrusage(RUSAGE_SELF, &usage);
  return absl::DurationFromTimeval(usage.ru_utime) +
         absl::DurationFromTimeval(usage.ru_stime);
}

struct Sample {
  absl::Time when;
  absl::Duration cpu;
  int64_t requests;
  int64_t busy_nanos;
};

}  // namespace

LoadReporter::LoadReporter(const RequestCounter* requests,
                           const std::atomic<int64_t>* busy_nanos)
    : requests_(requests),
      busy_nanos_(busy_nanos),
      thread_([this] { Run(); }) {}

LoadReporter::~LoadReporter() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    stop_requested_.SignalAll();
  }
  thread_.join();
}

void LoadReporter::Run() {
  std::deque<Sample> samples;
  for (;;) {
    {
      MutexLock lock(&mu_);
      // A pacing wait: the figures are sampled every tick.
      const absl::Time until = absl::Now() + kTick;
      while (!stopping_ && absl::Now() < until) {
        stop_requested_.WaitWithTimeout(&mu_, until - absl::Now());
      }
      if (stopping_) return;
    }
    samples.push_back(Sample{absl::Now(), ProcessCpu(), requests_->Get(),
                             busy_nanos_->load(std::memory_order_relaxed)});
    while (samples.size() > 1 &&
           samples.back().when - samples.front().when > kWindow) {
      samples.pop_front();
    }
    if (samples.size() < 2) continue;
    const Sample& first = samples.front();
    const Sample& last = samples.back();
    const double seconds = absl::ToDoubleSeconds(last.when - first.when);
    metrics_.SetQps((last.requests - first.requests) / seconds);
    metrics_.SetCpuUtilization(absl::ToDoubleSeconds(last.cpu - first.cpu) /
                               seconds);
    metrics_.SetApplicationUtilization((last.busy_nanos - first.busy_nanos) /
                                       1e9 / seconds);
  }
}

}  // namespace h2rpc::benchmark
