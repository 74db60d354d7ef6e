#ifndef H2RPC_TRANSPORT_IO_FAKE_SCHEDULER_H_
#define H2RPC_TRANSPORT_IO_FAKE_SCHEDULER_H_

#include "absl/time/time.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/scheduler.h"

namespace h2rpc::transport::io {

// A Scheduler whose clock moves only when the test says so: timers fire
// inside AdvanceTo()/AdvanceBy(), in deadline order, with Now() at each
// one's deadline. One thread. Allocates only as the timer heap grows.
class FakeScheduler final : public Scheduler {
 public:
  // Starts at an arbitrary fixed time well after the clock's epoch.
  FakeScheduler() : now_(MonotonicTime::FromSinceEpoch(absl::Hours(1))) {}

  MonotonicTime Now() const override { return now_; }
  void Schedule(Timer* timer, MonotonicTime deadline) override {
    timers_.Schedule(timer, deadline);
  }
  void Cancel(Timer* timer) override { timers_.Cancel(timer); }

  // Fires every timer due at or before `time` (including ones those
  // callbacks schedule within it), then leaves Now() at `time` (or where
  // it was, if later).
  void AdvanceTo(MonotonicTime time);
  void AdvanceBy(absl::Duration duration) { AdvanceTo(now_ + duration); }
  // The earliest scheduled deadline; InfiniteFuture when none.
  MonotonicTime next_deadline() const { return timers_.earliest(); }

 private:
  MonotonicTime now_;
  TimerHeap timers_{16};
};

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_FAKE_SCHEDULER_H_
