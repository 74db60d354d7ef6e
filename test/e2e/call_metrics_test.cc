// CallMetrics (rpc/call_metrics.h) recorded by real channels and servers
// over loopback: gRPC's A66 instruments, their labels and the message
// sizes they count.
#include "rpc/call_metrics.h"

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/tcp_proxy.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::TcpProxy;
using ::h2rpc::testing::WaitFor;

constexpr char kEcho[] = "/metrics.Test/Echo";
constexpr char kFlaky[] = "/metrics.Test/Flaky";
constexpr char kBidi[] = "/metrics.Test/Bidi";
constexpr char kUnavailable[] = "/metrics.Test/Unavailable";

// The series of `method` with `code`, or null.
const CallMetricsSnapshot::ClientSeries* Client(
    const CallMetricsSnapshot& snapshot, absl::string_view method,
    StatusCode code) {
  for (const auto& series : snapshot.client) {
    if (series.method == method && series.code == code) return &series;
  }
  return nullptr;
}
const CallMetricsSnapshot::ServerSeries* Server(
    const CallMetricsSnapshot& snapshot, absl::string_view method,
    StatusCode code) {
  for (const auto& series : snapshot.server) {
    if (series.method == method && series.code == code) return &series;
  }
  return nullptr;
}
uint64_t AttemptsStarted(const CallMetricsSnapshot& snapshot,
                         absl::string_view method) {
  for (const auto& started : snapshot.client_started) {
    if (started.method == method) return started.attempts;
  }
  return 0;
}
uint64_t CallsStarted(const CallMetricsSnapshot& snapshot,
                      absl::string_view method) {
  for (const auto& started : snapshot.server_started) {
    if (started.method == method) return started.calls;
  }
  return 0;
}
// How many calls of `method` the server has ended, any status.
uint64_t CallsEnded(const CallMetrics& metrics, absl::string_view method) {
  uint64_t ended = 0;
  for (const auto& series : metrics.Snapshot().server) {
    if (series.method == method) ended += series.call_duration.count;
  }
  return ended;
}

class CallMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 2;
    options.metrics = server_metrics_;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kEcho,
            [](ServerContext*, const SimpleRequest& request,
               SimpleResponse* response) {
              response->mutable_payload()->set_body(
                  std::string(request.response_size(), 'r'));
              if (request.has_response_status()) {
                return Status(
                    static_cast<StatusCode>(request.response_status().code()),
                    "asked for");
              }
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kFlaky,
            [this](ServerContext*, const SimpleRequest&, SimpleResponse*) {
              return flaky_calls_.fetch_add(1) < 2
                         ? Status(StatusCode::kUnavailable, "try again")
                         : Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kUnavailable,
            [](ServerContext* context, const SimpleRequest&, SimpleResponse*) {
              // A pushback fixes the retry's delay (100 s), where a backoff
              // would be drawn at random.
              context->AddTrailingMetadata("grpc-retry-pushback-ms", "100000");
              return Status(StatusCode::kUnavailable, "always");
            })
        .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
            kBidi,
            [](ServerContext*,
               ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
              SimpleRequest request;
              while (stream->Read(&request)) {
                SimpleResponse response;
                response.mutable_payload()->set_body(
                    std::string(request.response_size(), 'r'));
                if (!stream->Write(response)) break;
              }
              return Status();
            })
        .RegisterCallbackGenericService(
            [](ServerContext*) -> GenericServerBidiReactor* {
              return nullptr;  // fails the call with INTERNAL
            });
    ASSERT_TRUE(server_.Start().ok());
    ChannelOptions channel_options;
    channel_options.metrics = client_metrics_;
    channel_options.service_config = R"({"methodConfig": [{
        "name": [{"service": "metrics.Test", "method": "Flaky"}],
        "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s",
          "maxBackoff": "0.05s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]}}, {
        "name": [{"service": "metrics.Test", "method": "Unavailable"}],
        "retryPolicy": {"maxAttempts": 2, "initialBackoff": "100s",
          "maxBackoff": "100s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]}}]})";
    channel_ = server_.NewChannel(channel_options);
  }

  Status Echo(
      int request_bytes, int response_bytes, StatusCode code = StatusCode::kOk,
      CompressionAlgorithm compression = CompressionAlgorithm::kIdentity) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    context.set_compression_algorithm(compression);
    SimpleRequest request;
    request.mutable_payload()->set_body(std::string(request_bytes, 'q'));
    request.set_response_size(response_bytes);
    if (code != StatusCode::kOk) {
      request.mutable_response_status()->set_code(static_cast<int>(code));
    }
    SimpleResponse response;
    return channel_->UnaryCall(&context, kEcho, request, &response);
  }

  // The serialized size of Echo's request and response messages.
  static uint64_t RequestSize(int request_bytes, int response_bytes,
                              StatusCode code = StatusCode::kOk) {
    SimpleRequest request;
    request.mutable_payload()->set_body(std::string(request_bytes, 'q'));
    request.set_response_size(response_bytes);
    if (code != StatusCode::kOk) {
      request.mutable_response_status()->set_code(static_cast<int>(code));
    }
    return request.ByteSizeLong();
  }
  static uint64_t ResponseSize(int response_bytes) {
    SimpleResponse response;
    response.mutable_payload()->set_body(std::string(response_bytes, 'r'));
    return response.ByteSizeLong();
  }

  std::shared_ptr<CallMetrics> client_metrics_ =
      std::make_shared<CallMetrics>();
  std::shared_ptr<CallMetrics> server_metrics_ =
      std::make_shared<CallMetrics>();
  std::atomic<int> flaky_calls_{0};
  StubServer server_;
  std::shared_ptr<Channel> channel_;
};

