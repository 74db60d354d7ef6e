#ifndef H2RPC_TEST_SOAK_PROBE_DRIVER_H_
#define H2RPC_TEST_SOAK_PROBE_DRIVER_H_

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "test/soak/backend_cluster.h"
#include "test/util/notification.h"

namespace h2rpc::testing {

// Sends the abuse probes (abuse_probes.h) to a BackendCluster's backends
// from a thread of its own until stopped: every probe in turn, each to the
// next backend, with a pause between two. After each probe the backend
// must answer a fresh call (BackendCluster::Probe).
class ProbeDriver {
 public:
  // One probe's runs.
  struct ProbeRuns {
    int runs = 0;
    // What the attacker saw the last time.
    std::string last_outcome;
  };
  struct Report {
    std::map<std::string, ProbeRuns> probes;
    std::vector<std::string> failures;
    int runs() const;
    // One line per probe: "  ping_flood x4: <last outcome>".
    std::string ToString() const;
  };

  // Starts the thread. `cluster` must outlive the driver.
  ProbeDriver(BackendCluster* cluster, absl::Duration pause);
  // Stop()s.
  ~ProbeDriver();
  ProbeDriver(const ProbeDriver&) = delete;
  ProbeDriver& operator=(const ProbeDriver&) = delete;

  // Lets the probe in progress end, then joins the thread. Idempotent.
  void Stop();
  Report report() const;

 private:
  void Run();
  // Pauses for pause_ unless stopped first; false once stopped.
  bool Pause();

  BackendCluster* const cluster_;
  const absl::Duration pause_;
  mutable Mutex mu_;
  Report report_ ABSL_GUARDED_BY(mu_);
  Notification stop_;  // Stop() was called
  std::thread thread_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_PROBE_DRIVER_H_
