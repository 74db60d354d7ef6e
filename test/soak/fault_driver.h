#ifndef H2RPC_TEST_SOAK_FAULT_DRIVER_H_
#define H2RPC_TEST_SOAK_FAULT_DRIVER_H_

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "test/soak/backend_cluster.h"
#include "test/util/notification.h"

namespace h2rpc::testing {

// Does harm to a BackendCluster from a thread of its own until stopped, one
// fault at a time with a random pause between two (pseudo-random from a
// seed, so a run can be repeated): a backend killed (SIGKILL) or shut down
// gracefully (SIGTERM) and started again, every connection through a proxy
// reset, or a proxy stalled for 50 to 800 ms. Only the backends given as
// restartable are ever ended; every backend gets the rest. After each
// fault it checks that no backend crashed.
class FaultDriver {
 public:
  struct Options {
    absl::Duration min_pause = absl::Milliseconds(300);
    absl::Duration max_pause = absl::Milliseconds(1500);
    std::vector<int> restartable = {1, 2};
    uint32_t seed = 1;
  };
  // What the driver did, and what went wrong.
  struct Counts {
    int kills = 0;
    int terminations = 0;
    int resets = 0;
    int delays = 0;
    std::vector<std::string> failures;
    // "12 kills, 10 graceful restarts, 40 resets, 38 delays".
    std::string ToString() const;
  };

  // Starts the thread. `cluster` must outlive the driver.
  FaultDriver(BackendCluster* cluster, Options options);
  // Stop()s.
  ~FaultDriver();
  FaultDriver(const FaultDriver&) = delete;
  FaultDriver& operator=(const FaultDriver&) = delete;

  // Ends the fault in progress (a stalled proxy forwards again) and joins
  // the thread. Idempotent.
  void Stop();
  Counts counts() const;

 private:
  void Run();
  // Pauses for `pause` unless stopped first; false once stopped.
  bool Pause(absl::Duration pause);

  BackendCluster* const cluster_;
  const Options options_;
  mutable Mutex mu_;
  Counts counts_ ABSL_GUARDED_BY(mu_);
  Notification stop_;  // Stop() was called
  std::thread thread_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_FAULT_DRIVER_H_
