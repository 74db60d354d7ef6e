#include "rpc/internal/config/service_config.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/status.h"
#include "base/status_code.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::internal {
namespace {


ServiceConfig ParseOk(const std::string& json) {
  ServiceConfig config;
  const Status status = ParseServiceConfig(json, &config);
  EXPECT_TRUE(status.ok()) << json << ": " << status.ToString();
  return config;
}

// The one method config of `{"methodConfig": [<method_config>]}`.
MethodConfig ParseMethodConfig(const std::string& method_config) {
  const ServiceConfig config =
      ParseOk(absl::StrCat(R"({"methodConfig": [)", method_config, "]}"));
  if (config.method_configs().size() != 1) {
    ADD_FAILURE() << "no method config in " << method_config;
    return MethodConfig();
  }
  return config.method_configs()[0];
}

StatusCodeSet Codes(std::initializer_list<StatusCode> codes) {
  StatusCodeSet set;
  for (StatusCode code : codes) set.Add(code);
  return set;
}

TEST(StatusCodeSetTest, AddAndContains) {
  StatusCodeSet set;
  EXPECT_TRUE(set.empty());
  set.Add(StatusCode::kUnavailable);
  set.Add(StatusCode::kUnauthenticated);
  EXPECT_FALSE(set.empty());
  for (int code = 0; code <= kMaxStatusCode; ++code) {
    EXPECT_EQ(set.Contains(static_cast<StatusCode>(code)),
              code == 14 || code == 16)
        << code;
  }
}

TEST(ServiceConfigTest, EmptyObjectSetsNothing) {
  const ServiceConfig config = ParseOk("{}");
  EXPECT_FALSE(config.load_balancing.has_value());
  EXPECT_FALSE(config.health_check_service_name.has_value());
  EXPECT_FALSE(config.retry_throttling.has_value());
  EXPECT_TRUE(config.method_configs().empty());
  EXPECT_EQ(config.FindMethodConfig("/svc/Method"), nullptr);
}

TEST(ServiceConfigTest, LoadBalancing) {
  struct Case {
    std::string json;
    std::string policy;
    std::string config;
  };
  const Case cases[] = {
      {R"({"loadBalancingConfig": [{"round_robin": {}}]})", "round_robin",
       "{}"},
      {R"({"loadBalancingConfig": [{"pick_first": {}}]})", "pick_first", "{}"},
      {R"({"loadBalancingConfig": [{"pick_first":
            {"shuffleAddressList": true}}]})",
       "pick_first", R"({"shuffleAddressList":true})"},
      {R"({"loadBalancingConfig": [{"pick_first":
            {"shuffleAddressList": null}}]})",
       "pick_first", R"({"shuffleAddressList":null})"},
      // Unsupported policies are skipped, whatever their config.
      {R"({"loadBalancingConfig": [{"xds_wrr": {"x": [1]}}, {"grpclb": {}},
            {"round_robin": {"unknown": 1}}]})",
       "round_robin", R"({"unknown":1})"},
      // Entries after the chosen one are not looked at.
      {R"({"loadBalancingConfig": [{"round_robin": {}}, 5, {"a": 1, "b": 2}]})",
       "round_robin", "{}"},
      // The deprecated field, any case.
      {R"({"loadBalancingPolicy": "ROUND_ROBIN"})", "round_robin", "{}"},
      {R"({"loadBalancingPolicy": "Pick_First"})", "pick_first", "{}"},
      // loadBalancingConfig wins over loadBalancingPolicy.
      {R"({"loadBalancingPolicy": "round_robin",
           "loadBalancingConfig": [{"pick_first": {}}]})",
       "pick_first", "{}"},
      // A null loadBalancingConfig is absent.
      {R"({"loadBalancingConfig": null, "loadBalancingPolicy": "round_robin"})",
       "round_robin", "{}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    const ServiceConfig config = ParseOk(c.json);
    ASSERT_TRUE(config.load_balancing.has_value());
    EXPECT_EQ(config.load_balancing->policy, c.policy);
    EXPECT_EQ(config.load_balancing->config, c.config);
  }
  // An empty loadBalancingPolicy is ignored, as in gRPC.
  EXPECT_FALSE(
      ParseOk(R"({"loadBalancingPolicy": ""})").load_balancing.has_value());
}

