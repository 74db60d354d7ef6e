// Tracing (rpc/tracing.h) by real channels and servers over loopback: A72's
// spans, their parents across a relaying server, the W3C trace context on
// the wire, sampling, and retries' attempt spans.
#include "rpc/tracing.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "rpc/channel.h"
#include "rpc/internal/tracing/trace_context.h"
#include "rpc/otlp_exporter.h"
#include "rpc/server.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::StubServer;

constexpr char kFront[] = "/tracing.Test/Front";
constexpr char kBack[] = "/tracing.Test/Back";
constexpr char kFlaky[] = "/tracing.Test/Flaky";

// Keeps every span exported.
class MemoryExporter : public SpanExporter {
 public:
  Status Export(const std::vector<SpanData>& spans) override {
    MutexLock lock(&mu_);
    spans_.insert(spans_.end(), spans.begin(), spans.end());
    return Status();
  }
  std::vector<SpanData> spans() const {
    MutexLock lock(&mu_);
    return spans_;
  }

 private:
  mutable Mutex mu_;
  std::vector<SpanData> spans_ ABSL_GUARDED_BY(mu_);
};

const SpanData* Find(const std::vector<SpanData>& spans,
                     const std::string& name) {
  for (const SpanData& span : spans) {
    if (span.name == name) return &span;
  }
  return nullptr;
}

int64_t IntAttribute(const std::vector<SpanData::Attribute>& attributes,
                     const std::string& key) {
  for (const auto& attribute : attributes) {
    if (attribute.key == key) return std::get<int64_t>(attribute.value);
  }
  ADD_FAILURE() << "no attribute " << key;
  return -1;
}

class TracingTest : public ::testing::Test {
 protected:
  std::shared_ptr<Tracer> NewTracer(double probability) {
    TracerOptions options;
    options.exporter = exporter_;
    options.sampling_probability = probability;
    options.schedule_delay = absl::Milliseconds(10);
    return std::make_shared<Tracer>(options);
  }

  // A back server, and a front server whose handler calls it on behalf of
  // its caller (ClientContext::FromServerContext), each traced by `tracer`.
  void StartServers(std::shared_ptr<Tracer> server_tracer) {
    ServerOptions options;
    options.num_loops = 1;
    options.tracer = server_tracer;
    back_.builder().SetOptions(options).RegisterUnary<SimpleRequest,
                                                      SimpleResponse>(
        kBack, [this](ServerContext* context, const SimpleRequest&,
                      SimpleResponse* response) {
          back_trace_ = context->trace_context();
          response->mutable_payload()->set_body("back");
          return Status();
        });
    ASSERT_TRUE(back_.Start().ok());
    ChannelOptions to_back;
    to_back.tracer = server_tracer;
    back_channel_ = back_.NewChannel(to_back);
    front_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kFront,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse* response) {
              front_trace_ = context->trace_context();
              front_trace_state_ = std::string(context->trace_state());
              std::unique_ptr<ClientContext> child =
                  ClientContext::FromServerContext(*context);
              return back_channel_->UnaryCall(child.get(), kBack, request,
                                              response);
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kFlaky, [this](ServerContext*, const SimpleRequest&,
                           SimpleResponse*) {
              return flaky_calls_.fetch_add(1) < 2
                         ? Status(StatusCode::kUnavailable, "try again")
                         : Status();
            });
    ASSERT_TRUE(front_.Start().ok());
  }

  std::shared_ptr<Channel> FrontChannel(std::shared_ptr<Tracer> tracer) {
    ChannelOptions options;
    options.tracer = std::move(tracer);
    options.service_config = R"({"methodConfig": [{
        "name": [{"service": "tracing.Test", "method": "Flaky"}],
        "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s",
          "maxBackoff": "0.05s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]}}]})";
    return front_.NewChannel(options);
  }

  static Status Call(Channel& channel, const char* method,
                     ClientContext* context) {
    context->set_timeout(kHangTimeout);
    SimpleRequest request;
    request.mutable_payload()->set_body("front");
    SimpleResponse response;
    return channel.UnaryCall(context, method, request, &response);
  }

  std::shared_ptr<MemoryExporter> exporter_ =
      std::make_shared<MemoryExporter>();
  std::atomic<int> flaky_calls_{0};
  TraceContext front_trace_;
  std::string front_trace_state_;
  TraceContext back_trace_;
  StubServer back_;
  std::shared_ptr<Channel> back_channel_;
  StubServer front_;
};

