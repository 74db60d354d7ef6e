#include "transport/core/status_synthesis.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "transport/core/base64.h"
#include "transport/core/grpc_message.h"

namespace h2rpc::transport {
namespace {

// HTTP/2 error codes (RFC 9113 section 7), spelled out here so this file does
// not depend on nghttp2 (they equal its NGHTTP2_* constants).
constexpr uint32_t kNoError = 0x0;
constexpr uint32_t kProtocolError = 0x1;
constexpr uint32_t kInternalError = 0x2;
constexpr uint32_t kFlowControlError = 0x3;
constexpr uint32_t kSettingsTimeout = 0x4;
constexpr uint32_t kStreamClosed = 0x5;
constexpr uint32_t kFrameSizeError = 0x6;
constexpr uint32_t kRefusedStream = 0x7;
constexpr uint32_t kCancel = 0x8;
constexpr uint32_t kCompressionError = 0x9;
constexpr uint32_t kConnectError = 0xa;
constexpr uint32_t kEnhanceYourCalm = 0xb;
constexpr uint32_t kInadequateSecurity = 0xc;
constexpr uint32_t kHttp11Required = 0xd;

// The longest peer-supplied value quoted in a status message.
constexpr size_t kMaxQuotedLength = 64;

// The most digits accepted in grpc-status ("016" is fine, "0016" is not).
constexpr size_t kMaxGrpcStatusDigits = 3;

absl::string_view Http2ErrorCodeName(uint32_t code) {
  switch (code) {
    case kNoError:
      return "NO_ERROR";
    case kProtocolError:
      return "PROTOCOL_ERROR";
    case kInternalError:
      return "INTERNAL_ERROR";
    case kFlowControlError:
      return "FLOW_CONTROL_ERROR";
    case kSettingsTimeout:
      return "SETTINGS_TIMEOUT";
    case kStreamClosed:
      return "STREAM_CLOSED";
    case kFrameSizeError:
      return "FRAME_SIZE_ERROR";
    case kRefusedStream:
      return "REFUSED_STREAM";
    case kCancel:
      return "CANCEL";
    case kCompressionError:
      return "COMPRESSION_ERROR";
    case kConnectError:
      return "CONNECT_ERROR";
    case kEnhanceYourCalm:
      return "ENHANCE_YOUR_CALM";
    case kInadequateSecurity:
      return "INADEQUATE_SECURITY";
    case kHttp11Required:
      return "HTTP_1_1_REQUIRED";
  }
  return "unknown error code";
}

// Returns `value` in double quotes, C-escaped and cut to kMaxQuotedLength
// bytes (marked with "..."), for quoting peer input in a status message.
std::string Quote(absl::string_view value) {
  const bool truncated = value.size() > kMaxQuotedLength;
  return absl::StrCat("\"", absl::CHexEscape(value.substr(0, kMaxQuotedLength)),
                      truncated ? "...\"" : "\"");
}

// Parses 1 to `max_digits` ASCII digits; nothing else is accepted.
absl::optional<int> ParseDigits(absl::string_view text, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return absl::nullopt;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return absl::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

StatusCode GrpcCodeFromHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
      return StatusCode::kInternal;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return StatusCode::kUnavailable;
  }
  return StatusCode::kUnknown;
}

bool IsGrpcContentType(absl::string_view content_type) {
  constexpr absl::string_view kGrpc = "application/grpc";
  if (content_type.substr(0, kGrpc.size()) != kGrpc) return false;
  if (content_type.size() == kGrpc.size()) return true;
  const char next = content_type[kGrpc.size()];
  return next == '+' || next == ';';
}

Status StatusFromResponseHeaders(
    absl::optional<absl::string_view> http_status,
    absl::optional<absl::string_view> content_type) {
  if (!http_status.has_value()) {
    return Status(StatusCode::kInternal, "missing :status in response headers");
  }
  const absl::optional<int> code =
      http_status->size() == 3 ? ParseDigits(*http_status, 3) : absl::nullopt;
  if (!code.has_value()) {
    return Status(StatusCode::kInternal,
                  absl::StrCat("invalid :status ", Quote(*http_status),
                               " in response headers"));
  }
  if (*code != 200) {
    return Status(
        GrpcCodeFromHttpStatus(*code),
        absl::StrCat("received HTTP status ", *http_status, " instead of 200"));
  }
  if (!content_type.has_value()) {
    return Status(StatusCode::kUnknown,
                  "missing content-type in response headers");
  }
  if (!IsGrpcContentType(*content_type)) {
    return Status(StatusCode::kUnknown,
                  absl::StrCat("invalid content-type ", Quote(*content_type),
                               " in response headers"));
  }
  return Status::Ok();
}

Status StatusFromTrailers(
    absl::optional<absl::string_view> grpc_status,
    absl::optional<absl::string_view> grpc_message,
    absl::optional<absl::string_view> grpc_status_details_bin) {
  if (!grpc_status.has_value()) {
    return Status(StatusCode::kUnknown, "missing grpc-status in trailers");
  }
  const absl::optional<int> code =
      ParseDigits(*grpc_status, kMaxGrpcStatusDigits);
  if (!code.has_value() || *code > kMaxStatusCode) {
    return Status(StatusCode::kUnknown,
                  absl::StrCat("invalid grpc-status ", Quote(*grpc_status),
                               " in trailers"));
  }
  if (*code == static_cast<int>(StatusCode::kOk)) return Status::Ok();

  std::string message;
  if (grpc_message.has_value()) message = PercentDecode(*grpc_message);
  std::string details;
  if (grpc_status_details_bin.has_value()) {
    details.resize(Base64MaxDecodedLength(grpc_status_details_bin->size()));
    const ptrdiff_t size = Base64Decode(*grpc_status_details_bin, &details[0]);
    details.resize(size < 0 ? 0 : static_cast<size_t>(size));
  }
  return Status(static_cast<StatusCode>(*code), std::move(message),
                std::move(details));
}

Status StatusFromRstStream(uint32_t http2_error_code, bool deadline_exceeded) {
  StatusCode code;
  switch (http2_error_code) {
    case kRefusedStream:
      code = StatusCode::kUnavailable;
      break;
    case kCancel:
      code = deadline_exceeded ? StatusCode::kDeadlineExceeded
                               : StatusCode::kCancelled;
      break;
    case kEnhanceYourCalm:
      code = StatusCode::kResourceExhausted;
      break;
    case kInadequateSecurity:
      code = StatusCode::kPermissionDenied;
      break;
    default:
      code = StatusCode::kInternal;
      break;
  }
  return Status(code, absl::StrCat("stream reset by peer with ",
                                   Http2ErrorCodeName(http2_error_code), " (",
                                   http2_error_code, ")"));
}

}  // namespace h2rpc::transport