// A channel's own catalog: the policies it has, and their config checks.
TEST(ServiceConfigTest, LoadBalancingWithAChannelsPolicies) {
  class Catalog final : public LbPolicyCatalog {
   public:
    Status Check(absl::string_view name,
                 absl::string_view config) const override {
      if (name != "weighted") return BuiltinLbPolicies().Check(name, config);
      if (config == "{}") return Status();
      return Status(StatusCode::kInvalidArgument, "takes no settings");
    }
    std::string Names() const override {
      return "weighted, " + BuiltinLbPolicies().Names();
    }
  };
  const Catalog catalog;
  ServiceConfig config;
  ASSERT_TRUE(ParseServiceConfig(R"({"loadBalancingConfig":
      [{"other": {}}, {"weighted": {}}, {"round_robin": {}}]})",
                                 &config, {}, catalog)
                  .ok());
  EXPECT_EQ(config.load_balancing->policy, "weighted");
  Status status = ParseServiceConfig(
      R"({"loadBalancingConfig": [{"weighted": {"x": 1}}]})", &config, {},
      catalog);
  EXPECT_EQ(status.message(),
            "service config: loadBalancingConfig[0].weighted: takes no "
            "settings");
  status = ParseServiceConfig(R"({"loadBalancingConfig": [{"other": {}}]})",
                              &config, {}, catalog);
  EXPECT_EQ(status.message(),
            "service config: loadBalancingConfig: names no policy this "
            "channel has (weighted, pick_first, round_robin); got "
            R"(["other"])");
}

TEST(ServiceConfigTest, HealthCheckConfig) {
  EXPECT_EQ(ParseOk(R"({"healthCheckConfig": {"serviceName": "pkg.Svc"}})")
                .health_check_service_name,
            "pkg.Svc");
  EXPECT_EQ(ParseOk(R"({"healthCheckConfig": {"serviceName": ""}})")
                .health_check_service_name,
            "");
  EXPECT_FALSE(ParseOk(R"({"healthCheckConfig": {}})")
                   .health_check_service_name.has_value());
}

TEST(ServiceConfigTest, MethodConfigFields) {
  const MethodConfig config = ParseMethodConfig(R"({
      "name": [{"service": "pkg.Svc"}],
      "waitForReady": true,
      "timeout": "1.5s",
      "maxRequestMessageBytes": 1024,
      "maxResponseMessageBytes": "4294967295"})");
  EXPECT_EQ(config.wait_for_ready, true);
  EXPECT_EQ(config.timeout, absl::Milliseconds(1500));
  EXPECT_EQ(config.max_request_message_bytes, 1024u);
  EXPECT_EQ(config.max_response_message_bytes, 4294967295u);
  EXPECT_FALSE(config.retry_policy.has_value());
  EXPECT_FALSE(config.hedging_policy.has_value());

  const MethodConfig empty = ParseMethodConfig(R"({
      "name": [{"service": "pkg.Svc"}], "waitForReady": null,
      "timeout": null, "maxRequestMessageBytes": 0})");
  EXPECT_FALSE(empty.wait_for_ready.has_value());
  EXPECT_FALSE(empty.timeout.has_value());
  EXPECT_EQ(empty.max_request_message_bytes, 0u);
  EXPECT_FALSE(empty.max_response_message_bytes.has_value());
}

TEST(ServiceConfigTest, Durations) {
  struct Case {
    std::string text;
    absl::Duration value;
  };
  const Case cases[] = {
      {"0s", absl::ZeroDuration()},
      {"-0s", absl::ZeroDuration()},
      {"1s", absl::Seconds(1)},
      {"1.5s", absl::Milliseconds(1500)},
      {".1s", absl::Milliseconds(100)},
      {"0.000000001s", absl::Nanoseconds(1)},
      {"00010.250s", absl::Milliseconds(10250)},
      {"315576000000.999999999s",
       absl::Seconds(315576000000) + absl::Nanoseconds(999999999)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const MethodConfig config =
        ParseMethodConfig(absl::StrCat(R"({"timeout": ")", c.text, R"("})"));
    EXPECT_EQ(config.timeout, c.value);
  }
}

TEST(ServiceConfigTest, RetryPolicy) {
  const MethodConfig config = ParseMethodConfig(R"({"retryPolicy": {
      "maxAttempts": 3,
      "initialBackoff": ".1s",
      "maxBackoff": "2s",
      "backoffMultiplier": 1.5,
      "retryableStatusCodes": ["UNAVAILABLE", 4, "UNAVAILABLE"]}})");
  ASSERT_TRUE(config.retry_policy.has_value());
  const RetryPolicy& retry = *config.retry_policy;
  EXPECT_EQ(retry.max_attempts, 3);
  EXPECT_EQ(retry.initial_backoff, absl::Milliseconds(100));
  EXPECT_EQ(retry.max_backoff, absl::Seconds(2));
  EXPECT_EQ(retry.backoff_multiplier, 1.5);
  EXPECT_EQ(retry.retryable_status_codes,
            Codes({StatusCode::kUnavailable, StatusCode::kDeadlineExceeded}));
}

