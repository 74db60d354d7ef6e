#include "rpc/internal/client/retry.h"

#include "gtest/gtest.h"

namespace h2rpc::internal {
namespace {

RetryPolicy Policy() {
  RetryPolicy policy;
  policy.max_attempts = 4;
  policy.initial_backoff = absl::Milliseconds(100);
  policy.max_backoff = absl::Milliseconds(300);
  policy.backoff_multiplier = 2;
  policy.retryable_status_codes.Add(StatusCode::kUnavailable);
  return policy;
}

const Status kUnavailable(StatusCode::kUnavailable, "down");

TEST(RetryTest, BackoffGrowsByTheMultiplierUpToTheMaximumTimesTheRandom) {
  const RetryPolicy policy = Policy();
  RetryState state;
  Metadata none;
  // uniform01 = 1 shows the ceiling: 100, 200, then 300 (capped) ms.
  EXPECT_EQ(NextRetryDelay(policy, kUnavailable, none, nullptr, 1.0, &state),
            absl::Milliseconds(100));
  EXPECT_EQ(NextRetryDelay(policy, kUnavailable, none, nullptr, 0.5, &state),
            absl::Milliseconds(100));
  EXPECT_EQ(NextRetryDelay(policy, kUnavailable, none, nullptr, 1.0, &state),
            absl::Milliseconds(300));
  EXPECT_EQ(state.attempts, 4);
  // max_attempts made: no more.
  EXPECT_EQ(NextRetryDelay(policy, kUnavailable, none, nullptr, 1.0, &state),
            absl::nullopt);
}

TEST(RetryTest, OnlyRetryableStatusesAreRetried) {
  const RetryPolicy policy = Policy();
  RetryState state;
  Metadata none;
  EXPECT_EQ(NextRetryDelay(policy, Status(), none, nullptr, 1.0, &state),
            absl::nullopt);
  EXPECT_EQ(NextRetryDelay(policy, Status(StatusCode::kInternal, "x"), none,
                           nullptr, 1.0, &state),
            absl::nullopt);
  EXPECT_EQ(state.attempts, 1);
}

TEST(RetryTest, AServerPushbackSetsTheDelayOrForbidsTheRetry) {
  const RetryPolicy policy = Policy();
  RetryState state;
  Metadata wait;
  wait.Add(kRetryPushbackHeader, "1500");
  EXPECT_EQ(NextRetryDelay(policy, kUnavailable, wait, nullptr, 0.0, &state),
            absl::Milliseconds(1500));
  // The backoff starts over after a pushback.
  Metadata none;
  EXPECT_EQ(NextRetryDelay(policy, kUnavailable, none, nullptr, 1.0, &state),
            absl::Milliseconds(100));
  for (const char* no : {"-1", "soon", ""}) {
    SCOPED_TRACE(no);
    Metadata refuse;
    refuse.Add(kRetryPushbackHeader, no);
    RetryState fresh;
    EXPECT_EQ(
        NextRetryDelay(policy, kUnavailable, refuse, nullptr, 1.0, &fresh),
        absl::nullopt);
  }
}

TEST(RetryTest, TheThrottleStopsRetriesBelowHalfItsTokens) {
  RetryThrottling config;
  config.max_tokens = 4;
  config.token_ratio_milli = 500;  // 0.5
  RetryThrottle throttle(config);
  const RetryPolicy policy = Policy();
  Metadata none;
  // A failure takes its token first: 4 -> 3 tokens, still above 2.
  RetryState a;
  EXPECT_TRUE(NextRetryDelay(policy, kUnavailable, none, &throttle, 1.0, &a)
                  .has_value());
  // 3 -> 2: not above half any more.
  RetryState b;
  EXPECT_FALSE(NextRetryDelay(policy, kUnavailable, none, &throttle, 1.0, &b)
                   .has_value());
  EXPECT_EQ(throttle.tokens_milli(), 2000);
  // Successes give back half a token each; the failure's own token is
  // taken before the check, as in gRPC: 3.5 -> 2.5 allows a retry.
  for (int i = 0; i < 3; ++i)
    CountOutcome(Status(), StatusCodeSet(), &throttle);
  EXPECT_EQ(throttle.tokens_milli(), 3500);
  RetryState c;
  EXPECT_TRUE(NextRetryDelay(policy, kUnavailable, none, &throttle, 1.0, &c)
                  .has_value());
  // Never below zero, never above the maximum.
  for (int i = 0; i < 10; ++i) throttle.OnFailure();
  EXPECT_EQ(throttle.tokens_milli(), 0);
  for (int i = 0; i < 100; ++i) throttle.OnSuccess();
  EXPECT_EQ(throttle.tokens_milli(), 4000);
}

}  // namespace
}  // namespace h2rpc::internal
