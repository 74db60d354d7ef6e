// The forwarder of h2rpc_proxy (tools/h2rpc_proxy/forwarder.h) between h2rpc
// clients and h2rpc servers over real loopback sockets: client -> proxy
// server (the forwarder) -> backend. Every kind of call arrives byte for
// byte, with metadata, status details, compression, deadlines and
// cancellation; an unreachable backend and a malformed path are answered
// by the proxy; calls spread over a round_robin target; a client that does
// not read holds the backend back.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"
#include "tools/h2rpc_proxy/forwarder.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::proxy::Forwarder;
using ::h2rpc::proxy::ForwarderStats;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/h2rpc.test.Backend/Unary";
constexpr char kServerStream[] = "/h2rpc.test.Backend/ServerStream";
constexpr char kClientStream[] = "/h2rpc.test.Backend/ClientStream";
constexpr char kBidi[] = "/h2rpc.test.Backend/Bidi";
constexpr char kWaitForCancel[] = "/h2rpc.test.Backend/WaitForCancel";
constexpr char kFlood[] = "/h2rpc.test.Backend/Flood";

// The flood test: 256 messages of 64 KiB (16 MiB) from the backend.
constexpr int kFloodMessages = 256;
constexpr size_t kFloodMessageBytes = 64 << 10;

// A backend with typed methods; `name` answers as the response's hostname.
class Backend {
 public:
  explicit Backend(std::string name) : name_(std::move(name)) {}

  Status Start(std::string listen = "") {
    if (!listen.empty()) server_.ListenOn(std::move(listen));
    server_.builder()
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kUnary,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse* response) {
              calls_.fetch_add(1);
              {
                std::lock_guard<std::mutex> lock(peers_mu_);
                peers_.insert(context->peer());
              }
              response->set_hostname(name_);
              response->mutable_payload()->set_body(request.payload().body());
              if (request.response_compressed().value()) {
                context->set_compression_algorithm(CompressionAlgorithm::kGzip);
              }
              context->AddTrailingMetadata(
                  "x-request-compressed",
                  context->last_message_compressed() ? "yes" : "no");
              for (const Metadata::Entry entry : context->client_metadata()) {
                if (absl::StartsWith(entry.key, "x-echo")) {
                  context->AddInitialMetadata(entry.key, entry.value);
                  context->AddTrailingMetadata(
                      absl::StrCat(
                          entry.key, "-trailing",
                          absl::EndsWith(entry.key, "-bin") ? "-bin" : ""),
                      entry.value);
                }
              }
              if (request.has_response_status()) {
                return Status(
                    static_cast<StatusCode>(request.response_status().code()),
                    request.response_status().message(),
                    "\x01\x02"
                    "details");
              }
              return Status();
            })
        .RegisterServerStreaming<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(
            kServerStream,
            [](ServerContext*, const StreamingOutputCallRequest& request,
               ServerWriter<StreamingOutputCallResponse>* writer) {
              for (const auto& parameters : request.response_parameters()) {
                StreamingOutputCallResponse response;
                response.mutable_payload()->set_body(
                    std::string(parameters.size(), 's'));
                if (!writer->Write(response)) break;
              }
              return Status();
            })
        .RegisterClientStreaming<StreamingInputCallRequest,
                                 StreamingInputCallResponse>(
            kClientStream,
            [](ServerContext*, ServerReader<StreamingInputCallRequest>* reader,
               StreamingInputCallResponse* response) {
              StreamingInputCallRequest request;
              int total = 0;
              while (reader->Read(&request)) {
                total += static_cast<int>(request.payload().body().size());
              }
              response->set_aggregated_payload_size(total);
              return Status();
            })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
            kBidi,
            [](ServerContext*,
               ServerReaderWriter<StreamingOutputCallResponse,
                                  StreamingOutputCallRequest>* stream) {
              StreamingOutputCallRequest request;
              while (stream->Read(&request)) {
                StreamingOutputCallResponse response;
                *response.mutable_payload() = request.payload();
                if (!stream->Write(response)) break;
              }
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kWaitForCancel,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              deadline_ = context->deadline();
              started_.Notify();
              if (!WaitFor([context] { return context->IsCancelled(); })) {
                return Status(StatusCode::kAborted, "no cancel");
              }
              saw_cancel_.Notify();
              return Status(StatusCode::kCancelled, "saw the cancel");
            })
        .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
            kFlood, [this](ServerContext*, const SimpleRequest&,
                           ServerWriter<SimpleResponse>* writer) {
              SimpleResponse response;
              for (int i = 0; i < kFloodMessages; ++i) {
                response.mutable_payload()->set_body(
                    std::string(kFloodMessageBytes, 'a' + i % 26));
                if (!writer->Write(response)) break;
                flood_written_.fetch_add(1);
              }
              return Status();
            });
    return server_.Start();
  }

  StubServer& server() { return server_; }
  int calls() const { return calls_.load(); }
  // The connections unary calls came on (their peer addresses).
  size_t unary_peers() {
    std::lock_guard<std::mutex> lock(peers_mu_);
    return peers_.size();
  }
  Notification& started() { return started_; }
  Notification& saw_cancel() { return saw_cancel_; }
  absl::Time deadline() const { return deadline_; }
  int flood_written() const { return flood_written_.load(); }

 private:
  const std::string name_;
  StubServer server_;
  std::atomic<int> calls_{0};
  std::mutex peers_mu_;
  std::set<std::string> peers_;
  Notification started_;
  Notification saw_cancel_;
  absl::Time deadline_;  // written before started_ is notified
  std::atomic<int> flood_written_{0};
};