TEST(ServiceConfigTest, RetryPolicyNumbersAsStringsAndMaxAttemptsCapped) {
  for (const char* attempts :
       {"6", "\"7\"", "99999999999999999999", "\"99999999999999999999\""}) {
    SCOPED_TRACE(attempts);
    const MethodConfig config = ParseMethodConfig(
        absl::StrCat(R"({"retryPolicy": {"maxAttempts": )", attempts, R"(,
          "initialBackoff": "1s", "maxBackoff": "1s",
          "backoffMultiplier": "2", "retryableStatusCodes": [14]}})"));
    ASSERT_TRUE(config.retry_policy.has_value());
    EXPECT_EQ(config.retry_policy->max_attempts, kMaxRetryAttempts);
    EXPECT_EQ(config.retry_policy->backoff_multiplier, 2);
  }
}

TEST(ServiceConfigTest, HedgingPolicy) {
  const MethodConfig config = ParseMethodConfig(R"({"hedgingPolicy": {
      "maxAttempts": "4",
      "hedgingDelay": "0.5s",
      "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", 10]}})");
  ASSERT_TRUE(config.hedging_policy.has_value());
  EXPECT_EQ(config.hedging_policy->max_attempts, 4);
  EXPECT_EQ(config.hedging_policy->hedging_delay, absl::Milliseconds(500));
  EXPECT_EQ(config.hedging_policy->non_fatal_status_codes,
            Codes({StatusCode::kUnavailable, StatusCode::kInternal,
                   StatusCode::kAborted}));

  const MethodConfig minimal =
      ParseMethodConfig(R"({"hedgingPolicy": {"maxAttempts": 10}})");
  ASSERT_TRUE(minimal.hedging_policy.has_value());
  EXPECT_EQ(minimal.hedging_policy->max_attempts, kMaxRetryAttempts);
  EXPECT_EQ(minimal.hedging_policy->hedging_delay, absl::ZeroDuration());
  EXPECT_TRUE(minimal.hedging_policy->non_fatal_status_codes.empty());
}

TEST(ServiceConfigTest, RetryThrottling) {
  struct Case {
    std::string max_tokens;
    std::string token_ratio;
    int expected_tokens;
    int64_t expected_milli;
  };
  const Case cases[] = {
      {"10", "0.1", 10, 100},
      {"1000", "1", 1000, 1000},
      {"\"1\"", "\"0.5\"", 1, 500},
      // Digits past the third decimal place are dropped, not rounded.
      {"5", "1.2349", 5, 1234},
      {"5", "0.0019999", 5, 1},
      // Exact from the text, where a double would be 1000.99999...
      {"5", "1.001", 5, 1001},
      {"5", "4294967295.999", 5, int64_t{4294967295} * 1000 + 999},
  };
  for (const Case& c : cases) {
    const std::string json =
        absl::StrCat(R"({"retryThrottling": {"maxTokens": )", c.max_tokens,
                     R"(, "tokenRatio": )", c.token_ratio, "}}");
    SCOPED_TRACE(json);
    const ServiceConfig config = ParseOk(json);
    ASSERT_TRUE(config.retry_throttling.has_value());
    EXPECT_EQ(config.retry_throttling->max_tokens, c.expected_tokens);
    EXPECT_EQ(config.retry_throttling->token_ratio_milli, c.expected_milli);
  }
}

TEST(ServiceConfigTest, UnknownFieldsAreIgnoredAtEveryLevel) {
  const ServiceConfig config = ParseOk(R"({
      "futureField": [1, {"a": null}],
      "healthCheckConfig": {"serviceName": "h", "other": 1},
      "methodConfig": [{"name": [{"service": "s", "x": 1}],
                        "perAttemptRecvTimeout": "1s", "timeout": "2s",
                        "retryPolicy": {"maxAttempts": 2,
                          "initialBackoff": "1s", "maxBackoff": "1s",
                          "backoffMultiplier": 2,
                          "retryableStatusCodes": ["ABORTED"],
                          "perAttemptRecvTimeout": "1s"}}],
      "retryThrottling": {"maxTokens": 1, "tokenRatio": 1, "extra": true}})");
  EXPECT_EQ(config.health_check_service_name, "h");
  ASSERT_EQ(config.method_configs().size(), 1u);
  EXPECT_EQ(config.method_configs()[0].timeout, absl::Seconds(2));
  EXPECT_TRUE(config.retry_throttling.has_value());
}

