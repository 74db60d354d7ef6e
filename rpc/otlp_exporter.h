#ifndef H2RPC_RPC_OTLP_EXPORTER_H_
#define H2RPC_RPC_OTLP_EXPORTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "rpc/channel.h"
#include "rpc/status.h"
#include "rpc/tracing.h"

namespace h2rpc {

// Settings of an OtlpGrpcExporter. Every field: default, unit. A value out
// of range is misuse (reported by the constructor; a debug build aborts;
// otherwise the default is used).
struct OtlpGrpcExporterOptions {
  // The deadline of each Export, from its start, for all its attempts: a
  // collector that has not answered by then fails the batch with
  // DEADLINE_EXCEEDED. Keep it below the tracer's export_timeout (a later
  // answer counts as failed there). More than zero; InfiniteDuration: none.
  // Duration.
  absl::Duration timeout = absl::Seconds(10);
  // Retries, by OTLP's rule: a call failing with CANCELLED,
  // DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE or DATA_LOSS is
  // made again, up to max_attempts calls in all, after a backoff of
  // initial_backoff, times backoff_multiplier for each further one, at most
  // max_backoff, each shifted at random by up to 20%; only while the
  // backoff ends before `timeout`. RESOURCE_EXHAUSTED is not retried (OTLP
  // retries it only when the collector sends RetryInfo, which this exporter
  // does not read). The defaults are OpenTelemetry's SDKs'. max_attempts at
  // least 1 (1: no retries); backoffs more than zero; multiplier at least 1.
  int max_attempts = 5;
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(5);
  double backoff_multiplier = 1.5;
  // The resource's service.name attribute of every span exported.
  std::string service_name = "unknown_service";
};

// A SpanExporter sending spans to an OpenTelemetry collector over OTLP/gRPC
// (opentelemetry-proto's
// /opentelemetry.proto.collector.trace.v1.TraceService/Export, port 4317 by
// convention) through an h2rpc Channel:
//
//   TracerOptions options;
//   options.exporter = std::make_shared<OtlpGrpcExporter>(
//       CreateChannel("dns:///collector:4317"), exporter_options);
//   auto tracer = std::make_shared<Tracer>(std::move(options));
//
// Each Export sends its spans as one ExportTraceServiceRequest: one
// ResourceSpans (the resource: service.name), one ScopeSpans (the
// instrumentation scope "h2rpc", version Version() of rpc/version.h), and
// each SpanData field by field: ids as bytes (parent_span_id empty for a
// root span), flags (the W3C trace flags in bits 0-7, bit 8 always set,
// bit 9 when the parent is remote), trace_state, name, kind, times as Unix
// nanoseconds (a time before 1970 as 0), attributes and events (bool, int
// and string values), status (its message only for an error).
//
// Results. A call that fails is retried if its code is one OTLP retries
// (OtlpGrpcExporterOptions); the last failure is returned (the tracer
// counts the batch as failed, and drops it). A partial success (the
// collector rejected some spans: partial_success.rejected_spans > 0) is OK,
// the rejected spans counted in rejected_spans(). The calls do not wait for
// the channel to connect (wait_for_ready false): with no collector
// listening, each attempt fails at once with UNAVAILABLE.
//
// The channel should not trace its own calls (no ChannelOptions::tracer):
// each export would make spans for the next one. Collectors usually accept
// requests of up to 4 MiB: keep TracerOptions::max_export_batch_size such
// that a batch stays well below.
//
// Threads: Export runs on the calling thread (the tracer's export thread)
// and blocks for its calls and the backoffs between them; thread-safe, also
// concurrently. Allocations:
// each Export builds its request (a copy of the spans' strings) and the
// call's buffers.
class OtlpGrpcExporter final : public SpanExporter {
 public:
  static constexpr char kExportMethod[] =
      "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

  // Exports over `channel`. A null `channel` is misuse (reported; a debug
  // build aborts; otherwise every Export fails with INTERNAL).
  explicit OtlpGrpcExporter(
      std::shared_ptr<Channel> channel,
      OtlpGrpcExporterOptions options = OtlpGrpcExporterOptions());
  OtlpGrpcExporter(const OtlpGrpcExporter&) = delete;
  OtlpGrpcExporter& operator=(const OtlpGrpcExporter&) = delete;

  // Sends `spans` (none: OK without a call) and blocks until the
  // collector's answer (after retries) or options().timeout.
  Status Export(const std::vector<SpanData>& spans) override;

  // The spans collectors reported rejected in partial successes, since
  // construction. Any thread; allocates nothing.
  uint64_t rejected_spans() const {
    return rejected_spans_.load(std::memory_order_relaxed);
  }
  // The options in use.
  const OtlpGrpcExporterOptions& options() const { return options_; }

 private:
  const std::shared_ptr<Channel> channel_;
  const OtlpGrpcExporterOptions options_;
  std::atomic<uint64_t> rejected_spans_{0};
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_OTLP_EXPORTER_H_
