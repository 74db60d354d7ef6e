#include "transport/core/memory_quota.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace h2rpc::transport {

bool MemoryQuota::TryReserve(size_t bytes) {
  size_t used = used_.load(std::memory_order_seq_cst);
  do {
    if (bytes > limit_ - std::min(used, limit_)) {
      refusals_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!used_.compare_exchange_weak(used, used + bytes,
                                        std::memory_order_seq_cst));
  grants_.fetch_add(1, std::memory_order_relaxed);
  NotePeak(used + bytes);
  return true;
}

void MemoryQuota::ForceReserve(size_t bytes) {
  NotePeak(used_.fetch_add(bytes, std::memory_order_seq_cst) + bytes);
}

void MemoryQuota::NotePeak(size_t used) {
  size_t peak = peak_.load(std::memory_order_relaxed);
  while (used > peak &&
         !peak_.compare_exchange_weak(peak, used, std::memory_order_relaxed)) {
  }
}

void MemoryQuota::Release(size_t bytes) {
  if (bytes == 0) return;
  used_.fetch_sub(bytes, std::memory_order_seq_cst);
  // Sequentially consistent with AddWaiter() and TryReserve(): either the
  // waiter's retry sees these bytes free, or this load sees the waiter.
  if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  for (Listener* listener : listeners_) listener->OnMemoryQuotaReleased();
}

MemoryQuotaShare::~MemoryQuotaShare() {
  SetWaiting(false);
  if (used_ > 0) quota_->Release(used_);
}

bool MemoryQuotaShare::TryReserve(size_t bytes) {
  if (bytes > limit_ - std::min(used_, limit_)) return false;
  if (!quota_->TryReserve(bytes)) return false;
  used_ += bytes;
  return true;
}

void MemoryQuotaShare::ForceReserve(size_t bytes) {
  quota_->ForceReserve(bytes);
  used_ += bytes;
}

void MemoryQuotaShare::Release(size_t bytes) {
  used_ -= bytes;
  quota_->Release(bytes);
}

void MemoryQuotaShare::SetWaiting(bool waiting) {
  if (waiting == waiting_) return;
  waiting_ = waiting;
  if (waiting) {
    quota_->AddWaiter();
  } else {
    quota_->RemoveWaiter();
  }
}

size_t MemoryQuotaShare::max_reservation() const {
  return std::min(limit_, quota_->limit());
}

Status MemoryQuotaShare::Refusal(absl::string_view what) const {
  return Status(
      StatusCode::kResourceExhausted,
      absl::StrCat("server memory quota exhausted: no room for ", what,
                   " (this connection holds ", used_, " of its ", limit_,
                   " bytes (memory_quota_share); the server holds ",
                   quota_->used(), " of ", quota_->limit(),
                   " bytes (memory_quota))"));
}

}  // namespace h2rpc::transport