// Configs for the lookup tests: a default, a whole service, one method, and
// one without names.
constexpr char kLookupConfig[] = R"({"methodConfig": [
    {"name": [{}], "timeout": "1s"},
    {"name": [{"service": "pkg.Svc"}, {"service": "pkg.Other", "method": ""}],
     "timeout": "2s"},
    {"name": [{"service": "pkg.Svc", "method": "Exact"}], "timeout": "3s"},
    {"timeout": "4s"}]})";

absl::optional<absl::Duration> TimeoutFor(const ServiceConfig& config,
                                          absl::string_view path) {
  const MethodConfig* method = config.FindMethodConfig(path);
  if (method == nullptr) return absl::nullopt;
  return method->timeout;
}

TEST(ServiceConfigTest, FindMethodConfigMostSpecificFirst) {
  const ServiceConfig config = ParseOk(kLookupConfig);
  ASSERT_EQ(config.method_configs().size(), 4u);
  EXPECT_EQ(TimeoutFor(config, "/pkg.Svc/Exact"), absl::Seconds(3));
  EXPECT_EQ(TimeoutFor(config, "/pkg.Svc/Other"), absl::Seconds(2));
  EXPECT_EQ(TimeoutFor(config, "/pkg.Other/Any"), absl::Seconds(2));
  EXPECT_EQ(TimeoutFor(config, "/pkg.Unknown/Exact"), absl::Seconds(1));
  EXPECT_EQ(TimeoutFor(config, "/pkg.Sv/Exact"), absl::Seconds(1));
  EXPECT_EQ(TimeoutFor(config, "/pkg.Svc.X/Exact"), absl::Seconds(1));
  EXPECT_EQ(TimeoutFor(config, "garbage"), absl::Seconds(1));
  EXPECT_EQ(TimeoutFor(config, ""), absl::Seconds(1));
}

TEST(ServiceConfigTest, FindMethodConfigWithoutDefault) {
  const ServiceConfig config = ParseOk(R"({"methodConfig": [
      {"name": [{"service": "s", "method": "m"}], "timeout": "1s"},
      {"name": [], "timeout": "2s"}]})");
  EXPECT_EQ(TimeoutFor(config, "/s/m"), absl::Seconds(1));
  EXPECT_EQ(config.FindMethodConfig("/s/other"), nullptr);
  EXPECT_EQ(config.FindMethodConfig("/t/m"), nullptr);
  // A default named with an empty service and method.
  const ServiceConfig only_default = ParseOk(
      R"({"methodConfig": [{"name": [{"service": "", "method": ""}],
                            "waitForReady": true}]})");
  ASSERT_NE(only_default.FindMethodConfig("/a/b"), nullptr);
  EXPECT_EQ(only_default.FindMethodConfig("/a/b")->wait_for_ready, true);
}

TEST(ServiceConfigTest, FindMethodConfigDoesNotAllocate) {
  const ServiceConfig config = ParseOk(kLookupConfig);
  testing::AllocationCounter counter;
  int found = 0;
  for (absl::string_view path :
       {"/pkg.Svc/Exact", "/pkg.Svc/Other", "/pkg.Other/Any",
        "/pkg.Unknown/Exact", "garbage"}) {
    found += config.FindMethodConfig(path) != nullptr;
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(found, 5);
}

TEST(ServiceConfigTest, CopyLooksUpInItsOwnConfigs) {
  auto original = std::make_unique<ServiceConfig>(ParseOk(kLookupConfig));
  const ServiceConfig copy = *original;
  original.reset();
  const MethodConfig* exact = copy.FindMethodConfig("/pkg.Svc/Exact");
  EXPECT_EQ(exact, &copy.method_configs()[2]);
  EXPECT_EQ(copy.FindMethodConfig("/x/y"), &copy.method_configs()[0]);
}

TEST(ServiceConfigTest, FailureLeavesOutputUntouched) {
  ServiceConfig config = ParseOk(R"({"loadBalancingPolicy": "round_robin",
      "methodConfig": [{"name": [{}], "timeout": "1s"}]})");
  const Status status = ParseServiceConfig(
      R"({"loadBalancingPolicy": "pick_first", "methodConfig": 1})", &config);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(config.load_balancing.has_value());
  EXPECT_EQ(config.load_balancing->policy, "round_robin");
  EXPECT_EQ(TimeoutFor(config, "/a/b"), absl::Seconds(1));
}

struct InvalidCase {
  std::string json;
  std::string message;  // after "service config: "
};

void ExpectInvalid(const std::vector<InvalidCase>& cases) {
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.json);
    ServiceConfig config;
    const Status status = ParseServiceConfig(c.json, &config);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), "service config: " + c.message);
  }
}

