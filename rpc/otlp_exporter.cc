#include "rpc/otlp_exporter.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/status.h"
#include "rpc/tracing.h"
#include "rpc/version.h"

namespace h2rpc {
namespace {

namespace otlp_collector = ::opentelemetry::proto::collector::trace::v1;
namespace otlp_common = ::opentelemetry::proto::common::v1;
namespace otlp_trace = ::opentelemetry::proto::trace::v1;

constexpr uint32_t kFlagsHasIsRemote =
    otlp_trace::SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK;
constexpr uint32_t kFlagsIsRemote =
    otlp_trace::SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK;

OtlpGrpcExporterOptions Validated(OtlpGrpcExporterOptions options) {
  const OtlpGrpcExporterOptions defaults;
  for (auto [value, name, fallback] :
       {std::make_tuple(&options.timeout, "timeout", defaults.timeout),
        std::make_tuple(&options.initial_backoff, "initial_backoff",
                        defaults.initial_backoff),
        std::make_tuple(&options.max_backoff, "max_backoff",
                        defaults.max_backoff)}) {
    if (*value <= absl::ZeroDuration()) {
      internal::ReportMisuse(absl::StrCat("OtlpGrpcExporterOptions::", name,
                                          " is ", absl::FormatDuration(*value),
                                          "; it must be more than zero"));
      *value = fallback;
    }
  }
  if (options.max_attempts < 1) {
    internal::ReportMisuse(
        absl::StrCat("OtlpGrpcExporterOptions::max_attempts is ",
                     options.max_attempts, "; it must be at least 1"));
    options.max_attempts = defaults.max_attempts;
  }
  if (!(options.backoff_multiplier >= 1)) {
    internal::ReportMisuse(
        absl::StrCat("OtlpGrpcExporterOptions::backoff_multiplier is ",
                     options.backoff_multiplier, "; it must be at least 1"));
    options.backoff_multiplier = defaults.backoff_multiplier;
  }
  return options;
}

// The codes OTLP/gRPC retries (without the collector's RetryInfo).
bool Retryable(StatusCode code) {
  switch (code) {
    case StatusCode::kCancelled:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kAborted:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnavailable:
    case StatusCode::kDataLoss:
      return true;
    default:
      return false;
  }
}

// `backoff` shifted at random by up to 20% either way.
absl::Duration Jittered(absl::Duration backoff) {
  thread_local std::minstd_rand random(std::random_device{}());
  return backoff * std::uniform_real_distribution<double>(0.8, 1.2)(random);
}

template <size_t kSize>
std::string Bytes(const std::array<uint8_t, kSize>& id) {
  return std::string(id.begin(), id.end());
}

// Nanoseconds since the Unix epoch; 0 before it (fixed64 has no negative).
uint64_t UnixNanos(absl::Time time) {
  const int64_t nanos = absl::ToUnixNanos(time);
  return nanos < 0 ? 0 : static_cast<uint64_t>(nanos);
}

void AddAttribute(
    const std::string& key, const std::string& value,
    google::protobuf::RepeatedPtrField<otlp_common::KeyValue>* attributes) {
  otlp_common::KeyValue* attribute = attributes->Add();
  attribute->set_key(key);
  attribute->mutable_value()->set_string_value(value);
}

void AddAttributes(
    const std::vector<SpanData::Attribute>& from,
    google::protobuf::RepeatedPtrField<otlp_common::KeyValue>* attributes) {
  attributes->Reserve(static_cast<int>(from.size()));
  for (const SpanData::Attribute& attribute : from) {
    otlp_common::KeyValue* to = attributes->Add();
    to->set_key(attribute.key);
    otlp_common::AnyValue* value = to->mutable_value();
    if (const bool* b = std::get_if<bool>(&attribute.value)) {
      value->set_bool_value(*b);
    } else if (const int64_t* i = std::get_if<int64_t>(&attribute.value)) {
      value->set_int_value(*i);
    } else {
      value->set_string_value(std::get<std::string>(attribute.value));
    }
  }
}

otlp_trace::Span::SpanKind Kind(SpanData::Kind kind) {
  switch (kind) {
    case SpanData::Kind::kServer:
      return otlp_trace::Span::SPAN_KIND_SERVER;
    case SpanData::Kind::kClient:
      return otlp_trace::Span::SPAN_KIND_CLIENT;
    case SpanData::Kind::kInternal:
      break;
  }
  return otlp_trace::Span::SPAN_KIND_INTERNAL;
}

void ToSpan(const SpanData& from, otlp_trace::Span* to) {
  to->set_trace_id(Bytes(from.trace_id));
  to->set_span_id(Bytes(from.span_id));
  to->set_trace_state(from.trace_state);
  if (from.parent_span_id != SpanData::SpanId{}) {
    to->set_parent_span_id(Bytes(from.parent_span_id));
  }
  to->set_flags(from.trace_flags | kFlagsHasIsRemote |
                (from.parent_is_remote ? kFlagsIsRemote : 0));
  to->set_name(from.name);
  to->set_kind(Kind(from.kind));
  to->set_start_time_unix_nano(UnixNanos(from.start));
  to->set_end_time_unix_nano(UnixNanos(from.end));
  AddAttributes(from.attributes, to->mutable_attributes());
  to->mutable_events()->Reserve(static_cast<int>(from.events.size()));
  for (const SpanData::Event& event : from.events) {
    otlp_trace::Span::Event* to_event = to->add_events();
    to_event->set_time_unix_nano(UnixNanos(event.time));
    to_event->set_name(event.name);
    AddAttributes(event.attributes, to_event->mutable_attributes());
  }
  switch (from.status) {
    case SpanData::StatusCode::kUnset:
      break;
    case SpanData::StatusCode::kOk:
      to->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_OK);
      break;
    case SpanData::StatusCode::kError:
      to->mutable_status()->set_code(otlp_trace::Status::STATUS_CODE_ERROR);
      to->mutable_status()->set_message(from.status_message);
      break;
  }
}

void ToRequest(const std::vector<SpanData>& spans,
               const std::string& service_name,
               otlp_collector::ExportTraceServiceRequest* request) {
  otlp_trace::ResourceSpans* resource_spans = request->add_resource_spans();
  AddAttribute("service.name", service_name,
               resource_spans->mutable_resource()->mutable_attributes());
  otlp_trace::ScopeSpans* scope_spans = resource_spans->add_scope_spans();
  scope_spans->mutable_scope()->set_name("h2rpc");
  scope_spans->mutable_scope()->set_version(Version());
  scope_spans->mutable_spans()->Reserve(static_cast<int>(spans.size()));
  for (const SpanData& span : spans) ToSpan(span, scope_spans->add_spans());
}

}  // namespace