TEST_F(CallMetricsTest, UnaryCallsAreCountedByMethodStatusAndTarget) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Echo(100, 2000).ok());
  ASSERT_EQ(Echo(10, 0, StatusCode::kNotFound).code(), StatusCode::kNotFound);
  ASSERT_TRUE(
      WaitFor([&] { return CallsEnded(*server_metrics_, kEcho) == 4; }));

  const CallMetricsSnapshot client = client_metrics_->Snapshot();
  ASSERT_EQ(client.client_started.size(), 1u);
  EXPECT_EQ(client.client_started[0].target,
            absl::StrCat("dns:///", server_.target()));
  EXPECT_EQ(AttemptsStarted(client, kEcho), 4u);
  const auto* ok = Client(client, kEcho, StatusCode::kOk);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->target, absl::StrCat("dns:///", server_.target()));
  EXPECT_EQ(ok->attempt_duration.count, 3u);
  EXPECT_EQ(ok->call_duration.count, 3u);
  EXPECT_GT(ok->call_duration.sum, 0);
  EXPECT_GE(ok->call_duration.sum, ok->attempt_duration.sum);
  EXPECT_EQ(ok->attempt_sent.sum, 3.0 * RequestSize(100, 2000));
  EXPECT_EQ(ok->attempt_rcvd.sum, 3.0 * ResponseSize(2000));
  EXPECT_EQ(ok->attempt_rcvd.buckets[2], 3u);  // le 2048
  const auto* not_found = Client(client, kEcho, StatusCode::kNotFound);
  ASSERT_NE(not_found, nullptr);
  EXPECT_EQ(not_found->attempt_duration.count, 1u);
  EXPECT_EQ(not_found->attempt_rcvd.sum, 0);
  // The channel records nothing of the server's side, and the reverse.
  EXPECT_TRUE(client.server.empty());
  EXPECT_TRUE(server_metrics_->Snapshot().client.empty());

  const CallMetricsSnapshot server = server_metrics_->Snapshot();
  EXPECT_EQ(CallsStarted(server, kEcho), 4u);
  const auto* served = Server(server, kEcho, StatusCode::kOk);
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->call_duration.count, 3u);
  EXPECT_EQ(served->call_rcvd.sum, 3.0 * RequestSize(100, 2000));
  EXPECT_EQ(served->call_sent.sum, 3.0 * ResponseSize(2000));
  const auto* refused = Server(server, kEcho, StatusCode::kNotFound);
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->call_rcvd.sum,
            static_cast<double>(RequestSize(10, 0, StatusCode::kNotFound)));
  EXPECT_EQ(refused->call_sent.sum, 0);
}

