// h2rpc's OtlpGrpcExporter against a gRPC C++ 1.51 OTLP receiver: a
// grpc::Server in this process implementing
// opentelemetry.proto.collector.trace.v1.TraceService/Export (the
// grpc_cpp_plugin stubs of //proto:otlp_trace_grpc_proto), fed by an h2rpc
// Tracer:
//   - the spans of full batches and of the schedule delay arrive in order,
//     every field of a span as sent, with the resource and scope, the call's
//     deadline and h2rpc's user agent;
//   - a partial success is OK with its rejected spans counted; an error
//     status fails the batch, which is not retried.

#include <grpcpp/grpcpp.h>

#include <array>
#include <chrono>
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
#include "proto/opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "proto/opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "rpc/channel.h"
#include "rpc/otlp_exporter.h"
#include "rpc/status.h"
#include "rpc/tracing.h"
#include "rpc/version.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;
using ::opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using ::opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;
using ::opentelemetry::proto::collector::trace::v1::TraceService;
using ::opentelemetry::proto::trace::v1::Span;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// What the receiver saw of one Export call.
struct Received {
  ExportTraceServiceRequest request;
  absl::Time deadline;
  std::string user_agent;
  absl::Time at;
};

// The gRPC C++ receiver: records each call and answers with `response`,
// or fails it with `status`.
class GrpcppReceiver final : public TraceService::Service {
 public:
  grpc::Status Export(grpc::ServerContext* context,
                      const ExportTraceServiceRequest* request,
                      ExportTraceServiceResponse* response) override {
    Received received;
    received.request = *request;
    received.deadline = absl::FromChrono(context->deadline());
    received.at = absl::Now();
    const auto agent = context->client_metadata().find("user-agent");
    if (agent != context->client_metadata().end()) {
      received.user_agent.assign(agent->second.data(), agent->second.size());
    }
    MutexLock lock(&mu_);
    received_.push_back(std::move(received));
    *response = response_;
    return status_;
  }

  void set_response(ExportTraceServiceResponse response) {
    MutexLock lock(&mu_);
    response_ = std::move(response);
  }
  void set_status(grpc::Status status) {
    MutexLock lock(&mu_);
    status_ = std::move(status);
  }
  std::vector<Received> received() {
    MutexLock lock(&mu_);
    return received_;
  }

 private:
  Mutex mu_;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  ExportTraceServiceResponse response_ ABSL_GUARDED_BY(mu_);
  std::vector<Received> received_ ABSL_GUARDED_BY(mu_);
};

class GrpcppOtlpReceiverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&receiver_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() +
                        absl::ToChronoSeconds(kHangTimeout));
    }
  }

  std::shared_ptr<OtlpGrpcExporter> Exporter() {
    OtlpGrpcExporterOptions options;
    options.service_name = "frontend";
    options.timeout = kHangTimeout;
    return std::make_shared<OtlpGrpcExporter>(
        CreateChannel(absl::StrCat("127.0.0.1:", port_)), options);
  }

  GrpcppReceiver receiver_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

template <size_t kSize>
std::array<uint8_t, kSize> Id(uint8_t first) {
  std::array<uint8_t, kSize> id;
  for (size_t i = 0; i < kSize; ++i) id[i] = static_cast<uint8_t>(first + i);
  return id;
}

// A server span with every field set.
SpanData FullSpan() {
  SpanData span;
  span.trace_id = Id<16>(0x40);
  span.span_id = Id<8>(0x60);
  span.parent_span_id = Id<8>(0x70);
  span.parent_is_remote = true;
  span.trace_flags = 0x01;
  span.trace_state = "rojo=00f067aa0ba902b7";
  span.name = "Recv.grpc.testing.TestService.FullDuplexCall";
  span.kind = SpanData::Kind::kServer;
  span.start = absl::FromUnixNanos(1'600'000'000'000'000'001);
  span.end = absl::FromUnixNanos(1'600'000'000'000'000'999);
  span.attributes = {
      {"retried", false}, {"count", int64_t{-3}}, {"route", std::string("/a")}};
  span.events = {
      {"Inbound message",
       absl::FromUnixNanos(1'600'000'000'000'000'500),
       {{"sequence-number", int64_t{1}}, {"message-size", int64_t{314}}}}};
  span.status = SpanData::StatusCode::kError;
  span.status_message = "CANCELLED";
  return span;
}

constexpr char kFullSpanText[] = R"pb(
  trace_id: "\x40\x41\x42\x43\x44\x45\x46\x47\x48\x49\x4a\x4b\x4c\x4d\x4e\x4f"
  span_id: "\x60\x61\x62\x63\x64\x65\x66\x67"
  parent_span_id: "\x70\x71\x72\x73\x74\x75\x76\x77"
  flags: 0x301
  trace_state: "rojo=00f067aa0ba902b7"
  name: "Recv.grpc.testing.TestService.FullDuplexCall"
  kind: SPAN_KIND_SERVER
  start_time_unix_nano: 1600000000000000001
  end_time_unix_nano: 1600000000000000999
  attributes {
    key: "retried"
    value { bool_value: false }
  }
  attributes {
    key: "count"
    value { int_value: -3 }
  }
  attributes {
    key: "route"
    value { string_value: "/a" }
  }
  events {
    time_unix_nano: 1600000000000000500
    name: "Inbound message"
    attributes {
      key: "sequence-number"
      value { int_value: 1 }
    }
    attributes {
      key: "message-size"
      value { int_value: 314 }
    }
  }
  status { code: STATUS_CODE_ERROR message: "CANCELLED" }
)pb";

