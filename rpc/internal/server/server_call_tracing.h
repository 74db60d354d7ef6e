#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_TRACING_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_TRACING_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "rpc/server_context.h"
#include "rpc/tracing.h"
#include "transport/http2/server_session.h"

namespace h2rpc::internal {

// A server call's span (gRPC's A72, rpc/tracing.h), "Recv.<service>.
// <method>": the child of the span the request's traceparent names (the
// client's attempt), or the root of a new trace when it names none or is
// malformed. It starts when the call is dispatched and ends when the call
// releases its stream, with the call's status. Part of a
// pooled call object; loop thread. Without a tracer each step is one
// branch; an unsampled call parses the header and draws a span id, and
// allocates nothing.
class ServerCallTracing {
 public:
  // `tracer` null: no tracing. Gives `*context` the span's identity and
  // the request's tracestate.
  void Start(Tracer* tracer, const transport::http2::ServerStream& stream,
             absl::string_view method, ServerContext* context);
  // A message of `bytes` (serialized, uncompressed) was received or sent.
  void OnReceive(size_t bytes);
  void OnSend(size_t bytes);
  // Before the call releases `stream`, with the status the call ended with
  // (a stream not ended yet is ended by its release, with UNKNOWN).
  void End(const transport::http2::ServerStream& stream, const Status& status);

 private:
  Tracer* tracer_ = nullptr;  // set while a sampled span is open
  SpanData span_;
  int64_t sent_ = 0;
  int64_t received_ = 0;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_TRACING_H_
