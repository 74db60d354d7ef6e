#include "rpc/internal/client/client_call_tracing.h"

#include <utility>

#include "absl/time/clock.h"
#include "rpc/internal/tracing/span_names.h"

namespace h2rpc::internal {

void ClientCallTracing::StartCall(Tracer* tracer, const ClientContext& context,
                                  absl::string_view method) {
  tracer_ = tracer;
  attempt_open_ = false;
  next_transparent_ = false;
  if (tracer == nullptr) return;
  const TraceContext& parent = context.trace_parent();
  call_ = NewSpanContext(parent, tracer->options().sampling_probability);
  trace_state_ = parent.valid() && ValidTracestate(context.trace_state())
                     ? absl::string_view(context.trace_state())
                     : absl::string_view();
  sampled_ = call_.sampled();
  if (!sampled_) return;
  method_ = method;
  sent_ = received_ = 0;
  sent_before_attempts_.clear();
  call_span_ = SpanData();
  call_span_.trace_id = call_.trace_id;
  call_span_.span_id = call_.span_id;
  if (parent.valid()) call_span_.parent_span_id = parent.span_id;
  call_span_.trace_flags = call_.flags;
  call_span_.trace_state = std::string(trace_state_);
  call_span_.name = SpanName("Sent", method);
  call_span_.kind = SpanData::Kind::kClient;
  call_span_.start = absl::Now();
}

void ClientCallTracing::StartAttempt(transport::CallDescription* description,
                                     int previous_attempts) {
  if (tracer_ == nullptr) return;
  const bool transparent = next_transparent_;
  next_transparent_ = false;
  TraceContext attempt = call_;
  attempt.span_id = NewSpanId();
  FormatTraceparent(attempt, traceparent_);
  description->traceparent = absl::string_view(traceparent_, kTraceparentSize);
  description->tracestate = trace_state_;
  attempt_open_ = true;
  if (!sampled_) return;
  attempt_span_ = SpanData();
  attempt_span_.trace_id = attempt.trace_id;
  attempt_span_.span_id = attempt.span_id;
  attempt_span_.parent_span_id = call_.span_id;
  attempt_span_.trace_flags = attempt.flags;
  attempt_span_.trace_state = call_span_.trace_state;
  attempt_span_.name = SpanName("Attempt", method_);
  attempt_span_.kind = SpanData::Kind::kClient;
  attempt_span_.start = absl::Now();
  attempt_span_.attributes.push_back(
      {"previous-rpc-attempts", static_cast<int64_t>(previous_attempts)});
  attempt_span_.attributes.push_back({"transparent-retry", transparent});
  sent_ = received_ = 0;
  for (const int64_t bytes : sent_before_attempts_) {
    attempt_span_.events.push_back(
        MessageEvent("Outbound message", sent_++, static_cast<size_t>(bytes)));
  }
}

void ClientCallTracing::OnSend(size_t bytes) {
  if (!sampled_) return;
  if (!attempt_open_) {
    sent_before_attempts_.push_back(static_cast<int64_t>(bytes));
    return;
  }
  attempt_span_.events.push_back(
      MessageEvent("Outbound message", sent_++, bytes));
}

void ClientCallTracing::OnReceive(size_t bytes) {
  if (!sampled_ || !attempt_open_) return;
  attempt_span_.events.push_back(
      MessageEvent("Inbound message", received_++, bytes));
}

void ClientCallTracing::EndAttempt(const Status& status) {
  if (!attempt_open_) return;
  attempt_open_ = false;
  if (!sampled_) return;
  SetSpanStatus(status, &attempt_span_);
  attempt_span_.end = absl::Now();
  TracerAccess::Submit(*tracer_, std::move(attempt_span_));
}

void ClientCallTracing::EndCall(const Status& status) {
  if (tracer_ == nullptr) return;
  EndAttempt(status);
  Tracer* const tracer = tracer_;
  tracer_ = nullptr;
  if (!sampled_) return;
  sampled_ = false;
  SetSpanStatus(status, &call_span_);
  call_span_.end = absl::Now();
  TracerAccess::Submit(*tracer, std::move(call_span_));
}

}  // namespace h2rpc::internal
