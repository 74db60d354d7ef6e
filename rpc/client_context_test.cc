#include "rpc/client_context.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace h2rpc {
namespace {

// The conversions themselves are tested in transport/io/monotonic_time_test;
// these check that the context applies them at its API.

TEST(ClientContextTest, NoDeadlineByDefault) {
  ClientContext context;
  EXPECT_EQ(context.deadline(), absl::InfiniteFuture());
}

TEST(ClientContextTest, DeadlinesRoundTripThroughTheMonotonicClock) {
  ClientContext context;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  context.set_deadline(deadline);
  EXPECT_LE(absl::AbsDuration(context.deadline() - deadline),
            absl::Milliseconds(100));
  context.set_deadline(absl::InfiniteFuture());
  EXPECT_EQ(context.deadline(), absl::InfiniteFuture());
  context.set_deadline(absl::InfinitePast());
  EXPECT_EQ(context.deadline(), absl::InfinitePast());
}

TEST(ClientContextTest, TimeoutIsFromNow) {
  ClientContext context;
  const absl::Time before = absl::Now();
  context.set_timeout(absl::Seconds(5));
  const absl::Time after = absl::Now();
  EXPECT_GE(context.deadline(),
            before + absl::Seconds(5) - absl::Milliseconds(100));
  EXPECT_LE(context.deadline(),
            after + absl::Seconds(5) + absl::Milliseconds(100));
  context.set_timeout(absl::InfiniteDuration());
  EXPECT_EQ(context.deadline(), absl::InfiniteFuture());
}

}  // namespace
}  // namespace h2rpc
