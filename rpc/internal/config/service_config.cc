#include "rpc/internal/config/service_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "rpc/internal/config/json_document.h"

namespace h2rpc::internal {
namespace {

using Json = nlohmann::json;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();
// proto3 Duration's range.
constexpr int64_t kMaxDurationSeconds = 315576000000;
constexpr int64_t kMaxRetryTokens = 1000;
constexpr char kDurationFormat[] =
    "must be a duration string like \"1.5s\" (seconds, up to 9 decimal "
    "places, an s suffix)";

// A config error at `path` ("" for the whole config).
Status Invalid(absl::string_view path, absl::string_view what) {
  return Status(StatusCode::kInvalidArgument,
                path.empty()
                    ? absl::StrCat("service config: ", what)
                    : absl::StrCat("service config: ", path, ": ", what));
}

// An optional '-' and one or more ASCII digits.
bool IsIntegerText(absl::string_view text) {
  absl::ConsumePrefix(&text, "-");
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(c);
  });
}

bool IsDigits(absl::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return absl::ascii_isdigit(c); });
}

// Reads a parsed document into a ServiceConfig, one field at a time, each
// error naming the field's path.
class ConfigReader {
 public:
  ConfigReader(const JsonDocument& document, const LbPolicyCatalog& policies)
      : document_(document), policies_(policies) {}

  Status Read(ServiceConfig* config, std::vector<MethodConfig>* method_configs,
              std::map<std::string, size_t>* method_index,
              int64_t* default_index) {
    const Json& root = document_.root();
    if (!root.is_object()) {
      return Invalid(
          "", absl::StrCat("must be a JSON object, got ", Describe(root)));
    }
    if (const Json* value = Field(root, "loadBalancingConfig")) {
      Status status =
          ReadLoadBalancingConfig(*value, "loadBalancingConfig", config);
      if (!status.ok()) return status;
    }
    if (const Json* value = Field(root, "loadBalancingPolicy")) {
      Status status =
          ReadLoadBalancingPolicy(*value, "loadBalancingPolicy", config);
      if (!status.ok()) return status;
    }
    if (const Json* value = Field(root, "healthCheckConfig")) {
      Status status =
          ReadHealthCheckConfig(*value, "healthCheckConfig", config);
      if (!status.ok()) return status;
    }
    if (const Json* value = Field(root, "methodConfig")) {
      Status status = ReadMethodConfigs(*value, "methodConfig", method_configs,
                                        method_index, default_index);
      if (!status.ok()) return status;
    }
    if (const Json* value = Field(root, "retryThrottling")) {
      config->retry_throttling.emplace();
      Status status = ReadRetryThrottling(*value, "retryThrottling",
                                          &*config->retry_throttling);
      if (!status.ok()) return status;
    }
    return Status();
  }

