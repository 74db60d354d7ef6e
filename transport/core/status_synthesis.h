#ifndef H2RPC_TRANSPORT_CORE_STATUS_SYNTHESIS_H_
#define H2RPC_TRANSPORT_CORE_STATUS_SYNTHESIS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "base/status.h"
#include "base/status_code.h"

namespace h2rpc::transport {

// How a client turns what it received from the server (response headers,
// trailers, or an RST_STREAM frame) into the Status of the call. Pure
// functions of their arguments: no I/O, no nghttp2.

// Returns the gRPC code for a non-200 HTTP status, per gRPC's
// doc/http-grpc-status-mapping.md: 400 -> INTERNAL, 401 -> UNAUTHENTICATED,
// 403 -> PERMISSION_DENIED, 404 -> UNIMPLEMENTED, 429/502/503/504 ->
// UNAVAILABLE, anything else (including 200 itself) -> UNKNOWN.
StatusCode GrpcCodeFromHttpStatus(int http_status);

// Returns true if `content_type` is "application/grpc" exactly or followed by
// '+' or ';' ("application/grpc+proto", "application/grpc;charset=utf-8").
// The comparison is case-sensitive, as in gRPC's own implementations.
bool IsGrpcContentType(absl::string_view content_type);

// Returns the status implied by the response headers: OK when `http_status`
// (the `:status` value) is "200" and `content_type` is a gRPC content type.
// Otherwise, in this order: a missing `:status` or one that is not exactly
// three digits -> INTERNAL; a status other than 200 -> the code from
// GrpcCodeFromHttpStatus with a message naming the HTTP status ("received
// HTTP status 404 instead of 200"); a missing or non-gRPC content-type ->
// UNKNOWN with a message naming the content-type. Values quoted in messages
// are C-escaped and truncated, so peer bytes cannot corrupt logs.
Status StatusFromResponseHeaders(
    absl::optional<absl::string_view> http_status,
    absl::optional<absl::string_view> content_type);

// Returns the status carried by the trailers (or a trailers-only response).
// `grpc_status` must be 1-3 ASCII digits with a value of at most
// kMaxStatusCode: missing -> UNKNOWN "missing grpc-status in trailers";
// anything else (signs, spaces, 4+ digits, > 16) -> UNKNOWN with a message
// naming the value. An OK status ignores message and details. Otherwise the
// message is `grpc_message` percent-decoded and the details are
// `grpc_status_details_bin` base64-decoded (padded or unpadded); details that
// are not valid base64 are dropped, keeping the code and message.
Status StatusFromTrailers(
    absl::optional<absl::string_view> grpc_status,
    absl::optional<absl::string_view> grpc_message,
    absl::optional<absl::string_view> grpc_status_details_bin);

// Returns the status for a stream the server reset with RST_STREAM carrying
// `http2_error_code` (RFC 9113 section 7), per gRPC's PROTOCOL-HTTP2.md:
// REFUSED_STREAM -> UNAVAILABLE; CANCEL -> CANCELLED, or DEADLINE_EXCEEDED if
// `deadline_exceeded` (the call's deadline had passed); ENHANCE_YOUR_CALM ->
// RESOURCE_EXHAUSTED; INADEQUATE_SECURITY -> PERMISSION_DENIED; every other
// code, known or not (NO_ERROR included: a reset before trailers is an error)
// -> INTERNAL. The message names the error code, e.g. "stream reset by peer
// with REFUSED_STREAM (7)".
Status StatusFromRstStream(uint32_t http2_error_code, bool deadline_exceeded);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_STATUS_SYNTHESIS_H_
