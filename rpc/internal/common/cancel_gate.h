#ifndef H2RPC_RPC_INTERNAL_COMMON_CANCEL_GATE_H_
#define H2RPC_RPC_INTERNAL_COMMON_CANCEL_GATE_H_

#include <atomic>
#include <cstdint>

namespace h2rpc::internal {

// Makes a cancel requested from any thread (ServerContext::TryCancel) reach
// only the call it was requested for, although the call object is reused
// (a pooled UnaryServerCall) or freed (a ServerStreamCall) once the call ends.
//
// A cancel travels to the loop as a task embedded in the call object. The
// gate accepts a cancel only while the call is open (between Open() and
// Close()), at most one per call, and an accepted cancel holds the object:
// of Close() and CancelTaskDone(), whichever comes last says the object may
// be released. So a cancel racing the call's end either is accepted while
// the call runs (and its task finds the same call, ended or not) or is
// refused; a queued task never finds the object reused or freed.
//
// One atomic word; RequestCancel() is a compare-and-swap loop, the others a
// single atomic operation. No lock, no allocation.
class CancelGate {
 public:
  // Loop thread: a call begins on the object (no other thread can reach it
  // yet: the last run's cancel task, if any, has finished).
  void Open() { state_.store(kOpen, std::memory_order_release); }

  // Any thread: true if the cancel is accepted, and the caller must post the
  // cancel task (which must end with CancelTaskDone()); false if the call is
  // not open or a cancel was accepted before.
  bool RequestCancel() {
    uint32_t state = state_.load(std::memory_order_acquire);
    do {
      if ((state & kOpen) == 0 || (state & kCancelRequested) != 0) {
        return false;
      }
    } while (!state_.compare_exchange_weak(
        state, state | kCancelRequested | kCancelQueued,
        std::memory_order_acq_rel, std::memory_order_acquire));
    return true;
  }

  // Loop thread, at the end of the cancel task: true if the call was closed
  // meanwhile, so the task releases the object.
  bool CancelTaskDone() {
    const uint32_t before =
        state_.fetch_and(~kCancelQueued, std::memory_order_acq_rel);
    return (before & kOpen) == 0;
  }

  // Loop thread: the call has ended. True if the object may be released now;
  // false if a cancel task is queued, which releases it.
  bool Close() {
    const uint32_t before = state_.fetch_and(~kOpen, std::memory_order_acq_rel);
    return (before & kCancelQueued) == 0;
  }

 private:
  static constexpr uint32_t kOpen = 1;
  static constexpr uint32_t kCancelRequested = 2;
  static constexpr uint32_t kCancelQueued = 4;

  std::atomic<uint32_t> state_{0};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_CANCEL_GATE_H_
