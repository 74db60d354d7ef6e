// OtlpGrpcExporter against an h2rpc OTLP receiver in this process (a real
// Server on 127.0.0.1 implementing TraceService/Export with the h2rpc stubs
// of //proto:otlp_trace_h2rpc_proto), fed by a Tracer: every field of the
// spans as the receiver gets them, a partial success, a failing receiver
// (no retry), the timeout, a receiver that is down, and a null channel.

#include "rpc/otlp_exporter.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/opentelemetry/proto/collector/trace/v1/trace_service.h2rpc.pb.h"
#include "proto/opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "rpc/channel.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/server.h"
#include "rpc/status.h"
#include "rpc/tracing.h"
#include "rpc/version.h"

namespace h2rpc {
namespace {

using ::opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using ::opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;
using ::opentelemetry::proto::collector::trace::v1::TraceService;
using ::testing::SizeIs;

constexpr absl::Duration kHangTimeout = absl::Seconds(30);

// Records the requests it gets and answers with `response()`, or fails
// them with `status()`; with hold(), each call waits for release() first.
class Receiver : public TraceService::Service {
 public:
  Status Export(ServerContext*, const ExportTraceServiceRequest* request,
                ExportTraceServiceResponse* response) override {
    MutexLock lock(&mu_);
    requests_.push_back(*request);
    while (held_) released_.Wait(&mu_);
    *response = response_;
    if (failures_left_ > 0) {
      --failures_left_;
      return status_;
    }
    return Status();
  }

  void set_response(ExportTraceServiceResponse response) {
    MutexLock lock(&mu_);
    response_ = std::move(response);
  }
  // The next `times` calls (all: the default) fail with `status`.
  void set_status(Status status, int times = 1 << 30) {
    MutexLock lock(&mu_);
    status_ = std::move(status);
    failures_left_ = times;
  }
  void hold() {
    MutexLock lock(&mu_);
    held_ = true;
  }
  void release() {
    MutexLock lock(&mu_);
    held_ = false;
    released_.SignalAll();
  }
  std::vector<ExportTraceServiceRequest> requests() {
    MutexLock lock(&mu_);
    return requests_;
  }

 private:
  Mutex mu_;
  CondVar released_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  Status status_ ABSL_GUARDED_BY(mu_);
  int failures_left_ ABSL_GUARDED_BY(mu_) = 0;
  ExportTraceServiceResponse response_ ABSL_GUARDED_BY(mu_);
  std::vector<ExportTraceServiceRequest> requests_ ABSL_GUARDED_BY(mu_);
};

// The receiver on an h2rpc server at 127.0.0.1:port().
class ReceiverServer {
 public:
  ReceiverServer() {
    Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_);
    receiver_.AddTo(builder);
    server_ = builder.BuildAndStart(&status_);
  }
  ~ReceiverServer() { receiver_.release(); }

  bool ok() const { return server_ != nullptr && port_ > 0; }
  const Status& status() const { return status_; }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }
  Receiver& receiver() { return receiver_; }

 private:
  Receiver receiver_;  // outlives the server
  int port_ = 0;
  Status status_;
  std::unique_ptr<Server> server_;
};

// 2023-11-14T22:13:20.123456789Z and on.
absl::Time At(int64_t nanos_after) {
  return absl::FromUnixNanos(int64_t{1'700'000'000'123'456'789} + nanos_after);
}

template <size_t kSize>
std::array<uint8_t, kSize> Id(uint8_t first) {
  std::array<uint8_t, kSize> id;
  for (size_t i = 0; i < kSize; ++i) id[i] = static_cast<uint8_t>(first + i);
  return id;
}