 private:
  // The member `key` of `object`; null when absent or JSON null.
  static const Json* Field(const Json& object, const char* key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // A value for "got ..." in a message.
  std::string Describe(const Json& value) const {
    switch (value.type()) {
      case Json::value_t::null:
        return "null";
      case Json::value_t::boolean:
        return value.get<bool>() ? "true" : "false";
      case Json::value_t::number_integer:
        return absl::StrCat(value.get<int64_t>());
      case Json::value_t::number_unsigned:
        return absl::StrCat(value.get<uint64_t>());
      case Json::value_t::number_float:
        if (const std::string* text = document_.NumberText(value)) {
          return *text;
        }
        return value.dump();
      case Json::value_t::string:
        return QuoteForMessage(value.get_ref<const std::string&>());
      case Json::value_t::array:
        return "an array";
      case Json::value_t::object:
        return "an object";
      default:
        return "a value that is not JSON";
    }
  }

  Status ExpectObject(const Json& value, absl::string_view path) const {
    if (value.is_object()) return Status();
    return Invalid(path,
                   absl::StrCat("must be an object, got ", Describe(value)));
  }

  Status ExpectArray(const Json& value, absl::string_view path) const {
    if (value.is_array()) return Status();
    return Invalid(path,
                   absl::StrCat("must be an array, got ", Describe(value)));
  }

  Status ReadBool(const Json& value, absl::string_view path, bool* out) const {
    if (!value.is_boolean()) {
      return Invalid(
          path, absl::StrCat("must be true or false, got ", Describe(value)));
    }
    *out = value.get<bool>();
    return Status();
  }

  Status ReadString(const Json& value, absl::string_view path,
                    std::string* out) const {
    if (!value.is_string()) {
      return Invalid(path,
                     absl::StrCat("must be a string, got ", Describe(value)));
    }
    *out = value.get_ref<const std::string&>();
    return Status();
  }

  // An integer given as a JSON integer or a string of digits (proto3 JSON).
  // One beyond int64 reads as the nearest int64, then fails the range check
  // (or, with max == kInt64Max, passes it).
  Status ReadInteger(const Json& value, absl::string_view path, int64_t min,
                     int64_t max, int64_t* out) const {
    int64_t number = 0;
    if (value.is_number_unsigned()) {
      const uint64_t u = value.get<uint64_t>();
      number = u > static_cast<uint64_t>(kInt64Max) ? kInt64Max
                                                    : static_cast<int64_t>(u);
    } else if (value.is_number_integer()) {
      number = value.get<int64_t>();
    } else {
      // A string of digits, or an integer literal too large for nlohmann's
      // 64-bit integers, which it reads as a double.
      const std::string* text = nullptr;
      if (value.is_string()) {
        text = &value.get_ref<const std::string&>();
      } else if (value.is_number_float()) {
        text = document_.NumberText(value);
      }
      if (text == nullptr || !IsIntegerText(*text)) {
        return Invalid(
            path, absl::StrCat("must be an integer, got ", Describe(value)));
      }
      if (!absl::SimpleAtoi(*text, &number)) {
        number = (*text)[0] == '-' ? kInt64Min : kInt64Max;
      }
    }
    if (number < min || number > max) {
      return Invalid(path, max == kInt64Max
                               ? absl::StrCat("must be at least ", min,
                                              ", got ", Describe(value))
                               : absl::StrCat("must be between ", min, " and ",
                                              max, ", got ", Describe(value)));
    }
    *out = number;
    return Status();
  }

  // A finite number, given as a JSON number or a string (proto3 JSON).
  Status ReadNumber(const Json& value, absl::string_view path,
                    double* out) const {
    double number = 0;
    if (value.is_number()) {
      number = value.get<double>();
    } else if (!value.is_string() ||
               !absl::SimpleAtod(value.get_ref<const std::string&>(),
                                 &number)) {
      return Invalid(path,
                     absl::StrCat("must be a number, got ", Describe(value)));
    }
    if (!std::isfinite(number)) {
      return Invalid(
          path, absl::StrCat("must be a finite number, got ", Describe(value)));
    }
    *out = number;
    return Status();
  }

  Status ReadDuration(const Json& value, absl::string_view path,
                      absl::Duration* out) const {
    if (!value.is_string()) {
      return Invalid(path, absl::StrCat(kDurationFormat, ", got ",
                                        Describe(value)));
    }
    std::string why;
    if (!ParseJsonDuration(value.get_ref<const std::string&>(), out, &why)) {
      return Invalid(path, absl::StrCat(why, ", got ", Describe(value)));
    }
    return Status();
  }

  // A list of status codes, each a name ("UNAVAILABLE") or a number (14).
  Status ReadStatusCodes(const Json& value, absl::string_view path,
                         StatusCodeSet* out) const {
    Status status = ExpectArray(value, path);
    if (!status.ok()) return status;
    for (size_t i = 0; i < value.size(); ++i) {
      const Json& element = value[i];
      const std::string element_path = JsonElementPath(path, i);
      if (element.is_string()) {
        const std::string& name = element.get_ref<const std::string&>();
        bool found = false;
        for (int code = 0; code <= kMaxStatusCode && !found; ++code) {
          if (StatusCodeName(static_cast<StatusCode>(code)) == name) {
            out->Add(static_cast<StatusCode>(code));
            found = true;
          }
        }
        if (!found) {
          return Invalid(element_path, absl::StrCat("unknown status code name ",
                                                    QuoteForMessage(name)));
        }
      } else if (element.is_number_integer()) {
        const bool in_range =
            element.is_number_unsigned()
                ? element.get<uint64_t>() <= kMaxStatusCode
                : element.get<int64_t>() >= 0 &&
                      element.get<int64_t>() <= kMaxStatusCode;
        if (!in_range) {
          return Invalid(
              element_path,
              absl::StrCat("must be a status code from 0 to ", kMaxStatusCode,
                           ", got ", Describe(element)));
        }
        out->Add(static_cast<StatusCode>(element.get<int64_t>()));
      } else {
        return Invalid(element_path,
                       absl::StrCat("must be a status code name such as "
                                    "\"UNAVAILABLE\" or an integer, got ",
                                    Describe(element)));
      }
    }
    return Status();
  }

  // gRPC's lb_policy_registry: the first entry the channel has a policy of
  // wins (its config checked); entries before it must be well formed,
  // entries after it are not looked at.
  Status ReadLoadBalancingConfig(const Json& value, absl::string_view path,
                                 ServiceConfig* config) const {
    Status status = ExpectArray(value, path);
    if (!status.ok()) return status;
    std::vector<std::string> skipped;
    for (size_t i = 0; i < value.size(); ++i) {
      const Json& entry = value[i];
      const std::string entry_path = JsonElementPath(path, i);
      if (!entry.is_object() || entry.size() != 1) {
        return Invalid(
            entry_path,
            absl::StrCat("must be an object with exactly one key, "
                         "the policy name, got ",
                         entry.is_object() ? absl::StrCat(entry.size(), " keys")
                                           : Describe(entry)));
      }
      const std::string& name = entry.begin().key();
      const Json& policy_config = entry.begin().value();
      const std::string config_path = JsonMemberPath(entry_path, name);
      status = ExpectObject(policy_config, config_path);
      if (!status.ok()) return status;
      std::string text = policy_config.dump();
      status = policies_.Check(name, text);
      if (status.code() == StatusCode::kNotFound) {
        // The message names the first few.
        constexpr size_t kMaxNamed = 8;
        if (skipped.size() < kMaxNamed) {
          skipped.push_back(QuoteForMessage(name));
        } else if (skipped.size() == kMaxNamed) {
          skipped.push_back("...");
        }
        continue;
      }
      if (!status.ok()) return Invalid(config_path, status.message());
      config->load_balancing =
          ServiceConfig::LoadBalancingConfig{name, std::move(text)};
      return Status();
    }
    return Invalid(path, absl::StrCat("names no policy this channel has (",
                                      policies_.Names(), "); got [",
                                      absl::StrJoin(skipped, ", "), "]"));
  }

  // The deprecated field, used only when loadBalancingConfig is absent but
  // checked either way, as gRPC does.
  Status ReadLoadBalancingPolicy(const Json& value, absl::string_view path,
                                 ServiceConfig* config) const {
    std::string name;
    Status status = ReadString(value, path, &name);
    if (!status.ok()) return status;
    if (name.empty()) return Status();  // gRPC ignores it too
    absl::AsciiStrToLower(&name);
    status = policies_.Check(name, "{}");
    if (!status.ok()) {
      return Invalid(path,
                     status.code() == StatusCode::kNotFound
                         ? absl::StrCat("unknown policy ", Describe(value),
                                        " (this channel "
                                        "has ",
                                        policies_.Names(), ")")
                         : status.message());
    }
    if (!config->load_balancing.has_value()) {
      config->load_balancing =
          ServiceConfig::LoadBalancingConfig{std::move(name), "{}"};
    }
    return Status();
  }

  Status ReadHealthCheckConfig(const Json& value, absl::string_view path,
                               ServiceConfig* config) const {
    Status status = ExpectObject(value, path);
    if (!status.ok()) return status;
    if (const Json* name = Field(value, "serviceName")) {
      std::string service_name;
      status =
          ReadString(*name, JsonMemberPath(path, "serviceName"), &service_name);
      if (!status.ok()) return status;
      config->health_check_service_name = std::move(service_name);
    }
    return Status();
  }

  Status ReadMethodConfigs(const Json& value, absl::string_view path,
                           std::vector<MethodConfig>* method_configs,
                           std::map<std::string, size_t>* method_index,
                           int64_t* default_index) const {
    Status status = ExpectArray(value, path);
    if (!status.ok()) return status;
    method_configs->resize(value.size());
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string config_path = JsonElementPath(path, i);
      status = ReadMethodConfig(value[i], config_path, &(*method_configs)[i]);
      if (!status.ok()) return status;
      if (const Json* names = Field(value[i], "name")) {
        status = ReadNames(*names, JsonMemberPath(config_path, "name"), i,
                           method_index, default_index);
        if (!status.ok()) return status;
      }
    }
    return Status();
  }

