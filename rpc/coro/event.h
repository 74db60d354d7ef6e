#ifndef H2RPC_RPC_CORO_EVENT_H_
#define H2RPC_RPC_CORO_EVENT_H_

// C++20. A one-shot event between coroutines (//rpc/coro): one sets it, one
// awaits it, on any threads, in either order.
//
//   coro::Event reader_done;
//   coro::Spawn(ReadAll(&call), [&] { reader_done.Set(); });
//   ... write ...
//   co_await reader_done;  // the reader has ended

#include <coroutine>

#include "rpc/coro/op_slot.h"

namespace h2rpc::coro {

// Set() once, from any thread; `co_await event` by at most one coroutine,
// before or after: it goes on at once if the event is set, else it resumes
// inside Set(), on the setting thread. Allocates nothing. Must outlive both.
class Event {
 public:
  void Set() { latch_.Set(true); }
  bool is_set() const { return latch_.is_set(); }

  auto operator co_await() noexcept {
    struct Awaiter {
      internal::EventLatch* latch;
      bool await_ready() const noexcept { return latch->is_set(); }
      bool await_suspend(std::coroutine_handle<> awaiting) {
        return latch->Wait(awaiting);
      }
      void await_resume() const noexcept {}
    };
    return Awaiter{&latch_};
  }

 private:
  internal::EventLatch latch_;
};

}  // namespace h2rpc::coro

#endif  // H2RPC_RPC_CORO_EVENT_H_