// A client span, a root, sampled, with attributes of each kind, events and
// an error.
SpanData ClientSpan() {
  SpanData span;
  span.trace_id = Id<16>(0x10);
  span.span_id = Id<8>(0xa0);
  span.trace_flags = 0x01;
  span.name = "Attempt.grpc.testing.TestService.UnaryCall";
  span.kind = SpanData::Kind::kClient;
  span.start = At(0);
  span.end = At(5'000'000);
  span.attributes = {{"previous-rpc-attempts", int64_t{2}},
                     {"transparent-retry", true},
                     {"peer", std::string("127.0.0.1:1")}};
  span.events = {
      {"Outbound message",
       At(1'000),
       {{"sequence-number", int64_t{0}}, {"message-size", int64_t{42}}}},
      {"Delayed LB pick complete", At(500), {}}};
  span.status = SpanData::StatusCode::kError;
  span.status_message = "UNAVAILABLE, unable to resolve host";
  return span;
}

// A server span with a remote parent, a tracestate and an OK status (whose
// message is not sent).
SpanData ServerSpan() {
  SpanData span;
  span.trace_id = Id<16>(0x10);
  span.span_id = Id<8>(0xb0);
  span.parent_span_id = Id<8>(0xa0);
  span.parent_is_remote = true;
  span.trace_flags = 0x03;
  span.trace_state = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
  span.name = "Recv.grpc.testing.TestService.UnaryCall";
  span.kind = SpanData::Kind::kServer;
  span.start = At(2'000'000);
  span.end = At(3'000'000);
  span.status = SpanData::StatusCode::kOk;
  span.status_message = "not sent";
  return span;
}

// An internal span with a local parent, unset status, unsampled flags, and a
// start before 1970.
SpanData InternalSpan() {
  SpanData span;
  span.trace_id = Id<16>(0x30);
  span.span_id = Id<8>(0xc0);
  span.parent_span_id = Id<8>(0xd0);
  span.name = "Sent.grpc.testing.TestService.UnaryCall";
  span.start = absl::UnixEpoch() - absl::Seconds(1);
  span.end = absl::UnixEpoch() + absl::Nanoseconds(7);
  return span;
}

// The request the three spans above make, service "checkout".
ExportTraceServiceRequest ExpectedRequest() {
  constexpr char kText[] = R"pb(
    resource_spans {
      resource {
        attributes {
          key: "service.name"
          value { string_value: "checkout" }
        }
      }
      scope_spans {
        scope { name: "h2rpc" }
        spans {
          trace_id: "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
          span_id: "\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7"
          flags: 0x101
          name: "Attempt.grpc.testing.TestService.UnaryCall"
          kind: SPAN_KIND_CLIENT
          start_time_unix_nano: 1700000000123456789
          end_time_unix_nano: 1700000000128456789
          attributes {
            key: "previous-rpc-attempts"
            value { int_value: 2 }
          }
          attributes {
            key: "transparent-retry"
            value { bool_value: true }
          }
          attributes {
            key: "peer"
            value { string_value: "127.0.0.1:1" }
          }
          events {
            time_unix_nano: 1700000000123457789
            name: "Outbound message"
            attributes {
              key: "sequence-number"
              value { int_value: 0 }
            }
            attributes {
              key: "message-size"
              value { int_value: 42 }
            }
          }
          events {
            time_unix_nano: 1700000000123457289
            name: "Delayed LB pick complete"
          }
          status {
            code: STATUS_CODE_ERROR
            message: "UNAVAILABLE, unable to resolve host"
          }
        }
        spans {
          trace_id: "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
          span_id: "\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7"
          parent_span_id: "\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7"
          flags: 0x303
          trace_state: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
          name: "Recv.grpc.testing.TestService.UnaryCall"
          kind: SPAN_KIND_SERVER
          start_time_unix_nano: 1700000000125456789
          end_time_unix_nano: 1700000000126456789
          status { code: STATUS_CODE_OK }
        }
        spans {
          trace_id: "\x30\x31\x32\x33\x34\x35\x36\x37\x38\x39\x3a\x3b\x3c\x3d\x3e\x3f"
          span_id: "\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7"
          parent_span_id: "\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7"
          flags: 0x100
          name: "Sent.grpc.testing.TestService.UnaryCall"
          kind: SPAN_KIND_INTERNAL
          start_time_unix_nano: 0
          end_time_unix_nano: 7
        }
      }
    }
  )pb";
  ExportTraceServiceRequest request;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kText, &request));
  request.mutable_resource_spans(0)
      ->mutable_scope_spans(0)
      ->mutable_scope()
      ->set_version(Version());
  return request;
}

// Fails the test with the differences unless `actual` equals `expected`.
void ExpectEqual(const google::protobuf::Message& actual,
                 const google::protobuf::Message& expected) {
  std::string differences;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(expected, actual))
      << differences << "\nactual: " << actual.DebugString();
}

OtlpGrpcExporterOptions ExporterOptions() {
  OtlpGrpcExporterOptions options;
  options.service_name = "checkout";
  options.timeout = kHangTimeout;
  options.max_attempts = 3;
  options.initial_backoff = absl::Milliseconds(1);
  options.max_backoff = absl::Milliseconds(2);
  return options;
}

