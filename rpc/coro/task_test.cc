#include "rpc/coro/task.h"

#include <coroutine>
#include <stdexcept>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "rpc/internal/common/misuse.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::coro {
namespace {

using ::h2rpc::testing::AllocationCounter;

Task<int> Constant(int value) { co_return value; }

Task<int> Sum(int a, int b) {
  const int x = co_await Constant(a);
  const int y = co_await Constant(b);
  co_return x + y;
}

TEST(TaskTest, AwaitedTasksGiveTheirValues) {
  EXPECT_EQ(SyncWait(Sum(2, 3)), 5);
}

TEST(TaskTest, ATaskStartsOnlyWhenAwaited) {
  bool ran = false;
  auto body = [&]() -> Task<void> {
    ran = true;
    co_return;
  };
  Task<void> task = body();
  EXPECT_FALSE(ran);
  SyncWait(std::move(task));
  EXPECT_TRUE(ran);
}

TEST(TaskTest, ATaskNeverAwaitedIsFreedWithoutRunning) {
  bool ran = false;
  auto body = [&]() -> Task<std::string> {
    ran = true;
    co_return std::string(100, 'x');
  };
  { Task<std::string> task = body(); }
  EXPECT_FALSE(ran);
}

TEST(TaskTest, ExceptionsReachTheAwaiter) {
  auto throws = []() -> Task<int> {
    throw std::runtime_error("boom");
    co_return 1;
  };
  auto catches = [&]() -> Task<std::string> {
    try {
      co_await throws();
    } catch (const std::runtime_error& e) {
      co_return std::string(e.what());
    }
    co_return std::string("no exception");
  };
  EXPECT_EQ(SyncWait(catches()), "boom");
  EXPECT_THROW(SyncWait(throws()), std::runtime_error);
}

// Suspends the coroutine until a new thread (put in `*thread`, for the test
// to join) resumes it.
struct Handoff {
  std::thread* thread;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> awaiting) {
    // The new thread may resume the coroutine, and free this awaitable with
    // its frame, at once: nothing here is read after it starts.
    std::thread* const out = thread;
    *out = std::thread([awaiting] { awaiting.resume(); });
  }
  void await_resume() const noexcept {}
};

TEST(TaskTest, ACoroutineGoesOnWhereWhatItAwaitedResumedIt) {
  std::thread resumer;
  auto hop = [&]() -> Task<std::thread::id> {
    co_await Handoff{&resumer};
    co_return std::this_thread::get_id();
  };
  const std::thread::id main_thread = std::this_thread::get_id();
  auto outer = [&]() -> Task<bool> {
    const std::thread::id inner = co_await hop();
    // The awaiting coroutine resumes on the thread the inner one ended on.
    co_return inner == std::this_thread::get_id() && inner != main_thread;
  };
  EXPECT_TRUE(SyncWait(outer()));
  resumer.join();
}

TEST(TaskTest, SpawnRunsUntilTheFirstSuspensionAndCallsDone) {
  int result = 0;
  Spawn(Sum(20, 22), [&](int value) { result = value; });
  // Nothing suspended: it all ran inside Spawn.
  EXPECT_EQ(result, 42);
}

TEST(TaskTest, WarmFramesAllocateNothing) {
  int result = 0;
  auto run = [&] { Spawn(Sum(1, 2), [&](int value) { result += value; }); };
  for (int i = 0; i < 10; ++i) run();
  AllocationCounter counter;
  for (int i = 0; i < 1000; ++i) run();
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(result, 3 * 1010);
}

// Suspends forever, handing out the handle of the coroutine that awaits it.
struct Park {
  std::coroutine_handle<>* out;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> awaiting) { *out = awaiting; }
  void await_resume() const noexcept {}
};

// Hands out the awaiting coroutine's handle without suspending it.
struct CaptureSelf {
  std::coroutine_handle<>* out;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> awaiting) {
    *out = awaiting;
    return false;
  }
  void await_resume() const noexcept {}
};

TEST(TaskDeathTest, DestroyingARunningTaskIsReported) {
  const bool fatal = h2rpc::internal::MisuseIsFatal();
  h2rpc::internal::SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(
      {
        std::coroutine_handle<> parked;
        std::coroutine_handle<> outer_frame;
        auto inner = [&]() -> Task<void> { co_await Park{&parked}; };
        auto outer = [&]() -> Task<void> {
          co_await CaptureSelf{&outer_frame};
          Task<void> running = inner();
          co_await std::move(running);
        };
        Spawn(outer());
        // Destroys `running` while inner is suspended inside it.
        outer_frame.destroy();
      },
      "a coro::Task destroyed while its coroutine is suspended inside it");
  h2rpc::internal::SetMisuseIsFatalForTest(fatal);
}

}  // namespace
}  // namespace h2rpc::coro