// A service config whose methodConfig[0] has a valid retry policy except for
// `field`, set to `value` (JSON text), or absent when `value` is empty.
std::string RetryPolicyWith(absl::string_view field, absl::string_view value) {
  const std::pair<absl::string_view, absl::string_view> kValid[] = {
      {"maxAttempts", "2"},
      {"initialBackoff", R"("1s")"},
      {"maxBackoff", R"("1s")"},
      {"backoffMultiplier", "2"},
      {"retryableStatusCodes", R"(["UNAVAILABLE"])"},
  };
  std::vector<std::string> members;
  for (const auto& [name, valid] : kValid) {
    if (name == field && value.empty()) continue;
    members.push_back(
        absl::StrCat("\"", name, "\": ", name == field ? value : valid));
  }
  return absl::StrCat(R"({"methodConfig": [{"retryPolicy": {)",
                      absl::StrJoin(members, ", "), "}}]}");
}

// JSON errors come from JsonDocument (json_document_test.cc covers them),
// prefixed as config errors.
TEST(ServiceConfigTest, InvalidJson) {
  ExpectInvalid({
      {R"({"a": 1,})",
       "invalid JSON: parse error at line 1, column 9: syntax error while "
       "parsing object key - unexpected '}'; expected string literal"},
      {std::string("{}\0", 3), "invalid JSON: NUL at byte 2"},
  });
}

TEST(ServiceConfigTest, InvalidDocument) {
  ExpectInvalid({
      {R"({"a": 1, "b": 2, "a": 3})", R"(key "a" appears twice in one object)"},
      {R"({"methodConfig": [{"timeout": "1s", "timeout": "2s"}]})",
       R"(methodConfig[0]: key "timeout" appears twice in one object)"},
      {R"({"x y": [{"k": 1, "k": 1}]})",
       R"(["x y"][0]: key "k" appears twice in one object)"},
      {"[]", "must be a JSON object, got an array"},
      {"null", "must be a JSON object, got null"},
      {R"("text")", R"(must be a JSON object, got "text")"},
      {"1.50", "must be a JSON object, got 1.5"},
  });
}

TEST(ServiceConfigTest, NestingLimit) {
  ServiceConfig config;
  const auto nested = [](int depth) {
    return absl::StrCat(R"({"a": )", std::string(depth - 1, '['),
                        std::string(depth - 1, ']'), "}");
  };
  EXPECT_TRUE(ParseServiceConfig(nested(255), &config).ok());
  const Status status = ParseServiceConfig(nested(256), &config);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(
                ": nested deeper than 255 levels (max_nesting_depth)"),
            std::string::npos)
      << status.message();

  ServiceConfigLimits limits;
  limits.max_nesting_depth = 3;
  EXPECT_TRUE(ParseServiceConfig(nested(3), &config, limits).ok());
  const Status shallow = ParseServiceConfig(nested(4), &config, limits);
  EXPECT_EQ(shallow.message(),
            "service config: a[0][0]: nested deeper than 3 levels "
            "(max_nesting_depth)");
}

TEST(ServiceConfigTest, InvalidLoadBalancing) {
  ExpectInvalid({
      {R"({"loadBalancingConfig": {}})",
       "loadBalancingConfig: must be an array, got an object"},
      {R"({"loadBalancingConfig": []})",
       "loadBalancingConfig: names no policy this channel has "
       "(pick_first, round_robin); got []"},
      {R"({"loadBalancingConfig": [{"grpclb": {}}, {"xds": {}}]})",
       "loadBalancingConfig: names no policy this channel has "
       R"((pick_first, round_robin); got ["grpclb", "xds"])"},
      {R"({"loadBalancingConfig": [{"a": {}}, {"b": {}}, {"c": {}}, {"d": {}},
            {"e": {}}, {"f": {}}, {"g": {}}, {"h": {}}, {"i": {}}, {"j": {}}]})",
       "loadBalancingConfig: names no policy this channel has "
       R"((pick_first, round_robin); got ["a", "b", "c", "d", "e", "f", "g", "h", ...])"},
      {R"({"loadBalancingConfig": ["round_robin"]})",
       "loadBalancingConfig[0]: must be an object with exactly one key, the "
       R"(policy name, got "round_robin")"},
      {R"({"loadBalancingConfig": [{}]})",
       "loadBalancingConfig[0]: must be an object with exactly one key, the "
       "policy name, got 0 keys"},
      {R"({"loadBalancingConfig": [{"grpclb": {}},
            {"round_robin": {}, "pick_first": {}}]})",
       "loadBalancingConfig[1]: must be an object with exactly one key, the "
       "policy name, got 2 keys"},
      {R"({"loadBalancingConfig": [{"round_robin": []}]})",
       "loadBalancingConfig[0].round_robin: must be an object, got an array"},
      {R"({"loadBalancingConfig": [{"grpclb": null}, {"round_robin": {}}]})",
       "loadBalancingConfig[0].grpclb: must be an object, got null"},
      {R"({"loadBalancingConfig": [{"pick_first":
            {"shuffleAddressList": "yes"}}]})",
       "loadBalancingConfig[0].pick_first: shuffleAddressList: must be true "
       R"(or false, got "yes")"},
      {R"({"loadBalancingPolicy": 5})",
       "loadBalancingPolicy: must be a string, got 5"},
      {R"({"loadBalancingPolicy": "grpclb"})",
       R"(loadBalancingPolicy: unknown policy "grpclb" (this channel has )"
       "pick_first, round_robin)"},
      // Checked even when loadBalancingConfig decides.
      {R"({"loadBalancingConfig": [{"round_robin": {}}],
           "loadBalancingPolicy": "weighted"})",
       R"(loadBalancingPolicy: unknown policy "weighted" (this channel has )"
       "pick_first, round_robin)"},
  });
}

