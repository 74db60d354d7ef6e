#ifndef H2RPC_RPC_INTERNAL_CLIENT_RETRY_H_
#define H2RPC_RPC_INTERNAL_CLIENT_RETRY_H_

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "base/metadata.h"
#include "rpc/internal/config/service_config.h"
#include "rpc/status.h"

namespace h2rpc::internal {

// The trailer a server sends to steer retries (gRPC's A6): a delay in
// milliseconds before the next attempt, or a negative or malformed value:
// do not retry.
inline constexpr char kRetryPushbackHeader[] = "grpc-retry-pushback-ms";

// retryThrottling's token bucket (gRPC's A6), one per channel: a failed
// call (a retryable status, or a server's "do not retry" pushback) takes a
// token, a successful one gives back token_ratio of one; retries are
// allowed only while more than half the tokens are left. Loop thread only;
// never allocates.
class RetryThrottle {
 public:
  explicit RetryThrottle(const RetryThrottling& config)
      : max_milli_(int64_t{config.max_tokens} * 1000),
        ratio_milli_(config.token_ratio_milli),
        tokens_milli_(max_milli_) {}

  void OnSuccess() {
    tokens_milli_ = std::min(max_milli_, tokens_milli_ + ratio_milli_);
  }
  void OnFailure() {
    tokens_milli_ = std::max<int64_t>(0, tokens_milli_ - 1000);
  }
  bool RetriesAllowed() const { return tokens_milli_ * 2 > max_milli_; }
  int64_t tokens_milli() const { return tokens_milli_; }

 private:
  const int64_t max_milli_;
  const int64_t ratio_milli_;
  int64_t tokens_milli_;
};

// Where one call stands with its retryPolicy: attempts made and the
// exponent of the next backoff. Reset for each call.
struct RetryState {
  int attempts = 1;          // made so far, the first included
  int backoff_exponent = 0;  // of the next backoff: initial * multiplier^n
};

// The delay before the next attempt of a call whose attempt ended with
// `status` and `trailing` metadata, uncommitted (no response headers), or
// nullopt when it must not be retried: OK, a status not in the policy's
// retryableStatusCodes, max_attempts reached, a pushback saying no, or the
// throttle (null: none) out of tokens. Counts the outcome in `throttle`
// and moves `state` on. The backoff is `uniform01` (a number in [0, 1))
// times min(initial_backoff * backoff_multiplier^n, max_backoff); a valid
// pushback replaces it (and starts the backoff over). Never allocates.
absl::optional<absl::Duration> NextRetryDelay(
    const RetryPolicy& policy, const Status& status, const Metadata& trailing,
    RetryThrottle* throttle, double uniform01, RetryState* state);

// Counts a finished call's outcome in `throttle` when it had no retry
// policy (or was committed): OK gives a token back, a status in
// `retryable` (empty without a policy) takes one.
void CountOutcome(const Status& status, const StatusCodeSet& retryable,
                  RetryThrottle* throttle);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_RETRY_H_