// Channels to `target`, one per proxy loop.
std::vector<std::shared_ptr<Channel>> Targets(const std::string& target,
                                              const ChannelOptions& options,
                                              int loops) {
  std::vector<std::shared_ptr<Channel>> targets;
  for (int i = 0; i < loops; ++i) {
    targets.push_back(CreateChannel(target, options));
  }
  return targets;
}

// A proxy (a server with the forwarder) in front of `target`, on `loops`
// loops.
class Proxy {
 public:
  explicit Proxy(const std::string& target,
                 ChannelOptions options = ChannelOptions(), int loops = 1)
      : forwarder_(Targets(target, options, loops), Forwarder::Options()) {
    forwarder_.AddTo(server_.builder());
  }
  Status Start() { return server_.Start(); }
  std::shared_ptr<Channel> NewChannel() { return server_.NewChannel(); }
  int port() const { return server_.port(); }
  ForwarderStats stats() const { return forwarder_.stats(); }

 private:
  Forwarder forwarder_;  // outlives the server
  StubServer server_;
};

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(backend_.Start().ok());
    proxy_ = std::make_unique<Proxy>(backend_.server().target());
    ASSERT_TRUE(proxy_->Start().ok());
    channel_ = proxy_->NewChannel();
  }

  Backend backend_{"backend"};
  std::unique_ptr<Proxy> proxy_;
  std::shared_ptr<Channel> channel_;
};

TEST_F(ProxyTest, UnaryWithMetadataAndStatusDetails) {
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  ClientContext context;
  context.AddMetadata("x-echo", "text");
  context.AddMetadata("x-echo-bin", std::string("\x00\xff\x10", 3));
  SimpleResponse response;
  Status status = channel_->UnaryCall(&context, kUnary, request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "hello");
  EXPECT_EQ(response.hostname(), "backend");
  EXPECT_EQ(context.GetServerInitialMetadata().Get("x-echo"), "text");
  EXPECT_EQ(context.GetServerInitialMetadata().Get("x-echo-bin"),
            std::string("\x00\xff\x10", 3));
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-echo-trailing"), "text");
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-echo-bin-trailing-bin"),
            std::string("\x00\xff\x10", 3));

  request.mutable_response_status()->set_code(
      static_cast<int>(StatusCode::kFailedPrecondition));
  request.mutable_response_status()->set_message("as asked");
  ClientContext failing;
  status = channel_->UnaryCall(&failing, kUnary, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "as asked");
  EXPECT_EQ(status.details(),
            "\x01\x02"
            "details");

  const ForwarderStats stats = proxy_->stats();
  EXPECT_EQ(stats.calls_started, 2);
  EXPECT_EQ(stats.calls_ended_by_code[0], 1);
  EXPECT_EQ(stats.calls_ended_by_code[static_cast<int>(
                StatusCode::kFailedPrecondition)],
            1);
  EXPECT_EQ(stats.messages_to_target, 2);
}