TEST_F(CallMetricsTest, SizesAreThoseOfTheCompressedMessages) {
  ASSERT_TRUE(
      Echo(20000, 0, StatusCode::kOk, CompressionAlgorithm::kGzip).ok());
  ASSERT_TRUE(
      WaitFor([&] { return CallsEnded(*server_metrics_, kEcho) == 1; }));
  const CallMetricsSnapshot client = client_metrics_->Snapshot();
  const auto* sent = Client(client, kEcho, StatusCode::kOk);
  ASSERT_NE(sent, nullptr);
  // 20,000 equal bytes deflate to a few dozen.
  EXPECT_GT(sent->attempt_sent.sum, 0);
  EXPECT_LT(sent->attempt_sent.sum, 1000);
  const CallMetricsSnapshot server = server_metrics_->Snapshot();
  const auto* received = Server(server, kEcho, StatusCode::kOk);
  ASSERT_NE(received, nullptr);
  EXPECT_EQ(received->call_rcvd.sum, sent->attempt_sent.sum);
}

TEST_F(CallMetricsTest, EachRetryIsAnAttemptOfOneCall) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  SimpleResponse response;
  ASSERT_TRUE(channel_->UnaryCall(&context, kFlaky, request, &response).ok());
  const CallMetricsSnapshot client = client_metrics_->Snapshot();
  EXPECT_EQ(AttemptsStarted(client, kFlaky), 3u);
  const auto* unavailable = Client(client, kFlaky, StatusCode::kUnavailable);
  ASSERT_NE(unavailable, nullptr);
  EXPECT_EQ(unavailable->attempt_duration.count, 2u);
  EXPECT_EQ(unavailable->call_duration.count, 0u);
  const auto* ok = Client(client, kFlaky, StatusCode::kOk);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->attempt_duration.count, 1u);
  EXPECT_EQ(ok->call_duration.count, 1u);
  // The call spans its attempts and the backoffs between them.
  EXPECT_GT(ok->call_duration.sum,
            ok->attempt_duration.sum + unavailable->attempt_duration.sum);
  // A96: one call with two retries, none transparent, and the backoffs
  // (random, below 0.01 s and 0.02 s) as its retry delay, which the call's
  // duration spans too.
  ASSERT_EQ(client.client_retries.size(), 1u);
  const CallMetricsSnapshot::ClientRetries& retries = client.client_retries[0];
  EXPECT_EQ(retries.method, kFlaky);
  EXPECT_EQ(retries.target, absl::StrCat("dns:///", server_.target()));
  EXPECT_EQ(retries.retries.count, 1u);
  EXPECT_EQ(retries.retries.sum, 2);
  EXPECT_EQ(retries.retries.buckets[1], 1u);  // le 2
  EXPECT_EQ(retries.transparent_retries.count, 0u);
  EXPECT_EQ(retries.retry_delay.count, 1u);
  EXPECT_GT(retries.retry_delay.sum, 0);
  EXPECT_LT(retries.retry_delay.sum, ok->call_duration.sum);
}

// The call ends at its deadline, in the delay the server's pushback set after
// its only attempt: its duration runs to the deadline, not to the attempt's
// end.
TEST_F(CallMetricsTest, ACallEndingWhileItWaitsToRetryLastsUntilItEnds) {
  ClientContext context;
  context.set_timeout(absl::Seconds(1));
  SimpleRequest request;
  SimpleResponse response;
  ASSERT_EQ(
      channel_->UnaryCall(&context, kUnavailable, request, &response).code(),
      StatusCode::kDeadlineExceeded);
  const CallMetricsSnapshot client = client_metrics_->Snapshot();
  EXPECT_EQ(AttemptsStarted(client, kUnavailable), 1u);
  const auto* attempt = Client(client, kUnavailable, StatusCode::kUnavailable);
  ASSERT_NE(attempt, nullptr);
  EXPECT_EQ(attempt->attempt_duration.count, 1u);
  const auto* call =
      Client(client, kUnavailable, StatusCode::kDeadlineExceeded);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->call_duration.count, 1u);
  EXPECT_GE(call->call_duration.sum, 1.0);
}

