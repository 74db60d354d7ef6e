#include "rpc/coro/event.h"

#include <thread>

#include "gtest/gtest.h"
#include "rpc/coro/task.h"

namespace h2rpc::coro {
namespace {

TEST(EventTest, AnEventSetBeforeTheAwaitDoesNotSuspend) {
  Event event;
  event.Set();
  bool went_on = false;
  auto wait = [&]() -> Task<void> {
    co_await event;
    went_on = true;
  };
  Spawn(wait());
  EXPECT_TRUE(went_on);
}

TEST(EventTest, TheAwaiterResumesOnTheSettingThread) {
  Event event;
  std::thread::id resumed_on;
  bool went_on = false;
  auto wait = [&]() -> Task<void> {
    co_await event;
    resumed_on = std::this_thread::get_id();
    went_on = true;
  };
  Spawn(wait());
  EXPECT_FALSE(went_on);
  std::thread::id setter;
  std::thread thread([&] {
    setter = std::this_thread::get_id();
    event.Set();
  });
  thread.join();
  EXPECT_TRUE(went_on);
  EXPECT_EQ(resumed_on, setter);
  EXPECT_TRUE(event.is_set());
}

}  // namespace
}  // namespace h2rpc::coro