TEST(ServiceConfigTest, InvalidHealthCheckConfig) {
  ExpectInvalid({
      {R"({"healthCheckConfig": "svc"})",
       R"(healthCheckConfig: must be an object, got "svc")"},
      {R"({"healthCheckConfig": {"serviceName": 1}})",
       "healthCheckConfig.serviceName: must be a string, got 1"},
  });
}

TEST(ServiceConfigTest, InvalidMethodNames) {
  ExpectInvalid({
      {R"({"methodConfig": {}})",
       "methodConfig: must be an array, got an object"},
      {R"({"methodConfig": [{}, 1]})",
       "methodConfig[1]: must be an object, got 1"},
      {R"({"methodConfig": [{"name": {"service": "s"}}]})",
       "methodConfig[0].name: must be an array, got an object"},
      {R"({"methodConfig": [{"name": ["s"]}]})",
       R"(methodConfig[0].name[0]: must be an object, got "s")"},
      {R"({"methodConfig": [{"name": [{"service": 1}]}]})",
       "methodConfig[0].name[0].service: must be a string, got 1"},
      {R"({"methodConfig": [{"name": [{"service": "s", "method": []}]}]})",
       "methodConfig[0].name[0].method: must be a string, got an array"},
      {R"({"methodConfig": [{"name": [{"method": "Foo"}]}]})",
       R"(methodConfig[0].name[0]: names method "Foo" but no service)"},
      {R"({"methodConfig": [{"name": [{"service": "", "method": "Foo"}]}]})",
       R"(methodConfig[0].name[0]: names method "Foo" but no service)"},
      {R"({"methodConfig": [{"name": [{"service": "s", "method": "m"}]},
            {"name": [{"service": "t"}, {"service": "s", "method": "m"}]}]})",
       R"(methodConfig[1].name[1]: service "s" method "m" is already named )"
       "in methodConfig[0]"},
      {R"({"methodConfig": [{"name": [{"service": "s"},
                                       {"service": "s", "method": ""}]}]})",
       R"(methodConfig[0].name[1]: service "s" is already named in )"
       "methodConfig[0]"},
      {R"({"methodConfig": [{"name": [{}]}, {"name": [{"service": ""}]}]})",
       "methodConfig[1].name[0]: is a second default config (no service); "
       "methodConfig[0] is the first"},
  });
}