TEST_F(CallMetricsTest, StreamsCountEveryMessageOfTheCall) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kBidi);
  SimpleRequest request;
  request.set_response_size(300);
  SimpleResponse response;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(stream->Write(request));
    ASSERT_TRUE(stream->Read(&response));
  }
  ASSERT_TRUE(stream->WritesDone());
  ASSERT_TRUE(stream->Finish().ok());
  ASSERT_TRUE(
      WaitFor([&] { return CallsEnded(*server_metrics_, kBidi) == 1; }));
  const CallMetricsSnapshot client_snapshot = client_metrics_->Snapshot();
  const auto* client = Client(client_snapshot, kBidi, StatusCode::kOk);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->attempt_sent.sum, 5.0 * request.ByteSizeLong());
  EXPECT_EQ(client->attempt_rcvd.sum, 5.0 * ResponseSize(300));
  const CallMetricsSnapshot server_snapshot = server_metrics_->Snapshot();
  const auto* server = Server(server_snapshot, kBidi, StatusCode::kOk);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->call_rcvd.sum, 5.0 * request.ByteSizeLong());
  EXPECT_EQ(server->call_sent.sum, 5.0 * ResponseSize(300));
}

TEST_F(CallMetricsTest, UnregisteredAndGenericMethodsAreRecordedAsOther) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  ByteBuffer response;
  // Served by the generic service, whose factory fails the call.
  EXPECT_EQ(channel_
                ->GenericUnaryCall(&context, "/no.Such/Method", ByteBuffer(),
                                   &response)
                .code(),
            StatusCode::kInternal);
  ASSERT_TRUE(
      WaitFor([&] { return CallsEnded(*server_metrics_, "other") == 1; }));
  EXPECT_EQ(CallsStarted(server_metrics_->Snapshot(), "/no.Such/Method"), 0u);
  EXPECT_NE(Server(server_metrics_->Snapshot(), "other", StatusCode::kInternal),
            nullptr);
  EXPECT_EQ(AttemptsStarted(client_metrics_->Snapshot(), "other"), 1u);
  EXPECT_EQ(AttemptsStarted(client_metrics_->Snapshot(), "/no.Such/Method"),
            0u);
}

TEST_F(CallMetricsTest, GenericMethodsByNameWhenAsked) {
  CallMetrics::Options options;
  options.record_generic_methods = true;
  auto metrics = std::make_shared<CallMetrics>(options);
  ChannelOptions channel_options;
  channel_options.metrics = metrics;
  std::shared_ptr<Channel> channel = server_.NewChannel(channel_options);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  ByteBuffer response;
  EXPECT_EQ(channel
                ->GenericUnaryCall(&context, "/no.Such/Method", ByteBuffer(),
                                   &response)
                .code(),
            StatusCode::kInternal);
  EXPECT_EQ(AttemptsStarted(metrics->Snapshot(), "/no.Such/Method"), 1u);
}

TEST_F(CallMetricsTest, AGenericServiceRecordsMethodsByNameWhenAsked) {
  CallMetrics::Options options;
  options.record_generic_methods = true;
  auto metrics = std::make_shared<CallMetrics>(options);
  StubServer generic;
  ServerOptions server_options;
  server_options.metrics = metrics;
  generic.builder()
      .SetOptions(server_options)
      .RegisterCallbackGenericService(
          [](ServerContext*) -> GenericServerBidiReactor* { return nullptr; });
  ASSERT_TRUE(generic.Start().ok());
  ClientContext context;
  context.set_timeout(kHangTimeout);
  ByteBuffer response;
  EXPECT_EQ(generic.NewChannel()
                ->GenericUnaryCall(&context, "/no.Such/Method", ByteBuffer(),
                                   &response)
                .code(),
            StatusCode::kInternal);
  ASSERT_TRUE(
      WaitFor([&] { return CallsEnded(*metrics, "/no.Such/Method") == 1; }));
  EXPECT_EQ(CallsStarted(metrics->Snapshot(), "other"), 0u);
}

