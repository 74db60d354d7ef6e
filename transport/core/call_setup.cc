#include "transport/core/call_setup.h"

#include "absl/strings/str_cat.h"
#include "transport/core/timeout.h"

namespace h2rpc::transport {
namespace {

bool HasDeadline(const CallDescription& call) {
  return !call.deadline.is_infinite_future();
}

bool SendsEncoding(const CallDescription& call) {
  return !call.send_encoding.empty() && call.send_encoding != "identity";
}

bool SendsPreviousAttempts(const CallDescription& call) {
  return call.previous_attempts > 0 && !call.connect_unary;
}

// A Connect deadline in whole milliseconds, rounded up; 0 when it does not
// fit connect-timeout-ms's 10 digits as a 32-bit count (49 days), which is
// then left out (the client's own timer still ends the call).
uint32_t ConnectTimeoutMs(absl::Duration remaining) {
  const int64_t ms =
      absl::ToInt64Milliseconds(absl::Ceil(remaining, absl::Milliseconds(1)));
  return ms > 0 && ms <= int64_t{UINT32_MAX} ? static_cast<uint32_t>(ms) : 0;
}

}  // namespace

size_t CountRequestHeaderFields(const CallDescription& call) {
  // :method, :scheme, :path, :authority, te, content-type are always present.
  size_t count = 6;
  count += HasDeadline(call);
  count += SendsEncoding(call);
  count += !call.accept_encodings.empty();
  count += !call.user_agent.empty();
  count += SendsPreviousAttempts(call);
  count += !call.traceparent.empty();
  count += !call.tracestate.empty();
  if (call.metadata != nullptr) count += call.metadata->size();
  for (const Metadata* metadata : call.credential_metadata) {
    if (metadata != nullptr) count += metadata->size();
  }
  return count;
}

Status BuildRequestHeaders(const CallDescription& call, io::MonotonicTime now,
                           HeaderList* headers) {
  if (call.method_path.empty() || call.method_path[0] != '/') {
    return Status(StatusCode::kInternal,
                  absl::StrCat("invalid method path '", call.method_path,
                               "': it must look like /package.Service/Method"));
  }
  if (call.authority.empty()) {
    return Status(StatusCode::kInternal, "the call has no :authority");
  }
  if (HasDeadline(call) && call.deadline <= now) {
    return Status(StatusCode::kDeadlineExceeded,
                  "deadline exceeded before the call started");
  }
  if (call.metadata != nullptr) {
    Status status = ValidateOutgoingMetadata(*call.metadata);
    if (!status.ok()) return status;
  }

  GrpcTimeoutText timeout;
  uint32_t connect_timeout_ms = 0;
  if (HasDeadline(call)) {
    if (call.connect_unary) {
      connect_timeout_ms = ConnectTimeoutMs(call.deadline - now);
    } else {
      timeout = EncodeGrpcTimeout(call.deadline - now);
    }
  }
  size_t scratch_bytes =
      timeout.view().size() +
      (connect_timeout_ms > 0 ? HeaderList::DecimalDigits(connect_timeout_ms)
                              : 0) +
      (SendsPreviousAttempts(call)
           ? HeaderList::DecimalDigits(
                 static_cast<uint32_t>(call.previous_attempts))
           : 0) +
      (call.metadata != nullptr
           ? HeaderList::MetadataScratchBytes(*call.metadata)
           : 0);
  for (const Metadata* metadata : call.credential_metadata) {
    if (metadata != nullptr) {
      scratch_bytes += HeaderList::MetadataScratchBytes(*metadata);
    }
  }

  // A Connect call past connect-timeout-ms's range sends no timeout.
  headers->Start(
      CountRequestHeaderFields(call) -
          (call.connect_unary && HasDeadline(call) && connect_timeout_ms == 0),
      scratch_bytes);
  headers->Add(":method", "POST");
  headers->Add(":scheme", call.scheme);
  headers->Add(":path", call.method_path);
  headers->Add(":authority", call.authority);
  if (call.connect_unary) {
    headers->Add("connect-protocol-version", "1");
    if (connect_timeout_ms > 0) {
      headers->AddDecimal("connect-timeout-ms", connect_timeout_ms,
                          NGHTTP2_NV_FLAG_NO_INDEX);
    }
    headers->Add("content-type", call.connect_json ? "application/json"
                                                   : "application/proto");
    if (SendsEncoding(call)) {
      headers->Add("content-encoding", call.send_encoding);
    }
    if (!call.accept_encodings.empty()) {
      headers->Add("accept-encoding", call.accept_encodings);
    }
  } else {
    headers->Add("te", "trailers");
    if (HasDeadline(call)) {
      headers->AddWithScratchValue("grpc-timeout", timeout.view(),
                                   NGHTTP2_NV_FLAG_NO_INDEX);
    }
    headers->Add("content-type", "application/grpc");
    if (SendsEncoding(call)) headers->Add("grpc-encoding", call.send_encoding);
    if (!call.accept_encodings.empty()) {
      headers->Add("grpc-accept-encoding", call.accept_encodings);
    }
  }
  if (!call.user_agent.empty()) headers->Add("user-agent", call.user_agent);
  if (SendsPreviousAttempts(call)) {
    headers->AddDecimal("grpc-previous-rpc-attempts",
                        static_cast<uint32_t>(call.previous_attempts));
  }
  // A traceparent is new on every attempt: indexing it would only churn
  // both ends' HPACK tables.
  if (!call.traceparent.empty()) {
    headers->Add("traceparent", call.traceparent, NGHTTP2_NV_FLAG_NO_INDEX);
  }
  if (!call.tracestate.empty()) headers->Add("tracestate", call.tracestate);
  if (call.metadata != nullptr) headers->AddMetadata(*call.metadata);
  for (const Metadata* metadata : call.credential_metadata) {
    if (metadata != nullptr) headers->AddMetadata(*metadata);
  }
  return Status();
}

}  // namespace h2rpc::transport
