#include "transport/core/connect_protocol.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "transport/core/base64.h"
#include "transport/core/cors.h"
#include "transport/core/message_framer.h"
#include "transport/core/status_synthesis.h"

namespace h2rpc::transport {
namespace {

constexpr absl::string_view kTrailerPrefix = "trailer-";

// `content_type` is `type` alone or followed by ';' parameters.
bool IsMediaType(absl::string_view content_type, absl::string_view type) {
  return content_type.substr(0, type.size()) == type &&
         (content_type.size() == type.size() ||
          content_type[type.size()] == ';');
}

struct ConnectCode {
  absl::string_view name;
  int http_status;
};

// Indexed by StatusCode.
constexpr ConnectCode kCodes[] = {
    {"unknown", 200},              // OK: never an error
    {"canceled", 499},             // CANCELLED
    {"unknown", 500},              // UNKNOWN
    {"invalid_argument", 400},     // INVALID_ARGUMENT
    {"deadline_exceeded", 504},    // DEADLINE_EXCEEDED
    {"not_found", 404},            // NOT_FOUND
    {"already_exists", 409},       // ALREADY_EXISTS
    {"permission_denied", 403},    // PERMISSION_DENIED
    {"resource_exhausted", 429},   // RESOURCE_EXHAUSTED
    {"failed_precondition", 400},  // FAILED_PRECONDITION
    {"aborted", 409},              // ABORTED
    {"out_of_range", 400},         // OUT_OF_RANGE
    {"unimplemented", 501},        // UNIMPLEMENTED
    {"internal", 500},             // INTERNAL
    {"unavailable", 503},          // UNAVAILABLE
    {"data_loss", 500},            // DATA_LOSS
    {"unauthenticated", 401},      // UNAUTHENTICATED
};

const ConnectCode& CodeOf(StatusCode code) {
  const auto index = static_cast<uint32_t>(code);
  return index < sizeof(kCodes) / sizeof(kCodes[0]) ? kCodes[index] : kCodes[2];
}

size_t MetadataSize(const Metadata* metadata) {
  return metadata != nullptr ? metadata->size() : 0;
}

constexpr char kConnectEndStreamFlag = 0x02;

std::string Base64Unpadded(absl::string_view bytes) {
  std::string out(Base64UnpaddedLength(bytes.size()), '\0');
  Base64EncodeUnpadded(bytes, out.data());
  return out;
}

nlohmann::json ErrorJson(const Status& status,
                         const std::vector<ConnectErrorDetail>& details) {
  nlohmann::json error = {{"code", ConnectCodeName(status.code())}};
  if (!status.message().empty()) error["message"] = status.message();
  for (const ConnectErrorDetail& detail : details) {
    error["details"].push_back(
        {{"type", detail.type}, {"value", Base64Unpadded(detail.value)}});
  }
  return error;
}

// A message that is not UTF-8 has its invalid bytes replaced, as a
// browser's decoder would.
std::string Dump(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A query component: %XX decoded, '+' a space (as HTML forms and Go's
// url.ParseQuery read it). False for a '%' not followed by two hex digits.
bool QueryUnescape(absl::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out->push_back(' ');
    } else if (in[i] != '%') {
      out->push_back(in[i]);
    } else {
      const int high = i + 2 < in.size() ? HexValue(in[i + 1]) : -1;
      const int low = high >= 0 ? HexValue(in[i + 2]) : -1;
      if (low < 0) return false;
      out->push_back(static_cast<char>(high * 16 + low));
      i += 2;
    }
  }
  return true;
}

Status BadGet(absl::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                absl::StrCat("Connect GET request: ", why));
}

}  // namespace

bool IsConnectStreamContentType(absl::string_view content_type, bool* json) {
  if (IsMediaType(content_type, kConnectStreamProtoContentType)) {
    *json = false;
    return true;
  }
  if (IsMediaType(content_type, kConnectStreamJsonContentType)) {
    *json = true;
    return true;
  }
  return false;
}

bool IsConnectUnaryContentType(absl::string_view content_type, bool* json) {
  if (IsMediaType(content_type, kConnectProtoContentType)) {
    *json = false;
    return true;
  }
  if (IsMediaType(content_type, kConnectJsonContentType)) {
    *json = true;
    return true;
  }
  return false;
}

absl::optional<absl::Duration> DecodeConnectTimeout(absl::string_view value) {
  if (value.empty() || value.size() > 10) return absl::nullopt;
  int64_t ms = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return absl::nullopt;
    ms = ms * 10 + (c - '0');
  }
  return absl::Milliseconds(ms);
}

absl::string_view ConnectCodeName(StatusCode code) { return CodeOf(code).name; }

int ConnectHttpStatus(StatusCode code) { return CodeOf(code).http_status; }

void AppendConnectErrorJson(const Status& status,
                            const std::vector<ConnectErrorDetail>& details,
                            std::string* out) {
  out->append(Dump(ErrorJson(status, details)));
}

void AppendConnectEndStream(const Status& status,
                            const std::vector<ConnectErrorDetail>& details,
                            const Metadata* trailing, std::string* out) {
  nlohmann::json end = nlohmann::json::object();
  if (!status.ok()) end["error"] = ErrorJson(status, details);
  if (trailing != nullptr && !trailing->empty()) {
    nlohmann::json& metadata = end["metadata"];
    for (Metadata::Entry entry : *trailing) {
      metadata[std::string(entry.key)].push_back(
          IsBinaryHeaderKey(entry.key) ? Base64Unpadded(entry.value)
                                       : std::string(entry.value));
    }
  }
  const std::string json = Dump(end);
  const auto length = static_cast<uint32_t>(json.size());
  out->reserve(out->size() + kMessagePrefixSize + json.size());
  out->push_back(kConnectEndStreamFlag);
  out->push_back(static_cast<char>(length >> 24));
  out->push_back(static_cast<char>(length >> 16));
  out->push_back(static_cast<char>(length >> 8));
  out->push_back(static_cast<char>(length));
  out->append(json);
}