// A sampled root span named `name`, its span id starting with `first`.
SpanData RootSpan(std::string name, uint8_t first) {
  SpanData span;
  span.trace_id = Id<16>(first);
  span.span_id = Id<8>(first);
  span.trace_flags = 0x01;
  span.name = std::move(name);
  span.kind = SpanData::Kind::kClient;
  span.start = absl::Now();
  span.end = span.start + absl::Milliseconds(1);
  span.status = SpanData::StatusCode::kOk;
  return span;
}

void Submit(Tracer& tracer, SpanData span) {
  internal::TracerAccess::Submit(tracer, std::move(span));
}

std::vector<std::string> SpanNames(const std::vector<Received>& received) {
  std::vector<std::string> names;
  for (const Received& r : received) {
    for (const auto& resource : r.request.resource_spans()) {
      for (const auto& scope : resource.scope_spans()) {
        for (const Span& span : scope.spans()) names.push_back(span.name());
      }
    }
  }
  return names;
}

TEST_F(GrpcppOtlpReceiverTest, ATracersSpansArriveFieldByField) {
  TracerOptions options;
  options.exporter = Exporter();
  options.max_export_batch_size = 2;
  options.schedule_delay = absl::Milliseconds(200);
  Tracer tracer(options);
  const absl::Time start = absl::Now();
  Submit(tracer, FullSpan());
  Submit(tracer, RootSpan("s1", 0x81));
  Submit(tracer, RootSpan("s2", 0x82));
  Submit(tracer, RootSpan("s3", 0x83));
  Submit(tracer, RootSpan("s4", 0x84));
  // Two full batches at once; the last span on the schedule delay.
  ASSERT_TRUE(WaitFor([&] { return receiver_.received().size() == 3; }));
  EXPECT_TRUE(tracer.ForceFlush(absl::Now() + kHangTimeout));

  const std::vector<Received> received = receiver_.received();
  ASSERT_THAT(received, SizeIs(3));
  EXPECT_THAT(SpanNames(received),
              ElementsAre("Recv.grpc.testing.TestService.FullDuplexCall", "s1",
                          "s2", "s3", "s4"));
  for (const Received& r : received) {
    EXPECT_THAT(r.user_agent, HasSubstr(kH2rpcUserAgent));
    EXPECT_GT(r.deadline, r.at);
    EXPECT_LE(r.deadline, start + kHangTimeout + absl::Seconds(1));
    ASSERT_THAT(r.request.resource_spans(), SizeIs(1));
    const auto& resource_spans = r.request.resource_spans(0);
    ASSERT_THAT(resource_spans.resource().attributes(), SizeIs(1));
    EXPECT_EQ(resource_spans.resource().attributes(0).key(), "service.name");
    EXPECT_EQ(resource_spans.resource().attributes(0).value().string_value(),
              "frontend");
    ASSERT_THAT(resource_spans.scope_spans(), SizeIs(1));
    EXPECT_EQ(resource_spans.scope_spans(0).scope().name(), "h2rpc");
    EXPECT_EQ(resource_spans.scope_spans(0).scope().version(), Version());
    EXPECT_THAT(resource_spans.scope_spans(0).spans(),
                SizeIs(::testing::Le(2)));
  }
  // The last span waited for the delay.
  EXPECT_GE(received[2].at - start, options.schedule_delay);

  Span expected;
  ASSERT_TRUE(
      google::protobuf::TextFormat::ParseFromString(kFullSpanText, &expected));
  const Span& full =
      received[0].request.resource_spans(0).scope_spans(0).spans(0);
  std::string differences;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(expected, full))
      << differences << "\nactual: " << full.DebugString();

  const Span& root =
      received[0].request.resource_spans(0).scope_spans(0).spans(1);
  EXPECT_EQ(root.parent_span_id(), "");
  EXPECT_EQ(root.flags(), 0x101u);
  EXPECT_EQ(root.kind(), Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(root.status().code(),
            ::opentelemetry::proto::trace::v1::Status::STATUS_CODE_OK);

  const Tracer::Stats stats = tracer.stats();
  EXPECT_EQ(stats.ended, 5u);
  EXPECT_EQ(stats.exported, 5u);
  EXPECT_EQ(stats.failed, 0u);
  EXPECT_EQ(stats.dropped, 0u);
}

TEST_F(GrpcppOtlpReceiverTest, PartialSuccessAndErrorsOfTheReceiver) {
  ExportTraceServiceResponse partial;
  partial.mutable_partial_success()->set_rejected_spans(1);
  partial.mutable_partial_success()->set_error_message("span too old");
  receiver_.set_response(partial);
  std::shared_ptr<OtlpGrpcExporter> exporter = Exporter();
  TracerOptions options;
  options.exporter = exporter;
  options.schedule_delay = absl::InfiniteDuration();
  Tracer tracer(options);

  Submit(tracer, RootSpan("s1", 0x81));
  Submit(tracer, RootSpan("s2", 0x82));
  ASSERT_TRUE(tracer.ForceFlush(absl::Now() + kHangTimeout));
  EXPECT_EQ(tracer.stats().exported, 2u);
  EXPECT_EQ(exporter->rejected_spans(), 1u);

  receiver_.set_status(
      grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full"));
  Submit(tracer, RootSpan("s3", 0x83));
  ASSERT_TRUE(tracer.ForceFlush(absl::Now() + kHangTimeout));
  EXPECT_EQ(tracer.stats().failed, 1u);
  // One call per batch: the failed one was not retried.
  EXPECT_THAT(receiver_.received(), SizeIs(2));
  const Status status = exporter->Export({RootSpan("s4", 0x84)});
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "queue full");
  EXPECT_EQ(exporter->rejected_spans(), 1u);
}

}  // namespace
}  // namespace h2rpc
