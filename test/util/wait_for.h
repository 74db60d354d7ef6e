#ifndef H2RPC_TEST_UTIL_WAIT_FOR_H_
#define H2RPC_TEST_UTIL_WAIT_FOR_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace h2rpc::testing {

// Generous: only catches hangs, never measures speed.
inline constexpr absl::Duration kHangTimeout = absl::Seconds(30);

// Polls `condition` (every millisecond) until it holds (true) or `timeout`
// passes (false). For conditions another thread makes true that offer no
// notification to wait on.
template <class Condition>
bool WaitFor(Condition condition, absl::Duration timeout = kHangTimeout) {
  const absl::Time give_up = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_WAIT_FOR_H_
