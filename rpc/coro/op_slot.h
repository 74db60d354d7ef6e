#ifndef H2RPC_RPC_CORO_OP_SLOT_H_
#define H2RPC_RPC_CORO_OP_SLOT_H_

// C++20. The awaited operations of the coroutine calls (rpc/coro/client.h,
// rpc/coro/server.h), on top of the reactors' Start*/On*Done pairs.

#include <atomic>
#include <coroutine>
#include <utility>

namespace h2rpc::coro::internal {

// One kind of operation of a call (its reads, or its writes): at most one
// outstanding, awaited by one coroutine. The starting side runs on the
// awaiting coroutine's thread, Complete on the call's loop thread (the
// reactor's event), which resumes the coroutine there.
class OpSlot {
 public:
  // Claims the slot for `awaiting`: false if an operation is outstanding.
  bool TryBegin(std::coroutine_handle<> awaiting) {
    if (busy_.exchange(true, std::memory_order_acq_rel)) return false;
    waiting_ = awaiting;
    return true;
  }
  // The operation ended: frees the slot, then resumes the coroutine (if
  // one awaits it: an operation the call started itself has none).
  void Complete(bool ok) {
    ok_ = ok;
    std::coroutine_handle<> waiting = std::exchange(waiting_, {});
    busy_.store(false, std::memory_order_release);
    if (waiting) waiting.resume();
  }
  // The result, for the resumed coroutine.
  bool ok() const { return ok_; }

 private:
  std::atomic<bool> busy_{false};
  std::coroutine_handle<> waiting_;
  bool ok_ = false;
};

// Something that happens once (initial metadata arrived, the call ended),
// awaited by at most one coroutine, before or after it happens. Set runs on
// the call's loop thread and resumes a coroutine already waiting there.
class EventLatch {
 public:
  void Set(bool ok) {
    ok_ = ok;
    if (state_.exchange(kSet, std::memory_order_acq_rel) == kWaiting) {
      std::exchange(waiting_, {}).resume();
    }
  }
  // Registers `awaiting`: false if the event has already happened (the
  // coroutine goes on at once).
  bool Wait(std::coroutine_handle<> awaiting) {
    waiting_ = awaiting;
    int expected = kIdle;
    return state_.compare_exchange_strong(expected, kWaiting,
                                          std::memory_order_acq_rel);
  }
  bool is_set() const { return state_.load(std::memory_order_acquire) == kSet; }
  bool ok() const { return ok_; }

 private:
  static constexpr int kIdle = 0;
  static constexpr int kWaiting = 1;
  static constexpr int kSet = 2;
  std::atomic<int> state_{kIdle};
  std::coroutine_handle<> waiting_;
  bool ok_ = false;
};

// `co_await` of one operation, for bool results: `start` begins it on the
// reactor, `refused` (a misuse already reported, e.g. the call is over)
// makes it complete at once with false. A second operation while one is
// outstanding is passed to the reactor all the same, which reports it and
// fails the call as its own callers' misuse; it completes at once with
// false.
template <class Start>
class OpAwaitable {
 public:
  OpAwaitable(OpSlot* slot, bool refused, Start start)
      : slot_(slot), refused_(refused), start_(std::move(start)) {}

  bool await_ready() const noexcept { return refused_; }
  bool await_suspend(std::coroutine_handle<> awaiting) {
    if (!slot_->TryBegin(awaiting)) {
      start_();
      return false;
    }
    began_ = true;
    // The operation may complete, and the coroutine resume and destroy this
    // awaitable, before start_() returns: nothing here is touched after.
    Start start = std::move(start_);
    start();
    return true;
  }
  bool await_resume() const noexcept { return began_ && slot_->ok(); }

 private:
  OpSlot* slot_;
  bool refused_;
  bool began_ = false;
  Start start_;
};

}  // namespace h2rpc::coro::internal

#endif  // H2RPC_RPC_CORO_OP_SLOT_H_