  // The `name` list of methodConfig[config]: each entry goes into the index,
  // a name already there being an error.
  Status ReadNames(const Json& value, absl::string_view path, size_t config,
                   std::map<std::string, size_t>* method_index,
                   int64_t* default_index) const {
    Status status = ExpectArray(value, path);
    if (!status.ok()) return status;
    for (size_t j = 0; j < value.size(); ++j) {
      const Json& name = value[j];
      const std::string name_path = JsonElementPath(path, j);
      status = ExpectObject(name, name_path);
      if (!status.ok()) return status;
      std::string service;
      std::string method;
      if (const Json* field = Field(name, "service")) {
        status =
            ReadString(*field, JsonMemberPath(name_path, "service"), &service);
        if (!status.ok()) return status;
      }
      if (const Json* field = Field(name, "method")) {
        status =
            ReadString(*field, JsonMemberPath(name_path, "method"), &method);
        if (!status.ok()) return status;
      }
      if (service.empty()) {
        if (!method.empty()) {
          return Invalid(name_path,
                         absl::StrCat("names method ", QuoteForMessage(method),
                                      " but no service"));
        }
        if (*default_index >= 0) {
          return Invalid(name_path,
                         absl::StrCat("is a second default config (no "
                                      "service); methodConfig[",
                                      *default_index, "] is the first"));
        }
        *default_index = static_cast<int64_t>(config);
        continue;
      }
      auto [it, inserted] = method_index->emplace(
          absl::StrCat("/", service, "/", method), config);
      if (!inserted) {
        return Invalid(
            name_path,
            absl::StrCat(
                "service ", QuoteForMessage(service),
                method.empty()
                    ? ""
                    : absl::StrCat(" method ", QuoteForMessage(method)),
                " is already named in methodConfig[", it->second, "]"));
      }
    }
    return Status();
  }

