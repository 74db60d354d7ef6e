#include "rpc/client_context.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/mutex.h"
#include "rpc/internal/context_link.h"
#include "rpc/server_context.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc {

namespace internal {

// ---------------------------------------------------------------------------
// ContextLink

namespace {

constexpr size_t kStripes = 64;

struct alignas(64) Stripe {
  Mutex mu;
};

Mutex& StripeFor(const ServerContext* parent) {
  // Never destroyed: a child may unlink during the process's exit.
  static Stripe* const stripes = new Stripe[kStripes];
  const uint64_t hash =
      static_cast<uint64_t>(reinterpret_cast<uintptr_t>(parent)) *
      0x9E3779B97F4A7C15ull;
  return stripes[hash >> 58].mu;
}
static_assert(kStripes == 64, "StripeFor takes the hash's top 6 bits");

CancelCause ParentCancelCause(const ServerContext& parent) {
  return transport::io::MonotonicTime::Now().since_epoch() >=
                 ContextLink::ParentDeadline(parent)
             ? CancelCause::kParentDeadline
             : CancelCause::kParentCancelled;
}

}  // namespace

absl::Duration ContextLink::ParentDeadline(const ServerContext& parent) {
  return parent.monotonic_deadline_;
}

void ContextLink::Link(ClientContext* child, const ServerContext& parent) {
  Mutex& stripe = StripeFor(&parent);
  child->link_stripe_ = &stripe;
  MutexLock lock(&stripe);
  ClientContext* const next =
      parent.first_child_.load(std::memory_order_relaxed);
  child->parent_ = &parent;
  child->next_sibling_ = next;
  if (next != nullptr) next->prev_sibling_ = child;
  // Sequentially consistent with the parent's flags (set first, then this
  // head read, in ServerContextAccess): either the parent's end or
  // cancellation sees this child in the list, or this sees its flag.
  parent.first_child_.store(child, std::memory_order_seq_cst);
  if (parent.ended_.load(std::memory_order_seq_cst)) {
    parent.first_child_.store(next, std::memory_order_relaxed);
    if (next != nullptr) next->prev_sibling_ = nullptr;
    child->parent_ = nullptr;
    child->next_sibling_ = nullptr;
    MutexLock child_lock(&child->mu_);
    child->Cancel(CancelCause::kParentEnded);
  } else if (parent.cancelled_.load(std::memory_order_seq_cst)) {
    MutexLock child_lock(&child->mu_);
    child->Cancel(ParentCancelCause(parent));
  }
}

void ContextLink::Unlink(ClientContext* child) {
  MutexLock lock(child->link_stripe_);
  const ServerContext* parent = child->parent_;
  if (parent == nullptr) return;  // the parent ended first
  ClientContext* const prev = child->prev_sibling_;
  ClientContext* const next = child->next_sibling_;
  if (prev != nullptr) {
    prev->next_sibling_ = next;
  } else {
    parent->first_child_.store(next, std::memory_order_relaxed);
  }
  if (next != nullptr) next->prev_sibling_ = prev;
  child->parent_ = nullptr;
}

void ContextLink::CancelChildren(const ServerContext& parent) {
  const CancelCause cause = ParentCancelCause(parent);
  MutexLock lock(&StripeFor(&parent));
  for (ClientContext* child =
           parent.first_child_.load(std::memory_order_relaxed);
       child != nullptr; child = child->next_sibling_) {
    MutexLock child_lock(&child->mu_);
    child->Cancel(cause);
  }
}

void ContextLink::EndChildren(const ServerContext& parent) {
  MutexLock lock(&StripeFor(&parent));
  ClientContext* child = parent.first_child_.load(std::memory_order_relaxed);
  parent.first_child_.store(nullptr, std::memory_order_relaxed);
  while (child != nullptr) {
    ClientContext* const next = child->next_sibling_;
    child->parent_ = nullptr;
    child->prev_sibling_ = nullptr;
    child->next_sibling_ = nullptr;
    MutexLock child_lock(&child->mu_);
    child->Cancel(CancelCause::kParentEnded);
    child = next;
  }
}

// ---------------------------------------------------------------------------

Status CancelStatus(CancelCause cause) {
  switch (cause) {
    case CancelCause::kTryCancel:
      return Status(StatusCode::kCancelled, "the call was cancelled");
    case CancelCause::kParentCancelled:
      return Status(StatusCode::kCancelled,
                    "the server call this call was made for was cancelled");
    case CancelCause::kParentDeadline:
      return Status(StatusCode::kDeadlineExceeded,
                    "the deadline of the server call this call was made for "
                    "passed");
    case CancelCause::kParentEnded:
      return Status(StatusCode::kCancelled,
                    "the server call this call was made for is over");
  }
  return Status(StatusCode::kCancelled, "the call was cancelled");
}

}  // namespace internal

ClientContext::ClientContext(const ServerContext& parent,
                             PropagationOptions options) {
  if (options.is_deadline_propagated()) {
    inherited_deadline_ = internal::ContextLink::ParentDeadline(parent);
  }
  if (options.is_cancellation_propagated()) {
    internal::ContextLink::Link(this, parent);
  }
  if (options.is_tracing_propagated()) {
    trace_parent_ = parent.trace_context();
    trace_state_ = std::string(parent.trace_state());
  }
}

std::unique_ptr<ClientContext> ClientContext::FromServerContext(
    const ServerContext& parent, PropagationOptions options) {
  return std::make_unique<ClientContext>(parent, options);
}

ClientContext::~ClientContext() {
  if (link_stripe_ != nullptr) internal::ContextLink::Unlink(this);
}

void ClientContext::set_deadline(absl::Time deadline) {
  monotonic_deadline_ =
      transport::io::MonotonicFromWall(deadline).since_epoch();
}

void ClientContext::set_timeout(absl::Duration timeout) {
  monotonic_deadline_ =
      (transport::io::MonotonicTime::Now() + timeout).since_epoch();
}

absl::Time ClientContext::deadline() const {
  return transport::io::WallFromMonotonic(
      transport::io::MonotonicTime::FromSinceEpoch(
          std::min(monotonic_deadline_, inherited_deadline_)));
}

void ClientContext::TryCancel() {
  MutexLock lock(&mu_);
  Cancel(internal::CancelCause::kTryCancel);
}

void ClientContext::Cancel(internal::CancelCause cause) {
  if (call_ != nullptr) {
    call_->RequestCancel(cause);
  } else if (!call_ended_ && !cancelled_) {
    cancelled_ = true;
    cancel_cause_ = cause;
  }
}

}  // namespace h2rpc