// Across two hops one trace, each span the child of the one before:
// client Sent -> Attempt -> front Recv -> Sent -> Attempt -> back Recv.
TEST_F(TracingTest, TwoHopsMakeOneTraceOfChainedSpans) {
  std::shared_ptr<Tracer> tracer = NewTracer(1.0);
  StartServers(tracer);
  std::shared_ptr<Channel> channel = FrontChannel(tracer);
  ClientContext context;
  ASSERT_TRUE(Call(*channel, kFront, &context).ok());
  ASSERT_TRUE(tracer->ForceFlush(absl::Now() + kHangTimeout));

  const std::vector<SpanData> spans = exporter_->spans();
  ASSERT_EQ(spans.size(), 6u);
  const SpanData* sent = Find(spans, "Sent.tracing.Test.Front");
  const SpanData* attempt = Find(spans, "Attempt.tracing.Test.Front");
  const SpanData* front = Find(spans, "Recv.tracing.Test.Front");
  const SpanData* relay = Find(spans, "Sent.tracing.Test.Back");
  const SpanData* relay_attempt = Find(spans, "Attempt.tracing.Test.Back");
  const SpanData* back = Find(spans, "Recv.tracing.Test.Back");
  ASSERT_TRUE(sent && attempt && front && relay && relay_attempt && back);
  for (const SpanData& span : spans) {
    EXPECT_EQ(span.trace_id, sent->trace_id) << span.name;
    EXPECT_EQ(span.trace_flags & 1, 1) << span.name;
    EXPECT_EQ(span.status, SpanData::StatusCode::kOk) << span.name;
    EXPECT_LE(span.start, span.end) << span.name;
  }
  EXPECT_EQ(sent->parent_span_id, SpanId{});
  EXPECT_EQ(sent->kind, SpanData::Kind::kClient);
  EXPECT_EQ(attempt->parent_span_id, sent->span_id);
  EXPECT_EQ(front->parent_span_id, attempt->span_id);
  EXPECT_TRUE(front->parent_is_remote);
  EXPECT_EQ(front->kind, SpanData::Kind::kServer);
  EXPECT_EQ(relay->parent_span_id, front->span_id);
  EXPECT_FALSE(relay->parent_is_remote);
  EXPECT_EQ(relay_attempt->parent_span_id, relay->span_id);
  EXPECT_EQ(back->parent_span_id, relay_attempt->span_id);
  // The handlers saw their spans.
  EXPECT_EQ(front_trace_.span_id, front->span_id);
  EXPECT_EQ(back_trace_.span_id, back->span_id);
  EXPECT_EQ(back_trace_.trace_id, sent->trace_id);

  // A72's attempt attributes and message events.
  EXPECT_EQ(IntAttribute(attempt->attributes, "previous-rpc-attempts"), 0);
  SimpleRequest request;
  request.mutable_payload()->set_body("front");
  ASSERT_EQ(attempt->events.size(), 2u);
  EXPECT_EQ(attempt->events[0].name, "Outbound message");
  EXPECT_EQ(IntAttribute(attempt->events[0].attributes, "sequence-number"), 0);
  EXPECT_EQ(IntAttribute(attempt->events[0].attributes, "message-size"),
            static_cast<int64_t>(request.ByteSizeLong()));
  EXPECT_EQ(attempt->events[1].name, "Inbound message");
  ASSERT_EQ(back->events.size(), 2u);
  EXPECT_EQ(back->events[0].name, "Inbound message");
  EXPECT_EQ(back->events[1].name, "Outbound message");
  EXPECT_EQ(tracer->stats().ended, 6u);
  EXPECT_EQ(tracer->stats().dropped, 0u);
}

// An unsampled trace records nothing anywhere, but its context still
// crosses both hops.
TEST_F(TracingTest, AnUnsampledParentIsFollowedAcrossHops) {
  std::shared_ptr<Tracer> tracer = NewTracer(1.0);
  StartServers(tracer);
  std::shared_ptr<Channel> channel = FrontChannel(tracer);
  ClientContext context;
  TraceContext parent;
  parent.trace_id = internal::NewTraceId();
  parent.span_id = internal::NewSpanId();
  parent.flags = 0;
  context.set_trace_parent(parent, "vendor=opaque");
  ASSERT_TRUE(Call(*channel, kFront, &context).ok());
  ASSERT_TRUE(tracer->ForceFlush(absl::Now() + kHangTimeout));
  EXPECT_TRUE(exporter_->spans().empty());
  EXPECT_EQ(tracer->stats().ended, 0u);
  EXPECT_EQ(front_trace_.trace_id, parent.trace_id);
  EXPECT_FALSE(front_trace_.sampled());
  EXPECT_EQ(front_trace_state_, "vendor=opaque");
  EXPECT_EQ(back_trace_.trace_id, parent.trace_id);
}

