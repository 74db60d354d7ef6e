#include "benchmark/cpu_affinity.h"

#include <pthread.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace h2rpc::benchmark {
namespace {

// 0 or the error number of pthread_setaffinity_np.
int SetAffinity(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

std::string AffinityError(const std::vector<int>& cpus, int rc) {
  return absl::StrCat("cannot set the CPU affinity to CPUs ",
                      absl::StrJoin(cpus, ","), ": ", std::strerror(rc));
}

}  // namespace

std::string PinThisThread(const std::vector<int>& cpus) {
  if (cpus.empty()) return std::string();
  const int rc = SetAffinity(cpus);
  return rc == 0 ? std::string() : AffinityError(cpus, rc);
}

ScopedAffinity::ScopedAffinity(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  int rc = pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
  if (rc == 0) rc = SetAffinity(cpus);
  if (rc != 0) {
    error_ = AffinityError(cpus, rc);
    return;
  }
  restore_ = true;
}

ScopedAffinity::~ScopedAffinity() {
  if (restore_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
}

}  // namespace h2rpc::benchmark
