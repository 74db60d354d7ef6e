#include "rpc/coro/executor.h"

#include <atomic>
#include <future>
#include <thread>

#include "gtest/gtest.h"
#include "rpc/coro/task.h"
#include "test/util/allocation_counter.h"
#include "test/util/notification.h"
#include "transport/io/event_loop.h"

namespace h2rpc::coro {
namespace {

using transport::io::EventLoop;

TEST(ExecutorTest, ResumeOnMovesTheCoroutineToTheExecutorsThreads) {
  ThreadPool pool(2);
  const std::thread::id test_thread = std::this_thread::get_id();
  auto hop = [&]() -> Task<std::thread::id> {
    co_await ResumeOn(pool);
    co_return std::this_thread::get_id();
  };
  EXPECT_NE(SyncWait(hop()), test_thread);
}

TEST(ExecutorTest, CurrentLoopIsNullOffAnEventLoop) {
  EXPECT_EQ(CurrentLoop(), nullptr);
  ThreadPool pool(1);
  auto on_pool = [&]() -> Task<Executor*> {
    co_await ResumeOn(pool);
    co_return CurrentLoop();
  };
  EXPECT_EQ(SyncWait(on_pool()), nullptr);
}

// A coroutine started on an event loop goes to a pool for blocking work and
// comes back to the loop it started on.
TEST(ExecutorTest, ACoroutineGoesToAPoolAndBackToItsLoop) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("coro-loop").ok());
  ThreadPool pool(1);
  std::atomic<bool> on_pool_off_loop{false};
  std::promise<EventLoop*> back_on;
  auto work = [&]() -> Task<void> {
    Executor* home = CurrentLoop();
    co_await ResumeOn(pool);
    on_pool_off_loop.store(EventLoop::Current() == nullptr);
    co_await ResumeOn(*home);
    back_on.set_value(EventLoop::Current());
  };
  loop.Post([&] { Spawn(work()); });
  std::future<EventLoop*> future = back_on.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  EXPECT_EQ(future.get(), &loop);
  EXPECT_TRUE(on_pool_off_loop.load());
  loop.Stop();
}

TEST(ExecutorTest, WarmHopsAllocateNothing) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("coro-loop").ok());
  ThreadPool pool(1);
  int64_t allocations = -1;
  testing::Notification done;
  auto hops = [&]() -> Task<void> {
    Executor* home = CurrentLoop();
    for (int i = 0; i < 10; ++i) {
      co_await ResumeOn(pool);
      co_await ResumeOn(*home);
    }
    const auto before = testing::AllocationsByRole(testing::ThreadRole::kOther);
    for (int i = 0; i < 1000; ++i) {
      co_await ResumeOn(pool);
      co_await ResumeOn(*home);
    }
    allocations =
        testing::AllocationsByRole(testing::ThreadRole::kOther).allocations -
        before.allocations;
    done.Notify();
  };
  loop.Post([&] { Spawn(hops()); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(allocations, 0);
  loop.Stop();
}

TEST(ExecutorTest, APoolRunsWhatWasScheduledBeforeItIsDestroyed) {
  std::atomic<int> ran{0};
  struct Count final : Executor::Work {
    std::atomic<int>* ran;
    void Run() override { ran->fetch_add(1); }
  };
  Count works[100];
  {
    ThreadPool pool(2);
    for (Count& work : works) {
      work.ran = &ran;
      pool.Schedule(&work);
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace h2rpc::coro
