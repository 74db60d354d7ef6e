#include "transport/io/fake_scheduler.h"

#include <vector>

#include "gtest/gtest.h"

namespace h2rpc::transport::io {
namespace {

class RecordingTimer final : public Timer {
 public:
  RecordingTimer(FakeScheduler* scheduler, std::vector<int>* fired, int id)
      : scheduler_(scheduler), fired_(fired), id_(id) {}
  void OnTimer() override {
    fired_->push_back(id_);
    seen_at = scheduler_->Now();
    if (rearm_by > absl::ZeroDuration()) {
      const absl::Duration by = rearm_by;
      rearm_by = absl::ZeroDuration();
      scheduler_->Schedule(this, scheduler_->Now() + by);
    }
  }
  absl::Duration rearm_by;
  MonotonicTime seen_at;

 private:
  FakeScheduler* scheduler_;
  std::vector<int>* fired_;
  int id_;
};

TEST(FakeSchedulerTest, FiresDueTimersInOrderAtTheirDeadlines) {
  FakeScheduler scheduler;
  const MonotonicTime start = scheduler.Now();
  std::vector<int> fired;
  RecordingTimer a(&scheduler, &fired, 1), b(&scheduler, &fired, 2),
      c(&scheduler, &fired, 3);
  scheduler.Schedule(&b, start + absl::Seconds(2));
  scheduler.Schedule(&a, start + absl::Seconds(1));
  scheduler.Schedule(&c, start + absl::Seconds(10));
  EXPECT_EQ(scheduler.next_deadline(), start + absl::Seconds(1));

  scheduler.AdvanceBy(absl::Seconds(5));
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
  EXPECT_EQ(a.seen_at, start + absl::Seconds(1));
  EXPECT_EQ(b.seen_at, start + absl::Seconds(2));
  EXPECT_EQ(scheduler.Now(), start + absl::Seconds(5));
  EXPECT_TRUE(c.scheduled());

  scheduler.Cancel(&c);
  scheduler.AdvanceBy(absl::Seconds(10));
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
  EXPECT_EQ(scheduler.next_deadline(), MonotonicTime::InfiniteFuture());
}

TEST(FakeSchedulerTest, TimersRearmedWithinTheWindowFireToo) {
  FakeScheduler scheduler;
  std::vector<int> fired;
  RecordingTimer a(&scheduler, &fired, 1);
  a.rearm_by = absl::Seconds(1);
  scheduler.Schedule(&a, scheduler.Now() + absl::Seconds(1));
  scheduler.AdvanceBy(absl::Seconds(3));
  EXPECT_EQ(fired, (std::vector<int>{1, 1}));
  EXPECT_FALSE(a.scheduled());
}

}  // namespace
}  // namespace h2rpc::transport::io
