#ifndef H2RPC_RPC_INTERNAL_CONFIG_SERVICE_CONFIG_H_
#define H2RPC_RPC_INTERNAL_CONFIG_SERVICE_CONFIG_H_

// gRPC's service config (doc/service_config.md; retries and hedging from
// gRFC A6, health checking from A17), parsed from its JSON form into plain
// structs. The channel reads the result; nothing here acts on it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "base/status.h"
#include "base/status_code.h"

namespace h2rpc::internal {

// A set of status codes (0 to kMaxStatusCode), as a bit mask: copying and
// Contains() never allocate.
class StatusCodeSet {
 public:
  // `code` is a valid code: 0 to kMaxStatusCode.
  void Add(StatusCode code) { bits_ |= Bit(code); }
  bool Contains(StatusCode code) const { return (bits_ & Bit(code)) != 0; }
  bool empty() const { return bits_ == 0; }

  friend bool operator==(StatusCodeSet a, StatusCodeSet b) {
    return a.bits_ == b.bits_;
  }
  friend bool operator!=(StatusCodeSet a, StatusCodeSet b) { return !(a == b); }

 private:
  static uint32_t Bit(StatusCode code) {
    return uint32_t{1} << static_cast<int>(code);
  }
  uint32_t bits_ = 0;
};

// Largest maxAttempts honoured for retries and hedging (gRFC A6); a larger
// value in the config is lowered to it.
inline constexpr int kMaxRetryAttempts = 5;

// `retryPolicy` (gRFC A6): retry a failed call whose status is in
// retryable_status_codes, up to max_attempts attempts in all, waiting a
// random time in [0, min(initial_backoff * backoff_multiplier^(n-1),
// max_backoff)) before the n-th retry.
struct RetryPolicy {
  int max_attempts = 2;                  // [2, kMaxRetryAttempts]
  absl::Duration initial_backoff;        // > 0
  absl::Duration max_backoff;            // > 0
  double backoff_multiplier = 1;         // > 0, finite
  StatusCodeSet retryable_status_codes;  // not empty
};

// `hedgingPolicy` (gRFC A6): send up to max_attempts copies of a call,
// hedging_delay apart; a copy failing with a status in
// non_fatal_status_codes lets the others go on.
struct HedgingPolicy {
  int max_attempts = 2;                  // [2, kMaxRetryAttempts]
  absl::Duration hedging_delay;          // >= 0; zero: all at once
  StatusCodeSet non_fatal_status_codes;  // may be empty
};

// One `methodConfig` entry. An unset field leaves the channel's or the call's
// own setting alone.
struct MethodConfig {
  absl::optional<bool> wait_for_ready;
  // >= 0, at most 315576000000 s (proto3 Duration). gRPC C++ applies no
  // deadline for a zero timeout.
  absl::optional<absl::Duration> timeout;
  // Bytes of a serialized, uncompressed message; 0 allows only empty ones.
  absl::optional<uint32_t> max_request_message_bytes;
  absl::optional<uint32_t> max_response_message_bytes;
  // At most one of the two is set.
  absl::optional<RetryPolicy> retry_policy;
  absl::optional<HedgingPolicy> hedging_policy;
};

// `retryThrottling` (gRFC A6): the token bucket that stops retries and hedges
// when too many calls fail.
struct RetryThrottling {
  int max_tokens = 1;  // [1, 1000]
  // tokenRatio in thousandths, its digits past the third decimal place
  // dropped as gRPC does (0.1239 -> 123); >= 1.
  int64_t token_ratio_milli = 1;
};

// The load-balancing policies a channel can make, for loadBalancingConfig
// and loadBalancingPolicy. Any thread.
class LbPolicyCatalog {
 public:
  // OK for a policy the channel has whose `config` (JSON text of the
  // policy's object) is good; NOT_FOUND for a name it has no policy of;
  // another error, saying what is wrong, for a bad config.
  virtual Status Check(absl::string_view name,
                       absl::string_view config) const = 0;
  // The policies' names for messages: "pick_first, round_robin".
  virtual std::string Names() const = 0;

