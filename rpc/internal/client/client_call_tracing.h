#ifndef H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CALL_TRACING_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CALL_TRACING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "rpc/client_context.h"
#include "rpc/internal/tracing/trace_context.h"
#include "rpc/status.h"
#include "rpc/tracing.h"
#include "transport/core/call_setup.h"

namespace h2rpc::internal {

// A client call's spans (gRPC's A72, rpc/tracing.h): the call span
// "Sent.<service>.<method>", a child "Attempt.<service>.<method>" per
// attempt (retries and transparent retries included), and the traceparent
// (with the context's tracestate) each attempt sends, from the attempt's
// span. Part of a pooled call object.
//
// Threads: StartCall, and the first sends of a unary call, on the thread
// starting the call; the rest on the channel's loop thread (EndCall also on
// the starting thread for a call that never reached the loop). Without a
// tracer each step is one branch; an unsampled call draws its ids and
// formats its header, and allocates nothing; a sampled one allocates its
// spans' names, attributes and events.
class ClientCallTracing {
 public:
  // The call to `method` ("/pkg.Service/Method") starts; `tracer` null:
  // no tracing. The trace continues `context`'s trace parent if valid,
  // else starts (sampled by the tracer's probability).
  void StartCall(Tracer* tracer, const ClientContext& context,
                 absl::string_view method);

  // Loop thread: an attempt starts; `*description` gets its traceparent
  // and tracestate, views into this object and the call's ClientContext,
  // valid until the next attempt. `previous_attempts`:
  // the attempts before it, transparent retries not counted.
  void StartAttempt(transport::CallDescription* description,
                    int previous_attempts);
  // The next attempt is a transparent retry.
  void SetNextAttemptTransparent() { next_transparent_ = true; }
  // A message of `bytes` (serialized, uncompressed) is sent or received:
  // an event on the attempt span (a message sent before the first
  // attempt, a unary request, on every attempt's span).
  void OnSend(size_t bytes);
  void OnReceive(size_t bytes);
  // Loop thread: the attempt under way, if any, ended with `status`.
  void EndAttempt(const Status& status);
  // The call ended with `status` (the attempt under way with it).
  void EndCall(const Status& status);

 private:
  Tracer* tracer_ = nullptr;
  bool sampled_ = false;
  bool attempt_open_ = false;
  bool next_transparent_ = false;
  TraceContext call_;              // the call span's ids and flags
  absl::string_view trace_state_;  // the context's, if valid
  char traceparent_[kTraceparentSize];
  // Sampled only.
  absl::string_view method_;
  SpanData call_span_;
  SpanData attempt_span_;
  int64_t sent_ = 0;
  int64_t received_ = 0;
  std::vector<int64_t> sent_before_attempts_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CLIENT_CALL_TRACING_H_
