#include "rpc/internal/server/server_call_tracing.h"

#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "rpc/internal/server/server_context_access.h"
#include "rpc/internal/tracing/span_names.h"
#include "rpc/internal/tracing/trace_context.h"

namespace h2rpc::internal {

void ServerCallTracing::Start(Tracer* tracer,
                              const transport::http2::ServerStream& stream,
                              absl::string_view method,
                              ServerContext* context) {
  tracer_ = nullptr;
  if (tracer == nullptr) {
    ServerContextAccess::SetTrace(context, TraceContext(), absl::string_view());
    return;
  }
  const Metadata& metadata = stream.client_metadata();
  TraceContext parent;
  const absl::optional<absl::string_view> traceparent =
      metadata.Get("traceparent");
  const bool has_parent =
      traceparent.has_value() && ParseTraceparent(*traceparent, &parent);
  absl::string_view trace_state;
  if (has_parent) {
    const absl::optional<absl::string_view> state = metadata.Get("tracestate");
    if (state.has_value() && ValidTracestate(*state)) trace_state = *state;
  }
  const TraceContext span =
      NewSpanContext(parent, tracer->options().sampling_probability);
  ServerContextAccess::SetTrace(context, span, trace_state);
  if (!span.sampled()) return;
  tracer_ = tracer;
  sent_ = received_ = 0;
  span_ = SpanData();
  span_.trace_id = span.trace_id;
  span_.span_id = span.span_id;
  if (has_parent) {
    span_.parent_span_id = parent.span_id;
    span_.parent_is_remote = true;
  }
  span_.trace_flags = span.flags;
  span_.trace_state = std::string(trace_state);
  span_.name = SpanName("Recv", method);
  span_.kind = SpanData::Kind::kServer;
  span_.start = absl::Now();
}

void ServerCallTracing::OnReceive(size_t bytes) {
  if (tracer_ == nullptr) return;
  span_.events.push_back(MessageEvent("Inbound message", received_++, bytes));
}

void ServerCallTracing::OnSend(size_t bytes) {
  if (tracer_ == nullptr) return;
  span_.events.push_back(MessageEvent("Outbound message", sent_++, bytes));
}

void ServerCallTracing::End(const transport::http2::ServerStream& stream,
                            const Status& status) {
  if (tracer_ == nullptr) return;
  SetSpanStatus(stream.finished() || stream.cancelled()
                    ? status
                    : Status(StatusCode::kUnknown, "the call was not finished"),
                &span_);
  span_.end = absl::Now();
  TracerAccess::Submit(*tracer_, std::move(span_));
  tracer_ = nullptr;
}

}  // namespace h2rpc::internal