  Status ReadMethodConfig(const Json& value, absl::string_view path,
                          MethodConfig* out) const {
    Status status = ExpectObject(value, path);
    if (!status.ok()) return status;
    if (const Json* field = Field(value, "waitForReady")) {
      bool wait_for_ready = false;
      status = ReadBool(*field, JsonMemberPath(path, "waitForReady"),
                        &wait_for_ready);
      if (!status.ok()) return status;
      out->wait_for_ready = wait_for_ready;
    }
    if (const Json* field = Field(value, "timeout")) {
      absl::Duration timeout;
      status = ReadDuration(*field, JsonMemberPath(path, "timeout"), &timeout);
      if (!status.ok()) return status;
      out->timeout = timeout;
    }
    for (const auto& [key, member] :
         {std::make_pair("maxRequestMessageBytes",
                         &MethodConfig::max_request_message_bytes),
          std::make_pair("maxResponseMessageBytes",
                         &MethodConfig::max_response_message_bytes)}) {
      if (const Json* field = Field(value, key)) {
        int64_t bytes = 0;
        status = ReadInteger(*field, JsonMemberPath(path, key), 0, kUint32Max,
                             &bytes);
        if (!status.ok()) return status;
        out->*member = static_cast<uint32_t>(bytes);
      }
    }
    const Json* retry = Field(value, "retryPolicy");
    const Json* hedging = Field(value, "hedgingPolicy");
    if (retry != nullptr && hedging != nullptr) {
      return Invalid(path,
                     "has both retryPolicy and hedgingPolicy; at most one "
                     "is allowed");
    }
    if (retry != nullptr) {
      out->retry_policy.emplace();
      status = ReadRetryPolicy(*retry, JsonMemberPath(path, "retryPolicy"),
                               &*out->retry_policy);
      if (!status.ok()) return status;
    }
    if (hedging != nullptr) {
      out->hedging_policy.emplace();
      status =
          ReadHedgingPolicy(*hedging, JsonMemberPath(path, "hedgingPolicy"),
                            &*out->hedging_policy);
      if (!status.ok()) return status;
    }
    return Status();
  }

