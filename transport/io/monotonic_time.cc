#include "transport/io/monotonic_time.h"

#include <time.h>

#include "absl/time/clock.h"

namespace h2rpc::transport::io {

MonotonicTime MonotonicTime::Now() {
  timespec now;
  // CLOCK_MONOTONIC cannot fail with a valid timespec pointer.
  clock_gettime(CLOCK_MONOTONIC, &now);
  return MonotonicTime(absl::DurationFromTimespec(now));
}

MonotonicTime MonotonicFromWall(absl::Time wall, absl::Time wall_now,
                                MonotonicTime monotonic_now) {
  return monotonic_now + (wall - wall_now);
}

MonotonicTime MonotonicFromWall(absl::Time wall) {
  // Infinite deadlines need no clock reading.
  if (wall == absl::InfiniteFuture()) return MonotonicTime::InfiniteFuture();
  if (wall == absl::InfinitePast()) return MonotonicTime::InfinitePast();
  return MonotonicFromWall(wall, absl::Now(), MonotonicTime::Now());
}

absl::Time WallFromMonotonic(MonotonicTime monotonic, absl::Time wall_now,
                             MonotonicTime monotonic_now) {
  return wall_now + (monotonic - monotonic_now);
}

absl::Time WallFromMonotonic(MonotonicTime monotonic) {
  if (monotonic == MonotonicTime::InfiniteFuture()) {
    return absl::InfiniteFuture();
  }
  if (monotonic == MonotonicTime::InfinitePast()) return absl::InfinitePast();
  return WallFromMonotonic(monotonic, absl::Now(), MonotonicTime::Now());
}

}  // namespace h2rpc::transport::io