OtlpGrpcExporter::OtlpGrpcExporter(std::shared_ptr<Channel> channel,
                                   OtlpGrpcExporterOptions options)
    : channel_(std::move(channel)), options_(Validated(std::move(options))) {
  if (channel_ == nullptr) {
    internal::ReportMisuse("OtlpGrpcExporter given a null Channel");
  }
}

Status OtlpGrpcExporter::Export(const std::vector<SpanData>& spans) {
  if (channel_ == nullptr) {
    return Status(StatusCode::kInternal,
                  "OtlpGrpcExporter was given a null Channel");
  }
  if (spans.empty()) return Status();
  otlp_collector::ExportTraceServiceRequest request;
  ToRequest(spans, options_.service_name, &request);
  otlp_collector::ExportTraceServiceResponse response;
  const absl::Time deadline = absl::Now() + options_.timeout;
  absl::Duration backoff = options_.initial_backoff;
  Status status;
  for (int attempt = 1;; ++attempt) {
    ClientContext context;
    context.set_deadline(deadline);
    status = channel_->UnaryCall(&context, kExportMethod, request, &response);
    if (status.ok() || !Retryable(status.code()) ||
        attempt == options_.max_attempts) {
      break;
    }
    const absl::Duration wait = Jittered(backoff);
    if (absl::Now() + wait >= deadline) break;
    absl::SleepFor(wait);
    backoff =
        std::min(backoff * options_.backoff_multiplier, options_.max_backoff);
  }
  if (!status.ok()) return status;
  const int64_t rejected = response.partial_success().rejected_spans();
  if (rejected > 0) {
    rejected_spans_.fetch_add(static_cast<uint64_t>(rejected),
                              std::memory_order_relaxed);
  }
  return Status();
}

}  // namespace h2rpc
