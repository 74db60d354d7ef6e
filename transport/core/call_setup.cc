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

}  // namespace

size_t CountRequestHeaderFields(const CallDescription& call) {
  // :method, :scheme, :path, :authority, te, content-type are always present.
  size_t count = 6;
  count += HasDeadline(call);
  count += SendsEncoding(call);
  count += !call.accept_encodings.empty();
  count += !call.user_agent.empty();
  count += call.previous_attempts > 0;
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
  if (HasDeadline(call)) timeout = EncodeGrpcTimeout(call.deadline - now);
  size_t scratch_bytes = timeout.view().size() +
                         (call.previous_attempts > 0
                              ? HeaderList::DecimalDigits(static_cast<uint32_t>(
                                    call.previous_attempts))
                              : 0) +
                         (call.metadata != nullptr
                              ? HeaderList::MetadataScratchBytes(*call.metadata)
                              : 0);
  for (const Metadata* metadata : call.credential_metadata) {
    if (metadata != nullptr) {
      scratch_bytes += HeaderList::MetadataScratchBytes(*metadata);
    }
  }

  headers->Start(CountRequestHeaderFields(call), scratch_bytes);
  headers->Add(":method", "POST");
  headers->Add(":scheme", call.scheme);
  headers->Add(":path", call.method_path);
  headers->Add(":authority", call.authority);
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
  if (!call.user_agent.empty()) headers->Add("user-agent", call.user_agent);
  if (call.previous_attempts > 0) {
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
