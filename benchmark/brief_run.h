#ifndef H2RPC_BENCHMARK_BRIEF_RUN_H_
#define H2RPC_BENCHMARK_BRIEF_RUN_H_

// Brief benchmark runs for the stacks' tests: a small client configuration
// and a run that lasts until operations have completed.

#include <cstdint>

#include "absl/time/time.h"
#include "benchmark/bench_stack.h"

namespace h2rpc::benchmark {

// `workload` against 127.0.0.1:`port`: 4 calls in flight on 2 connections.
ClientConfig BriefConfig(int port, Workload workload);

// Operations completed since the last Take(): round trips, or messages
// received (unconstrained).
int64_t Ops(OpStats* stats);

// Starts `client`, lets it run for `time` and then until an operation has
// completed (at most 10 s in all, as under ThreadSanitizer on a busy
// machine), stops it and returns what `stats` counted; the latency
// histogram holds the round trips completed before Stop().
OpStats::Snapshot RunClientBriefly(BenchClient* client, OpStats* stats,
                                   absl::Duration time);

}  // namespace h2rpc::benchmark

#endif  // H2RPC_BENCHMARK_BRIEF_RUN_H_
