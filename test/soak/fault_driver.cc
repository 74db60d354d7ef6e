#include "test/soak/fault_driver.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::testing {

std::string FaultDriver::Counts::ToString() const {
  return absl::StrCat(kills, " kills (SIGKILL), ", terminations,
                      " graceful restarts (SIGTERM), ", resets,
                      " proxy resets, ", delays, " proxy stalls");
}

FaultDriver::FaultDriver(BackendCluster* cluster, Options options)
    : cluster_(cluster), options_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

FaultDriver::~FaultDriver() { Stop(); }

void FaultDriver::Stop() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

FaultDriver::Counts FaultDriver::counts() const {
  MutexLock lock(&mu_);
  return counts_;
}

bool FaultDriver::Pause(absl::Duration pause) {
  return !stop_.WaitForNotificationWithTimeout(pause);
}

void FaultDriver::Run() {
  std::mt19937 random(options_.seed);
  auto uniform = [&random](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(random);
  };
  const int64_t min_pause_ms = absl::ToInt64Milliseconds(options_.min_pause);
  const int64_t max_pause_ms = absl::ToInt64Milliseconds(options_.max_pause);
  while (Pause(absl::Milliseconds(uniform(min_pause_ms, max_pause_ms)))) {
    const int64_t dice = uniform(0, 99);
    const int any = static_cast<int>(uniform(0, BackendCluster::kBackends - 1));
    const bool tls = uniform(0, 1) == 1;
    std::string failure;
    if (dice < 30 && !options_.restartable.empty()) {
      const int i = options_.restartable[static_cast<size_t>(
          uniform(0, static_cast<int64_t>(options_.restartable.size()) - 1))];
      const bool graceful = dice < 15;
      std::string error;
      if (!cluster_->Restart(i, graceful, &error)) {
        failure = absl::StrCat(graceful ? "graceful restart" : "kill", " of ",
                               cluster_->name(i), ": ", error);
      }
      MutexLock lock(&mu_);
      ++(graceful ? counts_.terminations : counts_.kills);
    } else if (dice < 65) {
      cluster_->ResetConnections(any, tls);
      MutexLock lock(&mu_);
      ++counts_.resets;
    } else {
      cluster_->Delay(any, tls, absl::Milliseconds(uniform(50, 800)));
      MutexLock lock(&mu_);
      ++counts_.delays;
    }
    std::string crashes;
    if (!cluster_->NoneCrashed(&crashes)) {
      absl::StrAppend(&failure, failure.empty() ? "" : "\n",
                      "crashed: ", crashes);
    }
    if (!failure.empty()) {
      MutexLock lock(&mu_);
      counts_.failures.push_back(std::move(failure));
    }
  }
}

}  // namespace h2rpc::testing
