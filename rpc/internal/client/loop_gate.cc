#include "rpc/internal/client/loop_gate.h"

#include <utility>

namespace h2rpc::internal {

void LoopGate::Close() {
  MutexLock lock(&mu_);
  loop_ = nullptr;
}

bool LoopGate::Post(absl::AnyInvocable<void()> task) {
  MutexLock lock(&mu_);
  if (loop_ == nullptr) return false;
  loop_->Post(std::move(task));
  return true;
}

}  // namespace h2rpc::internal