 protected:
  ~LbPolicyCatalog() = default;
};

// h2rpc's own policies: pick_first (whose shuffleAddressList, when set, is
// a boolean) and round_robin.
const LbPolicyCatalog& BuiltinLbPolicies();

// A proto3 JSON Duration: seconds with up to 9 decimal places and an "s"
// suffix ("1s", "1.5s", "0.000000001s"; ".5s" too, as in gRFC A6's
// examples), not negative, at most 315576000000 s. False with `*why`
// ("must be ...") otherwise.
bool ParseJsonDuration(absl::string_view text, absl::Duration* out,
                       std::string* why);

// Limits on the JSON text, against inputs that would take much memory.
struct ServiceConfigLimits {
  // Deepest nesting of arrays and objects accepted; the top-level object is
  // depth 1. gRPC's JSON reader allows 255.
  size_t max_nesting_depth = 255;
};

// A parsed service config. Copyable; built only by ParseServiceConfig.
// Not thread-safe to modify; const methods may run on any number of threads
// at once.
class ServiceConfig {
 public:
  // The first entry of `loadBalancingConfig` naming a policy the channel
  // has (LbPolicyCatalog), or the deprecated `loadBalancingPolicy` when
  // `loadBalancingConfig` is absent.
  struct LoadBalancingConfig {
    std::string policy;         // its name, as the catalog knows it
    std::string config = "{}";  // its object, as JSON text
  };

  absl::optional<LoadBalancingConfig> load_balancing;
  // `healthCheckConfig.serviceName` (gRFC A17): set when present, which turns
  // client-side health checking on; "" asks for the server's overall health.
  absl::optional<std::string> health_check_service_name;
  absl::optional<RetryThrottling> retry_throttling;

  // Every `methodConfig` entry, in order, including any without names (which
  // FindMethodConfig never returns).
  const std::vector<MethodConfig>& method_configs() const {
    return method_configs_;
  }

  // The config that applies to a call of `method_path` ("/service/method",
  // as sent in :path): the entry naming that service and method, else the
  // one naming the service alone, else the default entry (empty service);
  // null if none. Never allocates. The pointer lives as long as this object
  // is neither modified nor destroyed.
  const MethodConfig* FindMethodConfig(absl::string_view method_path) const;

 private:
  friend Status ParseServiceConfig(absl::string_view json, ServiceConfig* out,
                                   const ServiceConfigLimits& limits,
                                   const LbPolicyCatalog& policies);

  std::vector<MethodConfig> method_configs_;
  // Sorted by key: "/service/method" or "/service/" (a whole service), each
  // to its index in method_configs_. Sorted strings rather than a map of
  // views, so copies stay valid and lookups take a string_view.
  std::vector<std::pair<std::string, size_t>> index_;
  // Index in method_configs_ of the default entry, or -1.
  int64_t default_index_ = -1;
};

// Parses `json`, a service config in gRPC's JSON form, into *out. Strict JSON
// (RFC 8259: no comments, no trailing commas, UTF-8); a key repeated in one
// object is an error, as in gRPC. Fields h2rpc does not know are ignored at
// every level, and a field whose value is null counts as absent.
//
// `loadBalancingConfig` takes the first entry naming a policy `policies`
// has (checking its config), skipping the others; `loadBalancingPolicy`
// must name one (any case). Numbers may be given as JSON numbers or as strings
// (proto3 JSON), durations only as strings ("1.5s").
//
// Returns OK, or INVALID_ARGUMENT with a message naming the JSON path of the
// offending field and what is wrong, e.g. "service config:
// methodConfig[1].retryPolicy.maxAttempts: must be at least 2, got 1"; *out
// is written only on success. Any thread; allocates the result.
Status ParseServiceConfig(
    absl::string_view json, ServiceConfig* out,
    const ServiceConfigLimits& limits = {},
    const LbPolicyCatalog& policies = BuiltinLbPolicies());

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CONFIG_SERVICE_CONFIG_H_
