#ifndef H2RPC_RPC_CORO_OP_SLOT_H_
#define H2RPC_RPC_CORO_OP_SLOT_H_

// C++20. The operations of the coroutine calls (rpc/coro/client.h,
// rpc/coro/server.h), on top of the reactors' Start*/On*Done pairs.

#include <atomic>
#include <coroutine>
#include <utility>

namespace h2rpc::coro::internal {

// One kind of operation of a call (its reads, or its writes): at most one
// outstanding. It starts when its awaitable is made (TryBegin, on the
// starting coroutine's thread), completes on the call's loop thread (the
// reactor's event: Complete), and is awaited by at most one coroutine,
// before or after it completes (Wait); a coroutine already waiting resumes
// inside Complete, on the loop thread.
class OpSlot {
 public:
  // Claims the slot: false if an operation is outstanding. A completed one
  // need not have been awaited.
  bool TryBegin() {
    int state = state_.load(std::memory_order_acquire);
    while (state == kIdle || state == kDone) {
      if (state_.compare_exchange_weak(state, kRunning,
                                       std::memory_order_acq_rel)) {
        return true;
      }
    }
    return false;
  }
  // The operation ended; resumes the coroutine waiting for it, if any.
  void Complete(bool ok) {
    ok_ = ok;
    if (state_.exchange(kDone, std::memory_order_acq_rel) == kWaiting) {
      std::exchange(waiting_, {}).resume();
    }
  }
  bool done() const { return state_.load(std::memory_order_acquire) == kDone; }
  // Registers `awaiting`: false if the operation has already completed (the
  // coroutine goes on at once).
  bool Wait(std::coroutine_handle<> awaiting) {
    waiting_ = awaiting;
    int expected = kRunning;
    return state_.compare_exchange_strong(expected, kWaiting,
                                          std::memory_order_acq_rel);
  }
  // The result, once done().
  bool ok() const { return ok_; }

 private:
  static constexpr int kIdle = 0;
  static constexpr int kRunning = 1;
  static constexpr int kWaiting = 2;
  static constexpr int kDone = 3;
  std::atomic<int> state_{kIdle};
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

// One operation, for bool results: made, it starts the operation at once
// (`start`, on the reactor), unless `refused` (a misuse already reported,
// e.g. the call is over: it then completes at once with false); awaited,
// it gives the result. So `co_await call.Read(&m)` reads, and
//   auto read = call.Read(&m);       // the read starts
//   co_await call.Write(request);    // the write starts and ends
//   const bool ok = co_await read;   // the read ends
// keeps both outstanding from one coroutine. A second operation while one
// of its kind is outstanding is passed to the reactor all the same, which
// reports it and fails the call as it does for its own callers; it
// completes at once with false. Not copyable or movable: await it where it
// was made.
class OpAwaitable {
 public:
  template <class Start>
  OpAwaitable(OpSlot* slot, bool refused, Start start) : slot_(slot) {
    if (refused) return;
    if (!slot->TryBegin()) {
      start();  // reported by the reactor
      return;
    }
    began_ = true;
    start();
  }
  OpAwaitable(const OpAwaitable&) = delete;
  OpAwaitable& operator=(const OpAwaitable&) = delete;

  bool await_ready() const noexcept { return !began_ || slot_->done(); }
  bool await_suspend(std::coroutine_handle<> awaiting) {
    return slot_->Wait(awaiting);
  }
  bool await_resume() const noexcept { return began_ && slot_->ok(); }

 private:
  OpSlot* const slot_;
  bool began_ = false;
};

}  // namespace h2rpc::coro::internal

#endif  // H2RPC_RPC_CORO_OP_SLOT_H_
