#ifndef H2RPC_TEST_UTIL_JITTER_H_
#define H2RPC_TEST_UTIL_JITTER_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace h2rpc::testing {

// Busy-waits for `duration`, so that a stress test's next step falls at a
// different point among other threads' work (their polls, sleeps, timeouts
// and wake-ups) from round to round. Nothing should wait on it: it varies
// interleavings, it does not make anything happen.
inline void Jitter(absl::Duration duration) {
  const absl::Time end = absl::Now() + duration;
  while (absl::Now() < end) {
  }
}

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_JITTER_H_
