#ifndef H2RPC_RPC_CORO_TASK_H_
#define H2RPC_RPC_CORO_TASK_H_

// C++20 only: the optional coroutine layer (//rpc/coro) of h2rpc's C++17 API.

#include <coroutine>
#include <cstddef>
#include <exception>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "base/mutex.h"
#include "rpc/coro/frame_allocator.h"

namespace h2rpc::coro {

template <class T = void>
class Task;

namespace internal {

// Reports a Task destroyed while its coroutine is suspended inside it
// (rpc/internal/common/misuse.h); the frame is left allocated, since
// whatever it awaits still holds it.
void ReportRunningTaskDestroyed();

// What every Task's promise shares: frames from the recycling allocator, a
// lazy start, and, at the end, a jump to the coroutine that awaited the task.
class PromiseBase {
 public:
  static void* operator new(std::size_t bytes) { return AllocateFrame(bytes); }
  static void operator delete(void* frame, std::size_t bytes) noexcept {
    FreeFrame(frame, bytes);
  }

  std::suspend_always initial_suspend() noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <class Promise>
    std::coroutine_handle<> await_suspend(
        std::coroutine_handle<Promise> handle) noexcept {
      return handle.promise().continuation_;
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }

  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  void set_continuation(std::coroutine_handle<> continuation) {
    continuation_ = continuation;
    started_ = true;
  }
  bool started() const { return started_; }
  void RethrowIfFailed() {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::coroutine_handle<> continuation_ = std::noop_coroutine();
  std::exception_ptr exception_;
  bool started_ = false;
};

template <class T>
class Promise final : public PromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  template <class U>
  void return_value(U&& value) {
    value_.emplace(std::forward<U>(value));
  }
  T TakeValue() {
    RethrowIfFailed();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class Promise<void> final : public PromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void TakeValue() { RethrowIfFailed(); }
};

}  // namespace internal

// A coroutine's result, awaited by another coroutine: `T value = co_await
// task;`. Lazy: the coroutine starts when the task is awaited (on the
// awaiting coroutine's thread) and, when it ends, the awaiting coroutine
// resumes on the thread it ended on. An exception leaving the coroutine is
// rethrown to the awaiter. Move-only; awaited at most once. The frame comes
// from the recycling allocator (rpc/coro/frame_allocator.h) and is freed
// with the Task.
//
// A Task may be destroyed without being awaited (its coroutine never runs)
// or after it ended. Destroying one whose coroutine is suspended inside it
// (possible only by destroying the frame of the coroutine that awaits it by
// hand) is misuse: reported, and the frame is left allocated.
template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = internal::Promise<T>;

  Task() = default;
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      Release();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { Release(); }

  // Whether the task has a coroutine (not default-made or moved from).
  bool valid() const { return static_cast<bool>(handle_); }

  auto operator co_await() && noexcept {
    struct Awaiter {
      std::coroutine_handle<promise_type> handle;
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(
          std::coroutine_handle<> awaiting) noexcept {
        handle.promise().set_continuation(awaiting);
        return handle;
      }
      T await_resume() { return handle.promise().TakeValue(); }
    };
    return Awaiter{handle_};
  }

 private:
  friend class internal::Promise<T>;
  explicit Task(std::coroutine_handle<promise_type> handle) : handle_(handle) {}

  void Release() {
    if (!handle_) return;
    if (handle_.promise().started() && !handle_.done()) {
      internal::ReportRunningTaskDestroyed();
    } else {
      handle_.destroy();
    }
    handle_ = {};
  }

  std::coroutine_handle<promise_type> handle_;
};

namespace internal {

template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}

inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

// The coroutine behind Spawn: starts at once, frees its own frame when it
// ends; an exception leaving it terminates the process.
struct Detached {
  struct promise_type {
    static void* operator new(std::size_t bytes) {
      return AllocateFrame(bytes);
    }
    static void operator delete(void* frame, std::size_t bytes) noexcept {
      FreeFrame(frame, bytes);
    }
    Detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

// `task`'s frame is freed before `done` runs.
template <class T, class Done>
Detached RunDetached(Task<T> task, Done done) {
  if constexpr (std::is_void_v<T>) {
    co_await std::move(task);
    task = Task<T>();
    done();
  } else {
    T result = co_await std::move(task);
    task = Task<T>();
    done(std::move(result));
  }
}

inline Detached RunDetached(Task<void> task) { co_await std::move(task); }

}  // namespace internal

// Starts `task` now, on the calling thread, until it first suspends; from
// then on it runs wherever what it awaits resumes it, and its frames are
// freed when it ends. With `done`, `done(result)` (`done()` for a
// Task<void>) runs when it ends, on the thread it ended on. An exception
// leaving the task terminates the process. Allocates nothing beyond the
// recycled frames (one more than the task's own).
inline void Spawn(Task<void> task) { internal::RunDetached(std::move(task)); }
template <class T, class Done>
void Spawn(Task<T> task, Done done) {
  internal::RunDetached(std::move(task), std::move(done));
}

// Runs `task` (as Spawn) and blocks the calling thread until it ends;
// returns its result or rethrows its exception. For main() and tests: never
// on a thread that what the task awaits needs to run (an event loop's, a
// worker's the task hops to).
template <class T>
T SyncWait(Task<T> task) {
  Mutex mu;
  CondVar ended_cv;
  bool ended = false;
  std::exception_ptr exception;
  std::optional<std::conditional_t<std::is_void_v<T>, bool, T>> result;
  auto run = [&]() -> Task<void> {
    try {
      if constexpr (std::is_void_v<T>) {
        co_await std::move(task);
        result.emplace(true);
      } else {
        result.emplace(co_await std::move(task));
      }
    } catch (...) {
      exception = std::current_exception();
    }
  };
  Spawn(run(), [&] {
    MutexLock lock(&mu);
    ended = true;
    ended_cv.SignalAll();
  });
  {
    MutexLock lock(&mu);
    while (!ended) ended_cv.Wait(&mu);
  }
  if (exception) std::rethrow_exception(exception);
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

}  // namespace h2rpc::coro

#endif  // H2RPC_RPC_CORO_TASK_H_