  // maxAttempts of a retry or hedging policy: required, at least 2, and
  // lowered to kMaxRetryAttempts.
  Status ReadMaxAttempts(const Json& policy, absl::string_view path,
                         int* out) const {
    const Json* field = Field(policy, "maxAttempts");
    const std::string field_path = JsonMemberPath(path, "maxAttempts");
    if (field == nullptr) return Invalid(field_path, "is required");
    int64_t attempts = 0;
    Status status = ReadInteger(*field, field_path, 2, kInt64Max, &attempts);
    if (!status.ok()) return status;
    *out = static_cast<int>(std::min<int64_t>(attempts, kMaxRetryAttempts));
    return Status();
  }

  // A required duration greater than zero.
  Status ReadBackoff(const Json& policy, absl::string_view path,
                     const char* key, absl::Duration* out) const {
    const Json* field = Field(policy, key);
    const std::string field_path = JsonMemberPath(path, key);
    if (field == nullptr) return Invalid(field_path, "is required");
    Status status = ReadDuration(*field, field_path, out);
    if (!status.ok()) return status;
    if (*out <= absl::ZeroDuration()) {
      return Invalid(field_path, absl::StrCat("must be greater than 0, got ",
                                              Describe(*field)));
    }
    return Status();
  }

  Status ReadRetryPolicy(const Json& value, absl::string_view path,
                         RetryPolicy* out) const {
    Status status = ExpectObject(value, path);
    if (!status.ok()) return status;
    status = ReadMaxAttempts(value, path, &out->max_attempts);
    if (!status.ok()) return status;
    status = ReadBackoff(value, path, "initialBackoff", &out->initial_backoff);
    if (!status.ok()) return status;
    status = ReadBackoff(value, path, "maxBackoff", &out->max_backoff);
    if (!status.ok()) return status;
    const Json* multiplier = Field(value, "backoffMultiplier");
    const std::string multiplier_path =
        JsonMemberPath(path, "backoffMultiplier");
    if (multiplier == nullptr) return Invalid(multiplier_path, "is required");
    status = ReadNumber(*multiplier, multiplier_path, &out->backoff_multiplier);
    if (!status.ok()) return status;
    if (out->backoff_multiplier <= 0) {
      return Invalid(
          multiplier_path,
          absl::StrCat("must be greater than 0, got ", Describe(*multiplier)));
    }
    const Json* codes = Field(value, "retryableStatusCodes");
    const std::string codes_path = JsonMemberPath(path, "retryableStatusCodes");
    if (codes == nullptr) {
      return Invalid(codes_path, "is required and must not be empty");
    }
    status = ReadStatusCodes(*codes, codes_path, &out->retryable_status_codes);
    if (!status.ok()) return status;
    if (out->retryable_status_codes.empty()) {
      return Invalid(codes_path, "must not be empty");
    }
    return Status();
  }

