#include "benchmark/brief_run.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace h2rpc::benchmark {

ClientConfig BriefConfig(int port, Workload workload) {
  ClientConfig config;
  config.target = absl::StrCat("127.0.0.1:", port);
  config.workload = workload;
  config.concurrency = 4;
  config.connections = 2;
  return config;
}

int64_t Ops(OpStats* stats) {
  OpStats::Snapshot s = stats->Take();
  return s.histogram.count() + s.recvs;
}

OpStats::Snapshot RunClientBriefly(BenchClient* client, OpStats* stats,
                                   absl::Duration time) {
  const absl::Time start = absl::Now();
  client->Start();
  absl::SleepFor(time);
  OpStats::Snapshot result = stats->Take();
  while (result.histogram.count() + result.recvs == 0 &&
         absl::Now() - start < absl::Seconds(10)) {
    absl::SleepFor(absl::Milliseconds(10));
    result = stats->Take();
  }
  client->Stop();
  const OpStats::Snapshot tail = stats->Take();
  result.sends += tail.sends;
  result.recvs += tail.recvs;
  result.errors += tail.errors;
  if (result.first_error.empty()) result.first_error = tail.first_error;
  return result;
}

}  // namespace h2rpc::benchmark