// A tracer exporting only on ForceFlush.
TracerOptions FlushOnly(std::shared_ptr<SpanExporter> exporter) {
  TracerOptions options;
  options.exporter = std::move(exporter);
  options.schedule_delay = absl::InfiniteDuration();
  return options;
}

void Submit(Tracer& tracer, SpanData span) {
  internal::TracerAccess::Submit(tracer, std::move(span));
}

bool MisuseIsFatalByDefault() {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

TEST(OtlpGrpcExporterTest, EveryFieldOfATracersSpansArrives) {
  ReceiverServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto exporter = std::make_shared<OtlpGrpcExporter>(
      CreateChannel(server.target()), ExporterOptions());
  Tracer tracer(FlushOnly(exporter));
  Submit(tracer, ClientSpan());
  Submit(tracer, ServerSpan());
  Submit(tracer, InternalSpan());
  ASSERT_TRUE(tracer.ForceFlush(absl::Now() + kHangTimeout));

  const std::vector<ExportTraceServiceRequest> requests =
      server.receiver().requests();
  ASSERT_THAT(requests, SizeIs(1));
  ExpectEqual(requests[0], ExpectedRequest());
  const Tracer::Stats stats = tracer.stats();
  EXPECT_EQ(stats.exported, 3u);
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_EQ(exporter->rejected_spans(), 0u);
}

TEST(OtlpGrpcExporterTest, APartialSuccessIsOkAndCountsTheRejectedSpans) {
  ReceiverServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ExportTraceServiceResponse partial;
  partial.mutable_partial_success()->set_rejected_spans(2);
  partial.mutable_partial_success()->set_error_message("too old");
  server.receiver().set_response(partial);
  OtlpGrpcExporter exporter(CreateChannel(server.target()), ExporterOptions());

  EXPECT_TRUE(exporter.Export({ClientSpan(), ServerSpan()}).ok());
  EXPECT_TRUE(exporter.Export({InternalSpan()}).ok());
  EXPECT_EQ(exporter.rejected_spans(), 4u);
  // A warning (nothing rejected) counts nothing.
  ExportTraceServiceResponse warning;
  warning.mutable_partial_success()->set_error_message("slow down");
  server.receiver().set_response(warning);
  EXPECT_TRUE(exporter.Export({InternalSpan()}).ok());
  EXPECT_EQ(exporter.rejected_spans(), 4u);
}

TEST(OtlpGrpcExporterTest, RetryableFailuresAreRetriedUpToMaxAttempts) {
  ReceiverServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto exporter = std::make_shared<OtlpGrpcExporter>(
      CreateChannel(server.target()), ExporterOptions());
  // Twice UNAVAILABLE, then an answer: the third attempt succeeds.
  server.receiver().set_status(Status(StatusCode::kUnavailable, "busy"), 2);
  Status status = exporter->Export({ClientSpan()});
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(server.receiver().requests(), SizeIs(3));

  // UNAVAILABLE every time: max_attempts (3) calls, the last status back.
  server.receiver().set_status(Status(StatusCode::kUnavailable, "busy"));
  status = exporter->Export({ClientSpan()});
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_EQ(status.message(), "busy");
  EXPECT_THAT(server.receiver().requests(), SizeIs(6));

  Tracer tracer(FlushOnly(exporter));
  Submit(tracer, ClientSpan());
  Submit(tracer, ServerSpan());
  ASSERT_TRUE(tracer.ForceFlush(absl::Now() + kHangTimeout));
  EXPECT_THAT(server.receiver().requests(), SizeIs(9));
  const Tracer::Stats stats = tracer.stats();
  EXPECT_EQ(stats.failed, 2u);
  EXPECT_EQ(stats.exported, 0u);
}

TEST(OtlpGrpcExporterTest, OtherFailuresAreNotRetried) {
  ReceiverServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  OtlpGrpcExporter exporter(CreateChannel(server.target()), ExporterOptions());
  int calls = 0;
  for (StatusCode code :
       {StatusCode::kInvalidArgument, StatusCode::kResourceExhausted,
        StatusCode::kPermissionDenied, StatusCode::kUnimplemented}) {
    server.receiver().set_status(Status(code, "no"));
    const Status status = exporter.Export({ClientSpan()});
    EXPECT_EQ(status.code(), code) << status.ToString();
    EXPECT_THAT(server.receiver().requests(), SizeIs(++calls));
  }
}

// A backoff that would end past the Export's deadline is not waited out.
TEST(OtlpGrpcExporterTest, NoRetryStartsAfterTheDeadline) {
  ReceiverServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  OtlpGrpcExporterOptions options = ExporterOptions();
  options.initial_backoff = kHangTimeout * 4;
  options.max_backoff = kHangTimeout * 4;
  OtlpGrpcExporter exporter(CreateChannel(server.target()), options);
  server.receiver().set_status(Status(StatusCode::kUnavailable, "busy"));
  const Status status = exporter.Export({ClientSpan()});
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(server.receiver().requests(), SizeIs(1));
}

TEST(OtlpGrpcExporterTest, AnExportFailsAtItsTimeout) {
  ReceiverServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  server.receiver().hold();
  OtlpGrpcExporterOptions options = ExporterOptions();
  options.timeout = absl::Milliseconds(100);
  OtlpGrpcExporter exporter(CreateChannel(server.target()), options);

  const absl::Time start = absl::Now();
  const Status status = exporter.Export({ClientSpan()});
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_GE(absl::Now() - start, options.timeout);
  server.receiver().release();
}

TEST(OtlpGrpcExporterTest, AReceiverThatIsDownFailsTheExportAfterItsRetries) {
  std::string target;
  {
    ReceiverServer gone;
    ASSERT_TRUE(gone.ok()) << gone.status().ToString();
    target = gone.target();
  }
  // Nothing listens at `target` now. A blocked call would end with
  // DEADLINE_EXCEEDED at the exporter's timeout (kHangTimeout).
  auto exporter = std::make_shared<OtlpGrpcExporter>(CreateChannel(target),
                                                     ExporterOptions());
  const Status status = exporter->Export({ClientSpan()});
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();

  {
    Tracer tracer(FlushOnly(exporter));
    Submit(tracer, ClientSpan());
    Submit(tracer, ServerSpan());
    ASSERT_TRUE(tracer.ForceFlush(absl::Now() + kHangTimeout));
    const Tracer::Stats stats = tracer.stats();
    EXPECT_EQ(stats.ended, 2u);
    EXPECT_EQ(stats.failed, 2u);
    EXPECT_EQ(stats.exported, 0u);
    // Queued at the destruction: exported (and failed) by the destructor.
    Submit(tracer, InternalSpan());
  }
}

TEST(OtlpGrpcExporterTest, NoSpansMakeNoCall) {
  ReceiverServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  OtlpGrpcExporter exporter(CreateChannel(server.target()), ExporterOptions());
  EXPECT_TRUE(exporter.Export({}).ok());
  EXPECT_THAT(server.receiver().requests(), SizeIs(0));
}

TEST(OtlpGrpcExporterOptionsTest, Defaults) {
  const OtlpGrpcExporterOptions options;
  EXPECT_EQ(options.timeout, absl::Seconds(10));
  EXPECT_EQ(options.service_name, "unknown_service");
  EXPECT_EQ(options.max_attempts, 5);
  EXPECT_EQ(options.initial_backoff, absl::Seconds(1));
  EXPECT_EQ(options.max_backoff, absl::Seconds(5));
  EXPECT_EQ(options.backoff_multiplier, 1.5);
}

TEST(OtlpGrpcExporterMisuseTest, ANullChannelAbortsWhenMisuseIsFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  internal::SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(OtlpGrpcExporter{nullptr},
               "API misuse: OtlpGrpcExporter given a null Channel");
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

TEST(OtlpGrpcExporterMisuseTest, WithANullChannelExportsFailWithInternal) {
  internal::SetMisuseIsFatalForTest(false);
  OtlpGrpcExporter exporter(nullptr);
  const Status status = exporter.Export({ClientSpan()});
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(status.message(), "OtlpGrpcExporter was given a null Channel");
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

TEST(OtlpGrpcExporterMisuseTest, OptionsOutOfRangeAreReplaced) {
  internal::SetMisuseIsFatalForTest(false);
  OtlpGrpcExporterOptions options;
  options.timeout = absl::ZeroDuration();
  options.max_attempts = 0;
  options.initial_backoff = -absl::Seconds(1);
  options.backoff_multiplier = 0.5;
  OtlpGrpcExporter exporter(CreateChannel("127.0.0.1:1"), options);
  EXPECT_EQ(exporter.options().timeout, absl::Seconds(10));
  EXPECT_EQ(exporter.options().max_attempts, 5);
  EXPECT_EQ(exporter.options().initial_backoff, absl::Seconds(1));
  EXPECT_EQ(exporter.options().backoff_multiplier, 1.5);
  internal::SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
}

}  // namespace
}  // namespace h2rpc
