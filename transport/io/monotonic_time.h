#ifndef H2RPC_TRANSPORT_IO_MONOTONIC_TIME_H_
#define H2RPC_TRANSPORT_IO_MONOTONIC_TIME_H_

#include "absl/time/time.h"

namespace h2rpc::transport::io {

// A point in time on the monotonic clock (CLOCK_MONOTONIC), which never
// jumps when the wall clock is set or stepped. Every timer and deadline
// inside h2rpc is a MonotonicTime; absl::Time is the wall clock
// (CLOCK_REALTIME) and appears only at the public API (a user's deadline,
// ServerContext::deadline()), converted once there with MonotonicFromWall() /
// WallFromMonotonic(). The two types do not mix: there is no implicit
// conversion and no arithmetic between them.
//
// A value type holding the time since the clock's epoch (boot) as an
// absl::Duration, so arithmetic with durations saturates at the infinities
// as absl::Duration's does. Never allocates; any thread.
class MonotonicTime {
 public:
  // The clock's epoch. Real readings come from Now().
  constexpr MonotonicTime() = default;

  // Reads CLOCK_MONOTONIC. Thread-safe, never fails, never blocks.
  static MonotonicTime Now();
  // Later (earlier) than every reading: "no deadline".
  static constexpr MonotonicTime InfiniteFuture() {
    return MonotonicTime(absl::InfiniteDuration());
  }
  static constexpr MonotonicTime InfinitePast() {
    return MonotonicTime(-absl::InfiniteDuration());
  }
  // The time `since_epoch` after the clock's epoch (tests, fixed points).
  static constexpr MonotonicTime FromSinceEpoch(absl::Duration since_epoch) {
    return MonotonicTime(since_epoch);
  }

  constexpr absl::Duration since_epoch() const { return since_epoch_; }
  bool is_infinite_future() const {
    return since_epoch_ == absl::InfiniteDuration();
  }

  MonotonicTime& operator+=(absl::Duration d) {
    since_epoch_ += d;
    return *this;
  }
  MonotonicTime& operator-=(absl::Duration d) {
    since_epoch_ -= d;
    return *this;
  }
  friend MonotonicTime operator+(MonotonicTime t, absl::Duration d) {
    return t += d;
  }
  friend MonotonicTime operator-(MonotonicTime t, absl::Duration d) {
    return t -= d;
  }
  // The duration from `b` to `a`; infinite if either is.
  friend absl::Duration operator-(MonotonicTime a, MonotonicTime b) {
    return a.since_epoch_ - b.since_epoch_;
  }

  friend constexpr bool operator==(MonotonicTime a, MonotonicTime b) {
    return a.since_epoch_ == b.since_epoch_;
  }
  friend constexpr bool operator!=(MonotonicTime a, MonotonicTime b) {
    return a.since_epoch_ != b.since_epoch_;
  }
  friend constexpr bool operator<(MonotonicTime a, MonotonicTime b) {
    return a.since_epoch_ < b.since_epoch_;
  }
  friend constexpr bool operator<=(MonotonicTime a, MonotonicTime b) {
    return a.since_epoch_ <= b.since_epoch_;
  }
  friend constexpr bool operator>(MonotonicTime a, MonotonicTime b) {
    return a.since_epoch_ > b.since_epoch_;
  }
  friend constexpr bool operator>=(MonotonicTime a, MonotonicTime b) {
    return a.since_epoch_ >= b.since_epoch_;
  }

 private:
  constexpr explicit MonotonicTime(absl::Duration since_epoch)
      : since_epoch_(since_epoch) {}

  absl::Duration since_epoch_;
};

// The monotonic time at which the wall clock will read `wall`, given readings
// of both clocks taken together (`wall_now`, `monotonic_now`): the remaining
// time is carried over, so a later step of the wall clock no longer affects
// the result. The infinities map to the infinities.
MonotonicTime MonotonicFromWall(absl::Time wall, absl::Time wall_now,
                                MonotonicTime monotonic_now);
// The same against the clocks now (absl::Now(), MonotonicTime::Now()).
MonotonicTime MonotonicFromWall(absl::Time wall);

// The inverse: the wall-clock reading `monotonic` corresponds to, given
// readings of both clocks taken together. The infinities map to the
// infinities.
absl::Time WallFromMonotonic(MonotonicTime monotonic, absl::Time wall_now,
                             MonotonicTime monotonic_now);
// The same against the clocks now.
absl::Time WallFromMonotonic(MonotonicTime monotonic);

}  // namespace h2rpc::transport::io

#endif  // H2RPC_TRANSPORT_IO_MONOTONIC_TIME_H_