// The client's probability decides a trace it starts; servers follow.
TEST_F(TracingTest, TheRootsProbabilityDecidesTheTrace) {
  StartServers(NewTracer(1.0));
  std::shared_ptr<Tracer> client = NewTracer(0.0);
  std::shared_ptr<Channel> channel = FrontChannel(client);
  for (int i = 0; i < 5; ++i) {
    ClientContext context;
    ASSERT_TRUE(Call(*channel, kFront, &context).ok());
    EXPECT_TRUE(front_trace_.valid());
    EXPECT_FALSE(front_trace_.sampled());
  }
  EXPECT_EQ(client->stats().ended, 0u);
}

// A malformed traceparent starts a new trace at the server.
TEST_F(TracingTest, AMalformedTraceparentStartsANewTrace) {
  std::shared_ptr<Tracer> tracer = NewTracer(1.0);
  StartServers(tracer);
  std::shared_ptr<Channel> channel = FrontChannel(nullptr);
  ClientContext context;
  context.AddMetadata("traceparent",
                      "00-00000000000000000000000000000000-b7ad6b7169203331-01");
  ASSERT_TRUE(Call(*channel, kFront, &context).ok());
  ASSERT_TRUE(tracer->ForceFlush(absl::Now() + kHangTimeout));
  const std::vector<SpanData> spans = exporter_->spans();
  const SpanData* front = Find(spans, "Recv.tracing.Test.Front");
  ASSERT_NE(front, nullptr);
  EXPECT_EQ(front->parent_span_id, SpanId{});
  EXPECT_FALSE(front->parent_is_remote);
  EXPECT_NE(front->trace_id, TraceId{});
}

// A retried call: one Sent span, an Attempt span per attempt counting the
// ones before it, each with its status; the server span of each attempt is
// that attempt's child.
TEST_F(TracingTest, RetriesAreAttemptSpansOfOneCall) {
  std::shared_ptr<Tracer> tracer = NewTracer(1.0);
  StartServers(tracer);
  std::shared_ptr<Channel> channel = FrontChannel(tracer);
  ClientContext context;
  ASSERT_TRUE(Call(*channel, kFlaky, &context).ok());
  ASSERT_TRUE(tracer->ForceFlush(absl::Now() + kHangTimeout));
  std::vector<SpanData> spans = exporter_->spans();
  const SpanData* sent = Find(spans, "Sent.tracing.Test.Flaky");
  ASSERT_NE(sent, nullptr);
  std::vector<const SpanData*> attempts;
  std::vector<const SpanData*> served;
  for (const SpanData& span : spans) {
    if (span.name == "Attempt.tracing.Test.Flaky") attempts.push_back(&span);
    if (span.name == "Recv.tracing.Test.Flaky") served.push_back(&span);
  }
  ASSERT_EQ(attempts.size(), 3u);
  ASSERT_EQ(served.size(), 3u);
  std::sort(attempts.begin(), attempts.end(), [](auto* a, auto* b) {
    return a->start < b->start;
  });
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(attempts[i]->parent_span_id, sent->span_id);
    EXPECT_EQ(IntAttribute(attempts[i]->attributes, "previous-rpc-attempts"),
              i);
    EXPECT_EQ(attempts[i]->status, i < 2 ? SpanData::StatusCode::kError
                                         : SpanData::StatusCode::kOk);
    EXPECT_EQ(std::count_if(served.begin(), served.end(),
                            [&](const SpanData* s) {
                              return s->parent_span_id ==
                                     attempts[i]->span_id;
                            }),
              1);
  }
  EXPECT_EQ(attempts[0]->status_message, "UNAVAILABLE, try again");
  EXPECT_EQ(sent->status, SpanData::StatusCode::kOk);
  // The server's spans carry the handler's status too.
  EXPECT_EQ(std::count_if(served.begin(), served.end(),
                          [](const SpanData* s) {
                            return s->status == SpanData::StatusCode::kError &&
                                   s->status_message ==
                                       "UNAVAILABLE, try again";
                          }),
            2);
}