void SplitConnectResponseMetadata(const Metadata& headers, Metadata* initial,
                                  Metadata* trailing) {
  size_t trailing_entries = 0, trailing_bytes = 0;
  for (Metadata::Entry entry : headers) {
    if (absl::StartsWith(entry.key, kTrailerPrefix)) {
      ++trailing_entries;
      trailing_bytes += entry.key.size() + entry.value.size();
    }
  }
  initial->Reserve(headers.size() - trailing_entries,
                   headers.byte_size() - trailing_bytes);
  trailing->Reserve(trailing_entries,
                    trailing_bytes - trailing_entries * kTrailerPrefix.size());
  for (Metadata::Entry entry : headers) {
    if (absl::StartsWith(entry.key, kTrailerPrefix)) {
      trailing->Add(entry.key.substr(kTrailerPrefix.size()), entry.value);
    } else {
      initial->Add(entry.key, entry.value);
    }
  }
}

Status ConnectErrorFromBody(int http_status, absl::string_view body) {
  const nlohmann::json error = nlohmann::json::parse(body, nullptr, false);
  if (error.is_object() && error.contains("code") &&
      error["code"].is_string()) {
    const std::string& name = error["code"].get_ref<const std::string&>();
    for (size_t code = 1; code < sizeof(kCodes) / sizeof(kCodes[0]); ++code) {
      if (kCodes[code].name != name) continue;
      const auto message = error.find("message");
      return Status(static_cast<StatusCode>(code),
                    message != error.end() && message->is_string()
                        ? message->get<std::string>()
                        : std::string());
    }
  }
  return Status(GrpcCodeFromHttpStatus(http_status),
                absl::StrCat("received HTTP status ", http_status,
                             " without a Connect error"));
}

Status ParseConnectGetRequest(absl::string_view path, ConnectGetRequest* out) {
  const size_t question = path.find('?');
  if (question == absl::string_view::npos) {
    return BadGet("no query (message=, encoding=)");
  }
  out->method = path.substr(0, question);
  bool has_message = false, has_encoding = false, base64 = false;
  std::string value;
  for (absl::string_view pair :
       absl::StrSplit(path.substr(question + 1), '&', absl::SkipEmpty())) {
    const size_t equals = pair.find('=');
    const absl::string_view name = pair.substr(0, equals);
    if (!QueryUnescape(equals == absl::string_view::npos
                           ? absl::string_view()
                           : pair.substr(equals + 1),
                       &value)) {
      return BadGet(absl::StrCat("malformed percent-encoding in '",
                                 absl::CHexEscape(name), "'"));
    }
    if (name == "message") {
      has_message = true;
      out->message = value;
    } else if (name == "encoding") {
      has_encoding = true;
      if (value != "proto" && value != "json") {
        return BadGet(
            absl::StrCat("unknown encoding '", absl::CHexEscape(value), "'"));
      }
      out->json = value == "json";
    } else if (name == "base64") {
      base64 = value == "1";
    } else if (name == "compression") {
      out->compression = value;
    } else if (name == "connect" && value != "v1") {
      return BadGet(absl::StrCat("connect '", absl::CHexEscape(value),
                                 "' is not supported; supported: v1"));
    }
  }
  if (!has_message) return BadGet("no message=");
  if (!has_encoding) return BadGet("no encoding=");
  if (base64) {
    if (!absl::WebSafeBase64Unescape(out->message, &value)) {
      return BadGet("message= is not URL-safe base64");
    }
    out->message.swap(value);
  }
  return Status();
}

Status BuildConnectUnaryHeaders(const ConnectResponseDescription& response,
                                HeaderList* headers) {
  for (const Metadata* metadata : {response.metadata, response.trailing}) {
    if (metadata == nullptr) continue;
    Status valid = ValidateOutgoingMetadata(*metadata);
    if (!valid.ok()) return valid;
  }
  const bool encoded = !response.content_encoding.empty() &&
                       response.content_encoding != "identity";
  const auto http_status = static_cast<uint32_t>(response.http_status);
  size_t scratch = HeaderList::DecimalDigits(http_status);
  if (response.metadata != nullptr) {
    scratch += HeaderList::MetadataScratchBytes(*response.metadata);
  }
  if (response.trailing != nullptr) {
    scratch +=
        HeaderList::MetadataScratchBytes(*response.trailing, kTrailerPrefix);
  }
  headers->Start(
      2 + encoded + !response.accept_encodings.empty() +
          (response.cors_origin.empty() ? 0 : CorsPolicy::kResponseFieldCount) +
          MetadataSize(response.metadata) + MetadataSize(response.trailing),
      scratch);
  headers->AddDecimal(":status", http_status);
  headers->Add("content-type", response.content_type);
  if (encoded) headers->Add("content-encoding", response.content_encoding);
  if (!response.accept_encodings.empty()) {
    headers->Add("accept-encoding", response.accept_encodings);
  }
  if (!response.cors_origin.empty()) {
    CorsPolicy::AddResponseFields(response.cors_origin,
                                  response.cors_exposed_headers, headers);
  }
  if (response.metadata != nullptr) headers->AddMetadata(*response.metadata);
  if (response.trailing != nullptr) {
    headers->AddMetadata(*response.trailing, kTrailerPrefix);
  }
  return Status();
}

}  // namespace h2rpc::transport
