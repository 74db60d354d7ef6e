#ifndef H2RPC_RPC_INTERNAL_TRACING_TRACE_CONTEXT_H_
#define H2RPC_RPC_INTERNAL_TRACING_TRACE_CONTEXT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "rpc/tracing.h"

namespace h2rpc::internal {

// W3C Trace Context (https://www.w3.org/TR/trace-context/), as a call
// carries it: the `traceparent` and `tracestate` request headers.

inline constexpr uint8_t kSampledFlag = 0x01;
// A traceparent of version 00: "00-" 32 hex "-" 16 hex "-" 2 hex.
inline constexpr size_t kTraceparentSize = 55;
// The longest tracestate propagated (W3C's "at least 512 characters"); a
// longer one, or one of more than 32 members, is dropped whole.
inline constexpr size_t kMaxTracestateSize = 512;
inline constexpr size_t kMaxTracestateMembers = 32;

// Parses a `traceparent` value (surrounding spaces and tabs allowed) into
// `*context` as W3C's processing model says: version 00 exactly 55
// characters; a higher version at least 55, its fields followed by the end
// or a dash; lowercase hex only; version ff, an all-zero trace id or parent
// id, or anything else malformed: false, `*context` untouched (the caller
// starts a new trace). Flags other than W3C's known ones (sampled, random)
// are cleared. Allocates nothing.
bool ParseTraceparent(absl::string_view value, TraceContext* context);

// Writes the version-00 `traceparent` of `context` into `out`
// (kTraceparentSize characters, no terminator).
void FormatTraceparent(const TraceContext& context, char* out);

// Whether `value` is a `tracestate` to propagate: at most
// kMaxTracestateSize characters and kMaxTracestateMembers list members,
// each empty or `key=value` with W3C's key and value characters. Others are
// dropped whole (W3C allows a vendor to discard an unparsable tracestate).
bool ValidTracestate(absl::string_view value);

// New random ids, never all zero, from a generator of the calling thread.
// Allocate nothing after the thread's first.
TraceId NewTraceId();
SpanId NewSpanId();

// A new span's identity (its span id new): in `parent`'s trace, sampled as
// it is, when `parent` is valid (OpenTelemetry's ParentBased); otherwise
// in a new trace, sampled with `probability` (SampledByRatio).
TraceContext NewSpanContext(const TraceContext& parent, double probability);

// OpenTelemetry's TraceIdRatioBased decision: sampled when the trace id's
// last 8 bytes, as a big-endian number with its top bit cleared, are below
// `probability` x 2^63, so every process decides a trace alike.
bool SampledByRatio(const TraceId& trace_id, double probability);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_TRACING_TRACE_CONTEXT_H_
