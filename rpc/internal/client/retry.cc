#include "rpc/internal/client/retry.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"

namespace h2rpc::internal {

absl::optional<absl::Duration> NextRetryDelay(
    const RetryPolicy& policy, const Status& status, const Metadata& trailing,
    RetryThrottle* throttle, double uniform01, RetryState* state) {
  if (status.ok()) {
    if (throttle != nullptr) throttle->OnSuccess();
    return absl::nullopt;
  }
  const absl::optional<absl::string_view> pushback =
      trailing.Get(kRetryPushbackHeader);
  int64_t pushback_ms = -1;
  const bool pushback_valid = pushback.has_value() &&
                              absl::SimpleAtoi(*pushback, &pushback_ms) &&
                              pushback_ms >= 0;
  const bool retryable = policy.retryable_status_codes.Contains(status.code());
  const bool server_says_no = pushback.has_value() && !pushback_valid;
  if (!retryable && !server_says_no) return absl::nullopt;
  // A retryable failure, or the server's "do not retry": counted.
  if (throttle != nullptr) throttle->OnFailure();
  if (server_says_no) return absl::nullopt;
  if (state->attempts >= policy.max_attempts) return absl::nullopt;
  if (throttle != nullptr && !throttle->RetriesAllowed()) {
    return absl::nullopt;
  }
  ++state->attempts;
  if (pushback_valid) {
    state->backoff_exponent = 0;
    return absl::Milliseconds(pushback_ms);
  }
  const double scale =
      std::pow(policy.backoff_multiplier, state->backoff_exponent++);
  const absl::Duration ceiling =
      std::min(policy.initial_backoff * scale, policy.max_backoff);
  return ceiling * uniform01;
}

void CountOutcome(const Status& status, const StatusCodeSet& retryable,
                  RetryThrottle* throttle) {
  if (throttle == nullptr) return;
  if (status.ok()) {
    throttle->OnSuccess();
  } else if (retryable.Contains(status.code())) {
    throttle->OnFailure();
  }
}

}  // namespace h2rpc::internal