// The connections of a channel's target, or null.
const CallMetricsSnapshot::ClientConnections* Connections(
    const CallMetricsSnapshot& snapshot) {
  return snapshot.client_connections.empty()
             ? nullptr
             : &snapshot.client_connections.front();
}
uint64_t Disconnections(const CallMetricsSnapshot& snapshot,
                        absl::string_view reason) {
  const auto* connections = Connections(snapshot);
  if (connections == nullptr) return 0;
  for (const auto& [name, count] : connections->disconnections) {
    if (name == reason) return count;
  }
  return 0;
}

TEST_F(CallMetricsTest, ConnectionsOpenAndCloseWithTheirReasons) {
  ASSERT_TRUE(Echo(10, 10).ok());
  CallMetricsSnapshot snapshot = client_metrics_->Snapshot();
  ASSERT_NE(Connections(snapshot), nullptr);
  EXPECT_EQ(Connections(snapshot)->target,
            absl::StrCat("dns:///", server_.target()));
  EXPECT_EQ(Connections(snapshot)->attempts_succeeded, 1u);
  EXPECT_EQ(Connections(snapshot)->attempts_failed, 0u);
  EXPECT_EQ(Connections(snapshot)->open, 1u);
  // The server shuts down gracefully: GOAWAY NO_ERROR, then the close.
  server_.server().Shutdown(absl::Now() + kHangTimeout);
  ASSERT_TRUE(WaitFor([&] {
    return Disconnections(client_metrics_->Snapshot(), "GOAWAY NO_ERROR") == 1;
  }));
  snapshot = client_metrics_->Snapshot();
  EXPECT_EQ(Connections(snapshot)->open, 0u);
  // Nothing listens there now: the next attempt fails.
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  SimpleResponse response;
  EXPECT_EQ(channel_->UnaryCall(&context, kEcho, request, &response).code(),
            StatusCode::kUnavailable);
  EXPECT_GE(Connections(client_metrics_->Snapshot())->attempts_failed, 1u);
}

// The server's connections and streams open now, and the GOAWAYs of its
// graceful shutdown.
TEST_F(CallMetricsTest, ServerConnectionsStreamsAndGoAwaysAreCounted) {
  ASSERT_TRUE(Echo(10, 10).ok());
  auto server_connections = [&] {
    return server_metrics_->Snapshot().server_connections;
  };
  EXPECT_TRUE(server_connections().recorded);
  EXPECT_FALSE(client_metrics_->Snapshot().server_connections.recorded);
  EXPECT_EQ(server_connections().open, 1u);
  ASSERT_TRUE(WaitFor([&] { return server_connections().open_streams == 0; }));
  {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
        &context, kBidi);
    SimpleResponse response;
    ASSERT_TRUE(stream->Write(SimpleRequest()));
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(server_connections().open_streams, 1u);
    ASSERT_TRUE(stream->WritesDone());
    ASSERT_TRUE(stream->Finish().ok());
  }
  ASSERT_TRUE(WaitFor([&] { return server_connections().open_streams == 0; }));
  server_.server().Shutdown(absl::Now() + kHangTimeout);
  ASSERT_TRUE(WaitFor([&] { return server_connections().open == 0; }));
  const CallMetricsSnapshot::ServerConnections after = server_connections();
  ASSERT_EQ(after.goaways_sent.size(), 1u);
  EXPECT_EQ(after.goaways_sent[0].first, "NO_ERROR");
  // gRPC's double GOAWAY: the notice, then the last stream accepted,
  // unless the client, with no call open, closed the connection first.
  EXPECT_GE(after.goaways_sent[0].second, 1u);
  EXPECT_LE(after.goaways_sent[0].second, 2u);
  EXPECT_EQ(after.keepalive_timeouts, 0u);
  EXPECT_EQ(after.memory_quota_used, 0u);
}

