#ifndef H2RPC_TEST_SOAK_RESOURCE_MONITOR_H_
#define H2RPC_TEST_SOAK_RESOURCE_MONITOR_H_

#include <sys/types.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "test/soak/backend_cluster.h"
#include "test/soak/process_sample.h"
#include "test/util/notification.h"

namespace h2rpc::testing {

// A process's samples over its life.
struct ResourceSeries {
  struct Point {
    absl::Time time;
    ProcessSample sample;
  };
  std::string label;  // "client", or the backend's name
  pid_t pid = -1;
  std::vector<Point> points;
};

// Samples this process ("client") and every backend of a cluster now
// running, every `period`, from a thread of its own until stopped. Each
// process (a backend restarted is a new one) gets a series of its own.
class ResourceMonitor {
 public:
  // Starts the thread. `cluster` must outlive the monitor.
  ResourceMonitor(const BackendCluster* cluster, absl::Duration period);
  // Stop()s.
  ~ResourceMonitor();
  ResourceMonitor(const ResourceMonitor&) = delete;
  ResourceMonitor& operator=(const ResourceMonitor&) = delete;

  // Joins the thread. Idempotent.
  void Stop();
  // Every series so far, in order of first sample.
  std::vector<ResourceSeries> series() const;

 private:
  void Run();
  void SampleAll();
  // The series of `pid`, made with `label` if new.
  ResourceSeries& SeriesOf(const std::string& label, pid_t pid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const BackendCluster* const cluster_;
  const absl::Duration period_;
  mutable Mutex mu_;
  std::vector<ResourceSeries> series_ ABSL_GUARDED_BY(mu_);
  Notification stop_;  // Stop() was called
  std::thread thread_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_SOAK_RESOURCE_MONITOR_H_