TEST(ServiceConfigTest, InvalidMethodFields) {
  const std::string duration_format =
      R"(must be a duration string like "1.5s" (seconds, up to 9 decimal )"
      "places, an s suffix), got ";
  ExpectInvalid({
      {R"({"methodConfig": [{"waitForReady": "true"}]})",
       R"(methodConfig[0].waitForReady: must be true or false, got "true")"},
      {R"({"methodConfig": [{"timeout": 1}]})",
       "methodConfig[0].timeout: " + duration_format + "1"},
      {R"({"methodConfig": [{"timeout": "1"}]})",
       "methodConfig[0].timeout: " + duration_format + R"("1")"},
      {R"({"methodConfig": [{"timeout": "1.s"}]})",
       "methodConfig[0].timeout: " + duration_format + R"("1.s")"},
      {R"({"methodConfig": [{"timeout": "s"}]})",
       "methodConfig[0].timeout: " + duration_format + R"("s")"},
      {R"({"methodConfig": [{"timeout": " 1s"}]})",
       "methodConfig[0].timeout: " + duration_format + R"(" 1s")"},
      {R"({"methodConfig": [{"timeout": "1e3s"}]})",
       "methodConfig[0].timeout: " + duration_format + R"("1e3s")"},
      {R"({"methodConfig": [{"timeout": "1.0000000001s"}]})",
       "methodConfig[0].timeout: " + duration_format + R"("1.0000000001s")"},
      {R"({"methodConfig": [{"timeout": "1ms"}]})",
       "methodConfig[0].timeout: " + duration_format + R"("1ms")"},
      {R"({"methodConfig": [{"timeout": "-1s"}]})",
       R"(methodConfig[0].timeout: must not be negative, got "-1s")"},
      {R"({"methodConfig": [{"timeout": "315576000001s"}]})",
       "methodConfig[0].timeout: must be at most 315576000000s, got "
       R"("315576000001s")"},
      {R"({"methodConfig": [{"timeout": "99999999999999999999s"}]})",
       "methodConfig[0].timeout: must be at most 315576000000s, got "
       R"("99999999999999999999s")"},
      {R"({"methodConfig": [{"maxRequestMessageBytes": -1}]})",
       "methodConfig[0].maxRequestMessageBytes: must be between 0 and "
       "4294967295, got -1"},
      {R"({"methodConfig": [{"maxRequestMessageBytes": 4294967296}]})",
       "methodConfig[0].maxRequestMessageBytes: must be between 0 and "
       "4294967295, got 4294967296"},
      {R"({"methodConfig": [{"maxResponseMessageBytes": "12a"}]})",
       R"(methodConfig[0].maxResponseMessageBytes: must be an integer, got )"
       R"("12a")"},
      {R"({"methodConfig": [{"maxResponseMessageBytes": 1.5}]})",
       "methodConfig[0].maxResponseMessageBytes: must be an integer, got 1.5"},
      {R"({"methodConfig": [{"maxResponseMessageBytes": 1e3}]})",
       "methodConfig[0].maxResponseMessageBytes: must be an integer, got 1e3"},
      {R"({"methodConfig": [{"maxResponseMessageBytes": true}]})",
       "methodConfig[0].maxResponseMessageBytes: must be an integer, got true"},
      {R"({"methodConfig": [{"maxResponseMessageBytes":
            100000000000000000000}]})",
       "methodConfig[0].maxResponseMessageBytes: must be between 0 and "
       "4294967295, got 100000000000000000000"},
      {R"({"methodConfig": [{"maxResponseMessageBytes":
            "-100000000000000000000"}]})",
       "methodConfig[0].maxResponseMessageBytes: must be between 0 and "
       R"(4294967295, got "-100000000000000000000")"},
      {R"({"methodConfig": [{"retryPolicy": {}, "hedgingPolicy": {}}]})",
       "methodConfig[0]: has both retryPolicy and hedgingPolicy; at most one "
       "is allowed"},
  });
}

TEST(ServiceConfigTest, InvalidRetryPolicy) {
  const std::string path = "methodConfig[0].retryPolicy";
  ExpectInvalid({
      {R"({"methodConfig": [{"retryPolicy": []}]})",
       path + ": must be an object, got an array"},
      // The example of the header's contract.
      {R"({"methodConfig": [{}, {"retryPolicy": {"maxAttempts": 1}}]})",
       "methodConfig[1].retryPolicy.maxAttempts: must be at least 2, got 1"},
      {RetryPolicyWith("maxAttempts", ""), path + ".maxAttempts: is required"},
      {RetryPolicyWith("maxAttempts", "-3"),
       path + ".maxAttempts: must be at least 2, got -3"},
      {RetryPolicyWith("maxAttempts", "\"x\""),
       path + R"(.maxAttempts: must be an integer, got "x")"},
      {RetryPolicyWith("initialBackoff", ""),
       path + ".initialBackoff: is required"},
      {RetryPolicyWith("initialBackoff", "\"0s\""),
       path + R"(.initialBackoff: must be greater than 0, got "0s")"},
      {RetryPolicyWith("maxBackoff", ""), path + ".maxBackoff: is required"},
      {RetryPolicyWith("maxBackoff", "\"0.000s\""),
       path + R"(.maxBackoff: must be greater than 0, got "0.000s")"},
      {RetryPolicyWith("maxBackoff", "1"),
       path + R"(.maxBackoff: must be a duration string like "1.5s" (seconds, )"
              "up to 9 decimal places, an s suffix), got 1"},
      {RetryPolicyWith("backoffMultiplier", ""),
       path + ".backoffMultiplier: is required"},
      {RetryPolicyWith("backoffMultiplier", "0"),
       path + ".backoffMultiplier: must be greater than 0, got 0"},
      {RetryPolicyWith("backoffMultiplier", "-1.5"),
       path + ".backoffMultiplier: must be greater than 0, got -1.5"},
      {RetryPolicyWith("backoffMultiplier", "\"abc\""),
       path + R"(.backoffMultiplier: must be a number, got "abc")"},
      {RetryPolicyWith("backoffMultiplier", "\"inf\""),
       path + R"(.backoffMultiplier: must be a finite number, got "inf")"},
      {RetryPolicyWith("backoffMultiplier", "[2]"),
       path + ".backoffMultiplier: must be a number, got an array"},
      {RetryPolicyWith("retryableStatusCodes", ""),
       path + ".retryableStatusCodes: is required and must not be empty"},
      {RetryPolicyWith("retryableStatusCodes", "[]"),
       path + ".retryableStatusCodes: must not be empty"},
      {RetryPolicyWith("retryableStatusCodes", "\"UNAVAILABLE\""),
       path + R"(.retryableStatusCodes: must be an array, got "UNAVAILABLE")"},
      {RetryPolicyWith("retryableStatusCodes", R"(["ABORTED", "BOGUS"])"),
       path + R"(.retryableStatusCodes[1]: unknown status code name "BOGUS")"},
      {RetryPolicyWith("retryableStatusCodes", R"(["unavailable"])"),
       path +
           R"(.retryableStatusCodes[0]: unknown status code name "unavailable")"},
      {RetryPolicyWith("retryableStatusCodes", "[17]"),
       path + ".retryableStatusCodes[0]: must be a status code from 0 to 16, "
              "got 17"},
      {RetryPolicyWith("retryableStatusCodes", "[-1]"),
       path + ".retryableStatusCodes[0]: must be a status code from 0 to 16, "
              "got -1"},
      {RetryPolicyWith("retryableStatusCodes", "[14.0]"),
       path + R"(.retryableStatusCodes[0]: must be a status code name such )"
              R"(as "UNAVAILABLE" or an integer, got 14.0)"},
      {RetryPolicyWith("retryableStatusCodes", "[true]"),
       path + R"(.retryableStatusCodes[0]: must be a status code name such )"
              R"(as "UNAVAILABLE" or an integer, got true)"},
  });
}

