#ifndef H2RPC_BENCHMARK_CPU_AFFINITY_H_
#define H2RPC_BENCHMARK_CPU_AFFINITY_H_

#include <sched.h>

#include <string>
#include <vector>

namespace h2rpc::benchmark {

// Pins the calling thread to `cpus` (any of them); empty: does nothing.
// Returns an error naming the CPUs, or empty on success. Any thread; no
// allocation on success.
std::string PinThisThread(const std::vector<int>& cpus);

// Sets the calling thread's CPU affinity to `cpus` for its lifetime, so that
// threads a library creates meanwhile inherit it; restores the previous
// affinity. Does nothing when `cpus` is empty.
class ScopedAffinity {
 public:
  explicit ScopedAffinity(const std::vector<int>& cpus);
  ~ScopedAffinity();
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;

  // Empty on success.
  const std::string& error() const { return error_; }

 private:
  cpu_set_t saved_;
  bool restore_ = false;
  std::string error_;
};

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_CPU_AFFINITY_H_