// A client that stops reading: its keepalive timeout, and the response
// bytes the server holds for it meanwhile in its memory quota.
TEST(ServerConnectionMetricsTest, KeepaliveTimeoutsAndMemoryHeldAreCounted) {
  auto metrics = std::make_shared<CallMetrics>();
  ServerOptions options;
  options.num_loops = 1;
  options.metrics = metrics;
  options.keepalive_time = absl::Milliseconds(200);
  options.keepalive_timeout = absl::Milliseconds(200);
  StubServer server;
  server.builder()
      .SetOptions(options)
      .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
          kBidi, [](ServerContext*, const SimpleRequest& request,
                    ServerWriter<SimpleResponse>* writer) {
            SimpleResponse response;
            response.mutable_payload()->set_body(
                std::string(request.response_size(), 'r'));
            while (writer->Write(response)) {
            }
            return Status();
          });
  ASSERT_TRUE(server.Start().ok());
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(server.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  SimpleRequest request;
  request.set_response_size(256 << 10);
  RawRequest raw;
  raw.headers = GrpcRequestHeaders(kBidi, server.port());
  raw.body = GrpcFrame(request.SerializeAsString());
  client->Start(raw);
  // Without reading, the client takes no more responses than its window,
  // and answers no keepalive PING.
  ASSERT_TRUE(WaitFor([&] {
    return metrics->Snapshot().server_connections.memory_quota_used > 0;
  }));
  ASSERT_TRUE(WaitFor([&] {
    return metrics->Snapshot().server_connections.keepalive_timeouts == 1;
  }));
  ASSERT_TRUE(WaitFor([&] {
    const CallMetricsSnapshot::ServerConnections connections =
        metrics->Snapshot().server_connections;
    return connections.open == 0 && connections.memory_quota_used == 0;
  }));
}

// Connections lost on the network path, through a proxy: a reset, and a
// path that drops everything (the channel's keepalive gives up on it).
TEST_F(CallMetricsTest, SocketErrorsAndKeepaliveTimeoutsAreDisconnectReasons) {
  TcpProxy proxy(server_.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  ChannelOptions options;
  options.metrics = client_metrics_;
  options.keepalive_time = absl::Milliseconds(100);
  options.keepalive_timeout = absl::Milliseconds(100);
  options.keepalive_permit_without_calls = true;
  std::shared_ptr<Channel> channel =
      CreateChannel(proxy.target(), InsecureChannelCredentials(), options);
  auto call = [&] {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    context.set_wait_for_ready(true);
    SimpleResponse response;
    return channel->UnaryCall(&context, kEcho, SimpleRequest(), &response);
  };
  auto disconnections = [&](absl::string_view reason) {
    uint64_t count = 0;
    for (const auto& connections :
         client_metrics_->Snapshot().client_connections) {
      if (connections.target == "dns:///" + proxy.target()) {
        for (const auto& [name, n] : connections.disconnections) {
          if (name == reason) count += n;
        }
      }
    }
    return count;
  };
  ASSERT_TRUE(call().ok());
  proxy.ResetConnections();
  ASSERT_TRUE(WaitFor([&] { return disconnections("connection reset") == 1; }));
  ASSERT_TRUE(call().ok());
  proxy.Freeze();
  ASSERT_TRUE(
      WaitFor([&] { return disconnections("connection timed out") == 1; }));
  EXPECT_EQ(disconnections("unknown"), 0u);
  proxy.Thaw();
}

// round_robin over two backends: the calls each got.
TEST(ClientBackendMetricsTest, PicksAreCountedPerBackend) {
  StubServer servers[2];
  for (StubServer& server : servers) {
    server.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
        kEcho, [](ServerContext*, const SimpleRequest&, SimpleResponse*) {
          return Status();
        });
    ASSERT_TRUE(server.Start().ok());
  }
  auto metrics = std::make_shared<CallMetrics>();
  ChannelOptions options;
  options.metrics = metrics;
  options.lb_policy = "round_robin";
  const std::string target = absl::StrCat("ipv4:127.0.0.1:", servers[0].port(),
                                          ",127.0.0.1:", servers[1].port());
  std::shared_ptr<Channel> channel =
      CreateChannel(target, InsecureChannelCredentials(), options);
  for (int i = 0; i < 10; ++i) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    context.set_wait_for_ready(true);
    SimpleResponse response;
    ASSERT_TRUE(
        channel->UnaryCall(&context, kEcho, SimpleRequest(), &response).ok());
  }
  const std::vector<CallMetricsSnapshot::ClientBackend> backends =
      metrics->Snapshot().client_backends;
  ASSERT_EQ(backends.size(), 2u);
  uint64_t picks = 0;
  for (const CallMetricsSnapshot::ClientBackend& backend : backends) {
    EXPECT_EQ(backend.target, target);
    EXPECT_GE(backend.picks, 1u) << backend.address;
    picks += backend.picks;
  }
  EXPECT_EQ(picks, 10u);
  EXPECT_EQ(backends[0].address,
            absl::StrCat("127.0.0.1:",
                         std::min(servers[0].port(), servers[1].port())));
}