TEST(ServiceConfigTest, InvalidHedgingPolicy) {
  const std::string path = "methodConfig[0].hedgingPolicy";
  ExpectInvalid({
      {R"({"methodConfig": [{"hedgingPolicy": 1}]})",
       path + ": must be an object, got 1"},
      {R"({"methodConfig": [{"hedgingPolicy": {}}]})",
       path + ".maxAttempts: is required"},
      {R"({"methodConfig": [{"hedgingPolicy": {"maxAttempts": 0}}]})",
       path + ".maxAttempts: must be at least 2, got 0"},
      {R"({"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2,
            "hedgingDelay": "-0.5s"}}]})",
       path + R"(.hedgingDelay: must not be negative, got "-0.5s")"},
      {R"({"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2,
            "nonFatalStatusCodes": ["X"]}}]})",
       path + R"(.nonFatalStatusCodes[0]: unknown status code name "X")"},
  });
}

TEST(ServiceConfigTest, InvalidRetryThrottling) {
  const std::string ratio_format =
      "retryThrottling.tokenRatio: must be a positive decimal number such as "
      "0.1 (digits, no exponent), got ";
  ExpectInvalid({
      {R"({"retryThrottling": []})",
       "retryThrottling: must be an object, got an array"},
      {R"({"retryThrottling": {"tokenRatio": 1}})",
       "retryThrottling.maxTokens: is required"},
      {R"({"retryThrottling": {"maxTokens": 0, "tokenRatio": 1}})",
       "retryThrottling.maxTokens: must be between 1 and 1000, got 0"},
      {R"({"retryThrottling": {"maxTokens": 1001, "tokenRatio": 1}})",
       "retryThrottling.maxTokens: must be between 1 and 1000, got 1001"},
      {R"({"retryThrottling": {"maxTokens": 1}})",
       "retryThrottling.tokenRatio: is required"},
      {R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": 0}})",
       "retryThrottling.tokenRatio: must be at least 0.001 (3 decimal places "
       "are kept), got 0"},
      {R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": 0.0009}})",
       "retryThrottling.tokenRatio: must be at least 0.001 (3 decimal places "
       "are kept), got 0.0009"},
      {R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": -0.5}})",
       ratio_format + "-0.5"},
      {R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": 1e-1}})",
       ratio_format + "1e-1"},
      {R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": "1."}})",
       ratio_format + R"("1.")"},
      {R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": ".5"}})",
       ratio_format + R"(".5")"},
      {R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": true}})",
       ratio_format + "true"},
      {R"({"retryThrottling": {"maxTokens": 1,
            "tokenRatio": 4294967296.5}})",
       "retryThrottling.tokenRatio: must be at most 4294967295, got "
       "4294967296.5"},
  });
}

}  // namespace
}  // namespace h2rpc::internal
