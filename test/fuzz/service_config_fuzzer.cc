// Fuzzes rpc/internal/config/service_config: ParseServiceConfig on arbitrary
// text.
// Invariants:
//  * It never crashes, and parsing the same text twice gives the same result.
//  * A failure is INVALID_ARGUMENT with a printable-ASCII message starting
//    "service config: ", and leaves the output as it was.
//  * A success holds only values within the documented ranges, and
//    FindMethodConfig returns null or one of method_configs().
//  * A lower nesting limit never accepts what the default one refuses.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/status.h"
#include "base/status_code.h"
#include "rpc/internal/config/service_config.h"

namespace {

using h2rpc::Status;
using h2rpc::StatusCode;
using h2rpc::internal::HedgingPolicy;
using h2rpc::internal::kMaxRetryAttempts;
using h2rpc::internal::MethodConfig;
using h2rpc::internal::ParseServiceConfig;
using h2rpc::internal::RetryPolicy;
using h2rpc::internal::ServiceConfig;
using h2rpc::internal::ServiceConfigLimits;

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckError(const Status& status) {
  Check(status.code() == StatusCode::kInvalidArgument);
  const std::string& message = status.message();
  Check(message.rfind("service config: ", 0) == 0);
  for (char c : message) Check(c >= 0x20 && c < 0x7f);
}

void CheckRetryPolicy(const RetryPolicy& retry) {
  Check(retry.max_attempts >= 2 && retry.max_attempts <= kMaxRetryAttempts);
  Check(retry.initial_backoff > absl::ZeroDuration());
  Check(retry.max_backoff > absl::ZeroDuration());
  Check(std::isfinite(retry.backoff_multiplier) &&
        retry.backoff_multiplier > 0);
  Check(!retry.retryable_status_codes.empty());
}

void CheckHedgingPolicy(const HedgingPolicy& hedging) {
  Check(hedging.max_attempts >= 2 && hedging.max_attempts <= kMaxRetryAttempts);
  Check(hedging.hedging_delay >= absl::ZeroDuration());
}

void CheckConfig(const ServiceConfig& config, absl::string_view input) {
  for (const MethodConfig& method : config.method_configs()) {
    Check(!(method.retry_policy.has_value() &&
            method.hedging_policy.has_value()));
    if (method.retry_policy.has_value()) CheckRetryPolicy(*method.retry_policy);
    if (method.hedging_policy.has_value()) {
      CheckHedgingPolicy(*method.hedging_policy);
    }
    if (method.timeout.has_value()) {
      Check(*method.timeout >= absl::ZeroDuration());
      Check(*method.timeout < absl::Seconds(315576000001));
    }
  }
  if (config.retry_throttling.has_value()) {
    Check(config.retry_throttling->max_tokens >= 1 &&
          config.retry_throttling->max_tokens <= 1000);
    Check(config.retry_throttling->token_ratio_milli >= 1);
  }
  // Lookups of fixed paths and of pieces of the input.
  const std::vector<MethodConfig>& all = config.method_configs();
  for (absl::string_view path :
       {absl::string_view("/a/b"), absl::string_view(""), input.substr(0, 16),
        input.substr(input.size() / 2)}) {
    const MethodConfig* found = config.FindMethodConfig(path);
    Check(found == nullptr ||
          (found >= all.data() && found < all.data() + all.size()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  ServiceConfig config;
  config.health_check_service_name = "untouched";
  const Status status = ParseServiceConfig(input, &config);
  if (status.ok()) {
    CheckConfig(config, input);
  } else {
    CheckError(status);
    Check(config.health_check_service_name == "untouched");
    Check(config.method_configs().empty());
  }

  ServiceConfig again;
  const Status repeated = ParseServiceConfig(input, &again);
  Check(repeated == status);
  Check(again.method_configs().size() == config.method_configs().size());

  ServiceConfigLimits shallow;
  shallow.max_nesting_depth = 3;
  ServiceConfig limited;
  const Status limited_status = ParseServiceConfig(input, &limited, shallow);
  if (!status.ok()) Check(!limited_status.ok());
  if (!limited_status.ok()) CheckError(limited_status);
  return 0;
}