TEST_F(CallMetricsTest, AChannelDestroyedShutsItsConnectionsDown) {
  ASSERT_TRUE(Echo(10, 10).ok());
  channel_.reset();
  const CallMetricsSnapshot snapshot = client_metrics_->Snapshot();
  EXPECT_EQ(Disconnections(snapshot, "subchannel shutdown"), 1u);
  EXPECT_EQ(Connections(snapshot)->open, 0u);
}

TEST_F(CallMetricsTest, CallsThatNeverStartHaveACallDurationAndNoAttempt) {
  ClientContext context;
  context.set_deadline(absl::Now() - absl::Seconds(1));
  SimpleRequest request;
  SimpleResponse response;
  EXPECT_EQ(channel_->UnaryCall(&context, kEcho, request, &response).code(),
            StatusCode::kDeadlineExceeded);
  const CallMetricsSnapshot client = client_metrics_->Snapshot();
  EXPECT_EQ(AttemptsStarted(client, kEcho), 0u);
  const auto* expired = Client(client, kEcho, StatusCode::kDeadlineExceeded);
  ASSERT_NE(expired, nullptr);
  EXPECT_EQ(expired->call_duration.count, 1u);
  EXPECT_EQ(expired->attempt_duration.count, 0u);

  // A stream whose deadline passed fails on the loop, before any attempt.
  ClientContext stream_context;
  stream_context.set_deadline(absl::Now() - absl::Seconds(1));
  auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &stream_context, kBidi);
  EXPECT_EQ(stream->Finish().code(), StatusCode::kDeadlineExceeded);
  const CallMetricsSnapshot after = client_metrics_->Snapshot();
  EXPECT_EQ(AttemptsStarted(after, kBidi), 0u);
  const auto* stream_expired =
      Client(after, kBidi, StatusCode::kDeadlineExceeded);
  ASSERT_NE(stream_expired, nullptr);
  EXPECT_EQ(stream_expired->call_duration.count, 1u);
}

TEST_F(CallMetricsTest, UnknownMethodsOfAServerWithoutAGenericServiceToo) {
  StubServer plain;
  ServerOptions options;
  options.metrics = server_metrics_;
  plain.builder().SetOptions(options);
  ASSERT_TRUE(plain.Start().ok());
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  SimpleResponse response;
  EXPECT_EQ(plain.NewChannel()
                ->UnaryCall(&context, "/no.Such/Method", request, &response)
                .code(),
            StatusCode::kUnimplemented);
  EXPECT_EQ(CallsStarted(server_metrics_->Snapshot(), "other"), 1u);
  EXPECT_NE(
      Server(server_metrics_->Snapshot(), "other", StatusCode::kUnimplemented),
      nullptr);
}

}  // namespace
}  // namespace h2rpc