  Status ReadHedgingPolicy(const Json& value, absl::string_view path,
                           HedgingPolicy* out) const {
    Status status = ExpectObject(value, path);
    if (!status.ok()) return status;
    status = ReadMaxAttempts(value, path, &out->max_attempts);
    if (!status.ok()) return status;
    if (const Json* delay = Field(value, "hedgingDelay")) {
      status = ReadDuration(*delay, JsonMemberPath(path, "hedgingDelay"),
                            &out->hedging_delay);
      if (!status.ok()) return status;
    }
    if (const Json* codes = Field(value, "nonFatalStatusCodes")) {
      status =
          ReadStatusCodes(*codes, JsonMemberPath(path, "nonFatalStatusCodes"),
                          &out->non_fatal_status_codes);
      if (!status.ok()) return status;
    }
    return Status();
  }

  Status ReadRetryThrottling(const Json& value, absl::string_view path,
                             RetryThrottling* out) const {
    Status status = ExpectObject(value, path);
    if (!status.ok()) return status;
    const Json* max_tokens = Field(value, "maxTokens");
    const std::string max_tokens_path = JsonMemberPath(path, "maxTokens");
    if (max_tokens == nullptr) return Invalid(max_tokens_path, "is required");
    int64_t tokens = 0;
    status =
        ReadInteger(*max_tokens, max_tokens_path, 1, kMaxRetryTokens, &tokens);
    if (!status.ok()) return status;
    out->max_tokens = static_cast<int>(tokens);

    const Json* ratio = Field(value, "tokenRatio");
    const std::string ratio_path = JsonMemberPath(path, "tokenRatio");
    if (ratio == nullptr) return Invalid(ratio_path, "is required");
    // gRPC reads the number's decimal text, keeping 3 decimal places.
    std::string text;
    if (ratio->is_string()) {
      text = ratio->get_ref<const std::string&>();
    } else if (ratio->is_number_float()) {
      const std::string* source = document_.NumberText(*ratio);
      text = source != nullptr ? *source : ratio->dump();
    } else if (ratio->is_number()) {
      text = Describe(*ratio);
    }
    absl::string_view whole = text;
    absl::string_view fraction;
    const size_t point = whole.find('.');
    if (point != absl::string_view::npos) {
      fraction = whole.substr(point + 1);
      whole = whole.substr(0, point);
    }
    if (whole.empty() || !IsDigits(whole) ||
        (point != absl::string_view::npos &&
         (fraction.empty() || !IsDigits(fraction)))) {
      return Invalid(ratio_path,
                     absl::StrCat("must be a positive decimal number such as "
                                  "0.1 (digits, no exponent), got ",
                                  Describe(*ratio)));
    }
    uint32_t whole_value = 0;
    if (!absl::SimpleAtoi(whole, &whole_value)) {
      return Invalid(ratio_path, absl::StrCat("must be at most ", kUint32Max,
                                              ", got ", Describe(*ratio)));
    }
    int64_t milli = 0;
    for (size_t i = 0; i < 3; ++i) {
      milli = milli * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
    }
    milli += int64_t{whole_value} * 1000;
    if (milli == 0) {
      return Invalid(ratio_path,
                     absl::StrCat("must be at least 0.001 (3 decimal places "
                                  "are kept), got ",
                                  Describe(*ratio)));
    }
    out->token_ratio_milli = milli;
    return Status();
  }

  const JsonDocument& document_;
  const LbPolicyCatalog& policies_;
};

}  // namespace

