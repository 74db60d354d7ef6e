#ifndef H2RPC_BENCHMARK_THREAD_CPU_H_
#define H2RPC_BENCHMARK_THREAD_CPU_H_

#include <cstdint>
#include <map>
#include <vector>

#include "test/util/allocation_counter.h"

namespace h2rpc::benchmark {

// CPU time (user + system, nanoseconds) of this process's threads, by the
// role their name gives them (as for allocations, see
// test/util/allocation_counter.h: h2rpc-channel* client, h2rpc-server* and
// h2rpc-worker* server; here "bench-*" and the main thread too are kOther,
// the harness; any other thread `default_role`), from
// /proc/self/task/*/stat.
// Per-thread figures let a later snapshot count only what each thread spent
// since the earlier one; threads that exit in between are lost.
class ThreadCpuSnapshot {
 public:
  static ThreadCpuSnapshot Take(::h2rpc::testing::ThreadRole default_role);
  // CPU nanoseconds of `role`'s threads between `earlier` and this snapshot.
  int64_t RoleNanosSince(const ThreadCpuSnapshot& earlier,
                         ::h2rpc::testing::ThreadRole role) const;

 private:
  struct ThreadCpu {
    ::h2rpc::testing::ThreadRole role;
    int64_t nanos;
  };
  std::map<int, ThreadCpu> threads_;  // by tid
};

// CPU time of the whole calling process so far (all threads, live or not).
int64_t ProcessCpuNanos();

// CPU time (nanoseconds on a CPU, /proc/PID/task/*/schedstat) of the live
// threads of other processes, summed; a process that is gone counts 0.
int64_t OtherProcessesCpuNanos(const std::vector<int>& pids);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_THREAD_CPU_H_