// The issue's whole path: each side exports over OTLP/gRPC
// (OtlpGrpcExporter) to one collector, which receives the two hops' six
// spans as one trace, each under its service's resource.
TEST(OtlpTracingTest, TwoHopsReachAnOtlpCollectorAsOneTrace) {
  using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
  using opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;
  Mutex mu;
  std::vector<std::pair<std::string, opentelemetry::proto::trace::v1::Span>>
      received;  // service.name, span
  StubServer collector;
  collector.builder()
      .RegisterUnary<ExportTraceServiceRequest, ExportTraceServiceResponse>(
          OtlpGrpcExporter::kExportMethod,
          [&](ServerContext*, const ExportTraceServiceRequest& request,
              ExportTraceServiceResponse*) {
            MutexLock lock(&mu);
            for (const auto& resource_spans : request.resource_spans()) {
              std::string service;
              for (const auto& attribute :
                   resource_spans.resource().attributes()) {
                if (attribute.key() == "service.name") {
                  service = attribute.value().string_value();
                }
              }
              for (const auto& scope_spans : resource_spans.scope_spans()) {
                for (const auto& span : scope_spans.spans()) {
                  received.emplace_back(service, span);
                }
              }
            }
            return Status();
          });
  ASSERT_TRUE(collector.Start().ok());
  auto tracer_of = [&](const char* service) {
    OtlpGrpcExporterOptions exporter_options;
    exporter_options.service_name = service;
    TracerOptions options;
    options.exporter = std::make_shared<OtlpGrpcExporter>(
        collector.NewChannel(), exporter_options);
    options.schedule_delay = absl::Milliseconds(10);
    return std::make_shared<Tracer>(options);
  };
  std::shared_ptr<Tracer> client_tracer = tracer_of("client");
  std::shared_ptr<Tracer> front_tracer = tracer_of("front");
  std::shared_ptr<Tracer> back_tracer = tracer_of("back");

  ServerOptions back_options;
  back_options.tracer = back_tracer;
  StubServer back;
  back.builder().SetOptions(back_options).RegisterUnary<SimpleRequest,
                                                        SimpleResponse>(
      kBack, [](ServerContext*, const SimpleRequest&, SimpleResponse*) {
        return Status();
      });
  ASSERT_TRUE(back.Start().ok());
  ChannelOptions to_back;
  to_back.tracer = front_tracer;
  std::shared_ptr<Channel> back_channel = back.NewChannel(to_back);
  ServerOptions front_options;
  front_options.tracer = front_tracer;
  StubServer front;
  front.builder().SetOptions(front_options).RegisterUnary<SimpleRequest,
                                                          SimpleResponse>(
      kFront, [&](ServerContext* context, const SimpleRequest& request,
                  SimpleResponse* response) {
        std::unique_ptr<ClientContext> child =
            ClientContext::FromServerContext(*context);
        return back_channel->UnaryCall(child.get(), kBack, request, response);
      });
  ASSERT_TRUE(front.Start().ok());
  ChannelOptions to_front;
  to_front.tracer = client_tracer;
  std::shared_ptr<Channel> channel = front.NewChannel(to_front);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleResponse response;
  ASSERT_TRUE(
      channel->UnaryCall(&context, kFront, SimpleRequest(), &response).ok());

  for (Tracer* tracer :
       {client_tracer.get(), front_tracer.get(), back_tracer.get()}) {
    ASSERT_TRUE(tracer->ForceFlush(absl::Now() + kHangTimeout));
    EXPECT_EQ(tracer->stats().failed, 0u);
  }
  MutexLock lock(&mu);
  ASSERT_EQ(received.size(), 6u);
  std::vector<std::string> names;
  for (const auto& [service, span] : received) {
    EXPECT_EQ(span.trace_id(), received[0].second.trace_id());
    names.push_back(absl::StrCat(service, ":", span.name()));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "back:Recv.tracing.Test.Back",
                       "client:Attempt.tracing.Test.Front",
                       "client:Sent.tracing.Test.Front",
                       "front:Attempt.tracing.Test.Back",
                       "front:Recv.tracing.Test.Front",
                       "front:Sent.tracing.Test.Back",
                   }));
}

}  // namespace
}  // namespace h2rpc