bool ParseJsonDuration(absl::string_view text, absl::Duration* out,
                       std::string* why) {
  if (!absl::ConsumeSuffix(&text, "s")) {
    *why = kDurationFormat;
    return false;
  }
  const bool negative = absl::ConsumePrefix(&text, "-");
  absl::string_view whole = text;
  absl::string_view fraction;
  const size_t point = text.find('.');
  if (point != absl::string_view::npos) {
    whole = text.substr(0, point);
    fraction = text.substr(point + 1);
    if (fraction.empty() || fraction.size() > 9) {
      *why = kDurationFormat;
      return false;
    }
  }
  if ((whole.empty() && fraction.empty()) || !IsDigits(whole) ||
      !IsDigits(fraction)) {
    *why = kDurationFormat;
    return false;
  }
  while (whole.size() > 1 && whole[0] == '0') whole.remove_prefix(1);
  int64_t seconds = 0;
  if (whole.size() > 12 ||
      (!whole.empty() && !absl::SimpleAtoi(whole, &seconds)) ||
      seconds > kMaxDurationSeconds) {
    *why = absl::StrCat("must be at most ", kMaxDurationSeconds, "s");
    return false;
  }
  int64_t nanos = 0;
  for (size_t i = 0; i < 9; ++i) {
    nanos = nanos * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
  }
  if (negative && (seconds != 0 || nanos != 0)) {
    *why = "must not be negative";
    return false;
  }
  *out = absl::Seconds(seconds) + absl::Nanoseconds(nanos);
  return true;
}

const MethodConfig* ServiceConfig::FindMethodConfig(
    absl::string_view method_path) const {
  const auto find = [this](absl::string_view key) -> const MethodConfig* {
    auto it = std::lower_bound(
        index_.begin(), index_.end(), key,
        [](const std::pair<std::string, size_t>& entry, absl::string_view k) {
          return absl::string_view(entry.first) < k;
        });
    if (it == index_.end() || it->first != key) return nullptr;
    return &method_configs_[it->second];
  };
  if (!index_.empty()) {
    if (const MethodConfig* exact = find(method_path)) return exact;
    const size_t slash = method_path.rfind('/');
    if (slash != absl::string_view::npos) {
      if (const MethodConfig* service =
              find(method_path.substr(0, slash + 1))) {
        return service;
      }
    }
  }
  return default_index_ >= 0 ? &method_configs_[default_index_] : nullptr;
}

const LbPolicyCatalog& BuiltinLbPolicies() {
  class Builtin final : public LbPolicyCatalog {
   public:
    Status Check(absl::string_view name,
                 absl::string_view config) const override {
      if (name == "round_robin") return Status();
      if (name != "pick_first") {
        return Status(StatusCode::kNotFound, "no such policy");
      }
      const Json parsed =
          Json::parse(config.begin(), config.end(), nullptr, false);
      const auto shuffle =
          parsed.is_object() ? parsed.find("shuffleAddressList") : parsed.end();
      if (shuffle != parsed.end() && !shuffle->is_null() &&
          !shuffle->is_boolean()) {
        return Status(StatusCode::kInvalidArgument,
                      absl::StrCat("shuffleAddressList: must be true or "
                                   "false, got ",
                                   shuffle->dump()));
      }
      return Status();
    }
    std::string Names() const override { return "pick_first, round_robin"; }
  };
  static const Builtin* const builtin = new Builtin;
  return *builtin;
}

Status ParseServiceConfig(absl::string_view json, ServiceConfig* out,
                          const ServiceConfigLimits& limits,
                          const LbPolicyCatalog& policies) {
  JsonDocument document;
  Status status = document.Parse(json, limits.max_nesting_depth);
  if (!status.ok()) return Invalid("", status.message());
  ServiceConfig config;
  std::map<std::string, size_t> method_index;
  status = ConfigReader(document, policies)
               .Read(&config, &config.method_configs_, &method_index,
                     &config.default_index_);
  if (!status.ok()) return status;
  config.index_.assign(method_index.begin(), method_index.end());
  *out = std::move(config);
  return Status();
}

}  // namespace h2rpc::internal