// Client connections are spread over the proxy's loops, and each loop
// forwards on its own channel: two client connections, on two loops, reach
// the backend over two connections.
TEST(ProxyLoopsTest, EachLoopForwardsOnItsOwnChannel) {
  Backend backend("backend");
  ASSERT_TRUE(backend.Start().ok());
  Proxy proxy(backend.server().target(), ChannelOptions(), /*loops=*/2);
  ASSERT_TRUE(proxy.Start().ok());
  // Each channel is a connection of its own; the server hands connections
  // to its loops in turn.
  std::shared_ptr<Channel> first = proxy.NewChannel();
  std::shared_ptr<Channel> second = proxy.NewChannel();
  for (int i = 0; i < 4; ++i) {
    for (Channel* channel : {first.get(), second.get()}) {
      SimpleRequest request;
      request.mutable_payload()->set_body(absl::StrCat("call ", i));
      SimpleResponse response;
      ClientContext context;
      const Status status =
          channel->UnaryCall(&context, kUnary, request, &response);
      ASSERT_TRUE(status.ok()) << status.ToString();
      EXPECT_EQ(response.payload().body(), request.payload().body());
    }
  }
  EXPECT_EQ(backend.calls(), 8);
  EXPECT_EQ(backend.unary_peers(), 2u);
  EXPECT_EQ(proxy.stats().calls_ended_by_code[0], 8);
}

TEST_F(ProxyTest, EveryStreamingKind) {
  {
    StreamingOutputCallRequest request;
    for (int size : {1, 70000, 0, 5}) {
      request.add_response_parameters()->set_size(size);
    }
    ClientContext context;
    auto reader = channel_->ServerStreamingCall<StreamingOutputCallRequest,
                                                StreamingOutputCallResponse>(
        &context, kServerStream, request);
    StreamingOutputCallResponse response;
    for (int size : {1, 70000, 0, 5}) {
      ASSERT_TRUE(reader->Read(&response));
      EXPECT_EQ(response.payload().body(), std::string(size, 's'));
    }
    EXPECT_FALSE(reader->Read(&response));
    EXPECT_TRUE(reader->Finish().ok());
  }
  {
    ClientContext context;
    StreamingInputCallResponse response;
    auto writer = channel_->ClientStreamingCall<StreamingInputCallRequest,
                                                StreamingInputCallResponse>(
        &context, kClientStream, &response);
    for (int size : {10, 0, 200000}) {
      StreamingInputCallRequest request;
      request.mutable_payload()->set_body(std::string(size, 'c'));
      ASSERT_TRUE(writer->Write(request));
    }
    ASSERT_TRUE(writer->Finish().ok());
    EXPECT_EQ(response.aggregated_payload_size(), 200010);
  }
  {
    ClientContext context;
    auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                              StreamingOutputCallResponse>(
        &context, kBidi);
    StreamingOutputCallResponse response;
    for (int i = 0; i < 20; ++i) {
      StreamingOutputCallRequest request;
      request.mutable_payload()->set_body(std::string(i * 100, 'b'));
      ASSERT_TRUE(stream->Write(request));
      ASSERT_TRUE(stream->Read(&response));
      EXPECT_EQ(response.payload().body(), request.payload().body());
    }
    ASSERT_TRUE(stream->WritesDone());
    EXPECT_FALSE(stream->Read(&response));
    EXPECT_TRUE(stream->Finish().ok());
  }
}

TEST_F(ProxyTest, CompressionIsKeptBothWays) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(10000, 'z'));
  request.mutable_response_compressed()->set_value(true);
  ClientContext context;
  context.set_compression_algorithm(CompressionAlgorithm::kGzip);
  SimpleResponse response;
  const Status status =
      channel_->UnaryCall(&context, kUnary, request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-request-compressed"),
            "yes");
  EXPECT_TRUE(context.last_message_compressed());
  EXPECT_EQ(context.server_compression_algorithm(),
            CompressionAlgorithm::kGzip);
}

