#ifndef H2RPC_RPC_TRACING_H_
#define H2RPC_RPC_TRACING_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/time/time.h"
#include "rpc/status.h"

namespace h2rpc {

namespace internal {
class TracerAccess;
}  // namespace internal

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// A span's identity as W3C trace context propagates it (`traceparent`):
// valid when neither id is all zero. Plain data.
struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};
  uint8_t flags = 0;  // W3C trace-flags: bit 0, sampled

  bool valid() const {
    return trace_id != TraceId{} && span_id != SpanId{};
  }
  bool sampled() const { return (flags & 0x01) != 0; }
};

// A finished span, as a SpanExporter receives it: OpenTelemetry's span
// model, with the spans gRPC's A72 defines (docs/observability.md,
// "Tracing"): per call "Sent.<service>.<method>", per attempt
// "Attempt.<service>.<method>" (its child), on the server
// "Recv.<service>.<method>" (the child of the client's attempt).
struct SpanData {
  using TraceId = h2rpc::TraceId;
  using SpanId = h2rpc::SpanId;
  enum class Kind { kInternal, kServer, kClient };
  enum class StatusCode { kUnset, kOk, kError };
  struct Attribute {
    std::string key;
    std::variant<bool, int64_t, std::string> value;
  };
  struct Event {
    std::string name;
    absl::Time time;
    std::vector<Attribute> attributes;
  };

  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // all zero: a root span
  // The parent came from another process (a server span's, from the
  // request's traceparent).
  bool parent_is_remote = false;
  uint8_t trace_flags = 0;  // W3C trace-flags: bit 0, sampled
  std::string trace_state;  // W3C tracestate, as propagated
  std::string name;
  Kind kind = Kind::kInternal;
  absl::Time start;
  absl::Time end;
  std::vector<Attribute> attributes;
  std::vector<Event> events;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;  // kError only: "CODE, message"
};

// Where a Tracer sends its finished, sampled spans. Export runs on the
// tracer's export thread, one batch (never empty) at a time (never
// concurrently for one tracer, never on a loop thread); it may block, but
// must return within the tracer's export_timeout: a batch whose Export
// fails or returns later than that is dropped and counted as failed, never
// retried by the tracer. An exporter shared by several tracers gets their
// batches concurrently.
class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  virtual Status Export(const std::vector<SpanData>& spans) = 0;
};

// Settings of a Tracer. Every field: default, unit. A value out of the
// range given is misuse (reported by the Tracer's constructor; a debug build
// aborts); otherwise the tracer uses the nearest valid probability,
// max_queue_size for a batch size above it, and the default (a batch size at
// most max_queue_size) for any other field (Tracer::options() returns the
// values in use).
struct TracerOptions {
  // Where finished sampled spans go. Required (null is misuse, as above;
  // then every span is counted as failed).
  std::shared_ptr<SpanExporter> exporter;
  // The probability that a trace started here (a call without a sampled or
  // unsampled parent) is sampled, decided from its trace id as
  // OpenTelemetry's TraceIdRatioBased sampler does, so every process
  // decides a trace alike. A call or server span with a parent follows the
  // parent's sampled flag (OpenTelemetry's ParentBased). 0 to 1.
  double sampling_probability = 1.0;
  // OpenTelemetry's BatchSpanProcessor: finished spans wait in a queue of
  // at most max_queue_size (a span finding it full is dropped and counted);
  // the export thread sends them in batches of at most
  // max_export_batch_size, when a batch is full or schedule_delay after the
  // previous export, and gives each Export export_timeout. More than zero,
  // spans; more than zero and at most max_queue_size, spans; more than zero
  // (InfiniteDuration: only full batches and ForceFlush export), duration;
  // more than zero, duration.
  size_t max_queue_size = 2048;
  size_t max_export_batch_size = 512;
  absl::Duration schedule_delay = absl::Seconds(5);
  absl::Duration export_timeout = absl::Seconds(30);
};

// gRPC's tracing (A72) with W3C trace context: given to channels
// (ChannelOptions::tracer) and servers (ServerOptions::tracer), it samples
// calls, records their spans and hands the finished sampled ones to its
// exporter from a thread of its own. One Tracer may serve any number of
// channels and servers; they hold a reference.
//
// Propagation: a client call's attempt sends `traceparent` (and the
// trace's `tracestate`, if any) in its request headers, whether sampled or
// not; a server call continues the trace its request names (a malformed
// `traceparent` starts a new one), and a ClientContext made from its
// ServerContext (ClientContext::FromServerContext) continues the server
// call's trace, so one trace id follows a call across hops.
//
// Cost: an unsampled call allocates nothing and records nothing but its
// ids and the propagated header; a sampled call allocates its spans'
// names, attributes and events. Recording runs on the threads that run
// the call; the export, on the tracer's thread, never blocks a call: a
// full queue drops the span (stats().dropped).
//
// Threads: the constructor starts the export thread ("h2rpc-tracer"; none
// without an exporter), which alone calls the exporter. Allocations: a
// queue entry per queued span; the export thread's batch vector.
//
// Thread-safe. The destructor exports what is queued, starting no export
// once export_timeout has passed since it began (spans still queued then are
// dropped), waits for the export under way to return and stops the thread;
// it must not run on a loop thread.
class Tracer {
 public:
  explicit Tracer(TracerOptions options);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  const TracerOptions& options() const { return options_; }

  // Exports every span queued so far, at once rather than on the
  // schedule, and blocks until the export of each has returned (true,
  // whatever the exporter returned: stats() counts failures), or until
  // `deadline` (false; the spans are exported all the same). Any thread but
  // a loop thread; from the exporter's Export, false at once. Allocates
  // nothing.
  bool ForceFlush(absl::Time deadline);

  struct Stats {
    uint64_t ended = 0;     // sampled spans finished
    uint64_t exported = 0;  // in batches the exporter accepted
    uint64_t dropped = 0;   // the queue was full
    uint64_t failed = 0;    // in batches failed, late, or without exporter
  };
  // Any thread; allocates nothing.
  Stats stats() const;

 private:
  friend class internal::TracerAccess;
  class Exporting;

  // A finished sampled span; any thread. Queued, or dropped when the queue
  // is full. Never blocks beyond the queue's mutex.
  void Submit(SpanData span);

  const TracerOptions options_;
  const std::unique_ptr<Exporting> exporting_;
};

namespace internal {

class TracerAccess {
 public:
  static void Submit(Tracer& tracer, SpanData span) {
    tracer.Submit(std::move(span));
  }
};

}  // namespace internal

}  // namespace h2rpc

#endif  // H2RPC_RPC_TRACING_H_