TEST_F(ProxyTest, TheClientsDeadlineReachesTheBackend) {
  ClientContext context;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);
  context.set_deadline(deadline);
  SimpleResponse response;
  const Status status =
      channel_->UnaryCall(&context, kWaitForCancel, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(
      backend_.saw_cancel().WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_LE(backend_.deadline(), deadline + absl::Milliseconds(50));
}

TEST_F(ProxyTest, TheClientsCancelReachesTheBackend) {
  ClientContext context;
  std::thread canceller([&] {
    ASSERT_TRUE(
        backend_.started().WaitForNotificationWithTimeout(kHangTimeout));
    context.TryCancel();
  });
  SimpleResponse response;
  const Status status =
      channel_->UnaryCall(&context, kWaitForCancel, SimpleRequest(), &response);
  canceller.join();
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  ASSERT_TRUE(
      backend_.saw_cancel().WaitForNotificationWithTimeout(kHangTimeout));
  ASSERT_TRUE(WaitFor([this] { return proxy_->stats().calls_active == 0; }));
}

TEST_F(ProxyTest, AMalformedPathIsAnsweredByTheProxy) {
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(proxy_->port(), &error);
  ASSERT_NE(client, nullptr) << error;
  RawRequest request;
  request.headers = GrpcRequestHeaders("/nomethod", proxy_->port());
  request.body = GrpcFrame("");
  const RawResponse response = client->Call(request);
  EXPECT_EQ(response.Trailer("grpc-status"), "12") << response.DebugString();
  EXPECT_EQ(backend_.calls(), 0);
}

// The client reads nothing of a 16 MiB server stream: the backend's writes
// stop completing within what the windows and send buffers on the way
// hold, and go on once the client reads; everything arrives in order.
TEST_F(ProxyTest, AClientThatDoesNotReadHoldsTheBackendBack) {
  ClientContext context;
  auto reader = channel_->ServerStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kFlood, SimpleRequest());
  // Stalled: no write completes for 200 ms (the time only decides when the
  // stalled sender is looked at; one that is not held back finishes).
  int before;
  do {
    before = backend_.flood_written();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (backend_.flood_written() != before);
  EXPECT_LT(backend_.flood_written(), kFloodMessages / 2);
  SimpleResponse response;
  for (int i = 0; i < kFloodMessages; ++i) {
    ASSERT_TRUE(reader->Read(&response)) << i;
    ASSERT_EQ(response.payload().body().size(), kFloodMessageBytes);
    ASSERT_EQ(response.payload().body()[0], 'a' + i % 26) << i;
  }
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST(ProxyTargetTest, AnUnreachableBackendIsUnavailableWithTheReason) {
  // A port nothing listens on: one a server had and gave back.
  int port;
  {
    StubServer gone;
    ASSERT_TRUE(gone.Start().ok());
    port = gone.port();
  }
  Proxy proxy(absl::StrCat("127.0.0.1:", port));
  ASSERT_TRUE(proxy.Start().ok());
  ClientContext context;
  SimpleResponse response;
  const Status status = proxy.NewChannel()->UnaryCall(
      &context, kUnary, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("onnect")) << status.ToString();
}

TEST(ProxyTargetTest, RoundRobinOverTwoBackendsAndAUnixTarget) {
  Backend one("one");
  Backend two("two");
  Backend unix_backend("unix");
  ASSERT_TRUE(one.Start().ok());
  ASSERT_TRUE(two.Start().ok());
  // A name in the abstract namespace: no file, no path length to mind.
  // Sandboxed runs in parallel may share a pid, not the clock's nanosecond.
  const std::string path =
      absl::StrCat("unix-abstract:h2rpc_proxy_test_", getpid(), "_",
                   absl::ToUnixNanos(absl::Now()));
  const Status started = unix_backend.Start(path);
  ASSERT_TRUE(started.ok()) << started.ToString();
  ChannelOptions options;
  options.lb_policy = "round_robin";
  Proxy spread(
      absl::StrCat("ipv4:", one.server().target(), ",", two.server().target()),
      options);
  ASSERT_TRUE(spread.Start().ok());
  Proxy unix_proxy(path);
  ASSERT_TRUE(unix_proxy.Start().ok());
  std::shared_ptr<Channel> spread_channel = spread.NewChannel();
  std::shared_ptr<Channel> unix_channel = unix_proxy.NewChannel();
  // Round robin picks among the connections ready: the first calls may all
  // go to the backend that accepted first. Once both have had a call, both
  // connections are ready and the picks alternate.
  for (int i = 0; i < 100 && (one.calls() == 0 || two.calls() == 0); ++i) {
    ClientContext context;
    SimpleResponse response;
    ASSERT_TRUE(
        spread_channel->UnaryCall(&context, kUnary, SimpleRequest(), &response)
            .ok());
  }
  const int one_before = one.calls();
  const int two_before = two.calls();
  ASSERT_GT(one_before, 0);
  ASSERT_GT(two_before, 0);
  for (int i = 0; i < 10; ++i) {
    ClientContext context;
    SimpleResponse response;
    ASSERT_TRUE(
        spread_channel->UnaryCall(&context, kUnary, SimpleRequest(), &response)
            .ok());
    ClientContext unix_context;
    ASSERT_TRUE(
        unix_channel
            ->UnaryCall(&unix_context, kUnary, SimpleRequest(), &response)
            .ok());
    EXPECT_EQ(response.hostname(), "unix");
  }
  EXPECT_EQ(one.calls() - one_before, 5);
  EXPECT_EQ(two.calls() - two_before, 5);
  EXPECT_EQ(unix_backend.calls(), 10);
}

}  // namespace
}  // namespace h2rpc
