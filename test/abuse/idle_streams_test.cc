// Idle streams pinning synchronous handler threads: a synchronous streaming
// handler holds a thread for the whole call, so with a fixed pool, 64 idle
// full-duplex streams would leave every later call, unary included, queued for
// ever. Asserted: the pool grows on demand and a unary call is answered; past
// ServerOptions::max_sync_threads a call fails at once with RESOURCE_EXHAUSTED
// instead of waiting; and one connection gets at most
// ServerOptions::max_sync_threads_per_connection of the threads, so another
// client's calls are still answered.
#include <atomic>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr char kIdle[] = "/h2rpc.test.Abuse/Idle";
constexpr char kUnary[] = "/h2rpc.test.Abuse/Unary";
constexpr char kCallbackUnary[] = "/h2rpc.test.Abuse/CallbackUnary";
// Bounds every call: a call that hangs fails the test instead.
constexpr absl::Duration kCallTimeout = absl::Seconds(10);

using IdleStream = ClientReaderWriter<SimpleRequest, SimpleResponse>;

class IdleStreamsTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = ServerOptions()) {
    Status status;
    server_ =
        Server::Builder()
            .SetOptions(options)
            .AddListeningPort("127.0.0.1:0", &port_)
            // Announces itself with its headers, then blocks reading until
            // the client half-closes.
            .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
                kIdle,
                [](ServerContext*,
                   ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
                  stream->SendInitialMetadata();
                  SimpleRequest request;
                  while (stream->Read(&request)) {
                  }
                  return Status();
                })
            .RegisterUnary<SimpleRequest, SimpleResponse>(
                kUnary,
                [](ServerContext*, const SimpleRequest& request,
                   SimpleResponse* response) {
                  response->mutable_payload()->set_body(
                      request.payload().body());
                  return Status();
                })
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kCallbackUnary,
                [](ServerContext*, const SimpleRequest* request,
                   SimpleResponse* response, UnaryDone done) {
                  response->mutable_payload()->set_body(
                      request->payload().body());
                  done(Status());
                })
            .BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
    channel_ = CreateChannel(absl::StrCat("127.0.0.1:", port_));
  }

  // Opens an idle stream and waits for its handler to be running (its
  // headers arrived) or for the call to end.
  // On `channel`, channel_ unless given.
  IdleStream* OpenIdleStream(Channel* channel = nullptr) {
    if (channel == nullptr) channel = channel_.get();
    contexts_.push_back(std::make_unique<ClientContext>());
    contexts_.back()->set_timeout(absl::Minutes(5));
    streams_.push_back(
        channel->BidiStreamingCall<SimpleRequest, SimpleResponse>(
            contexts_.back().get(), kIdle));
    streams_.back()->WaitForInitialMetadata();
    return streams_.back().get();
  }

  // Half-closes every idle stream; their handlers return OK.
  void CloseIdleStreams() {
    for (auto& stream : streams_) stream->WritesDone();
    for (auto& stream : streams_) {
      const Status status = stream->Finish();
      EXPECT_TRUE(status.ok()) << status.ToString();
    }
    streams_.clear();
  }

  // Its end on a stream that OpenIdleStream opened: OK if it ran, or the
  // status of a refusal.
  static Status EndIdleStream(IdleStream* stream) {
    stream->WritesDone();
    return stream->Finish();
  }

  // On `channel`, channel_ unless given.
  Status Unary(const char* method, Channel* channel = nullptr) {
    if (channel == nullptr) channel = channel_.get();
    ClientContext context;
    context.set_timeout(kCallTimeout);
    SimpleRequest request;
    request.mutable_payload()->set_body("still there?");
    SimpleResponse response;
    Status status = channel->UnaryCall(&context, method, request, &response);
    if (status.ok() && response.payload().body() != "still there?") {
      return Status(StatusCode::kInternal, "wrong response");
    }
    return status;
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
  std::vector<std::unique_ptr<ClientContext>> contexts_;
  std::vector<std::unique_ptr<IdleStream>> streams_;
};

TEST_F(IdleStreamsTest, UnaryCallAnswersWhile64IdleStreamsHoldThreads) {
  ServerOptions options;
  options.min_sync_threads = 4;  // far fewer than the idle streams
  StartServer(options);
  for (int i = 0; i < 64; ++i) OpenIdleStream();

  // Each of the 64 handlers holds a thread; the call gets another one.
  const Status status = Unary(kUnary);
  EXPECT_TRUE(status.ok()) << status.ToString();
  // So does one more stream.
  SimpleRequest request;
  EXPECT_TRUE(OpenIdleStream()->Write(request));
  CloseIdleStreams();
  EXPECT_TRUE(Unary(kUnary).ok());
}

TEST_F(IdleStreamsTest, CallsBeyondMaxSyncThreadsFailAtOnce) {
  ServerOptions options;
  options.min_sync_threads = 2;
  options.max_sync_threads = 8;
  options.max_sync_threads_per_connection = 8;  // all for the one client
  StartServer(options);
  for (int i = 0; i < 8; ++i) OpenIdleStream();

  const std::string busy =
      "all 8 synchronous handler threads are busy "
      "(ServerOptions::max_sync_threads)";
  // One stream too many: finished by the server at once.
  ClientContext context;
  context.set_timeout(kCallTimeout);
  auto refused = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kIdle);
  const Status stream_status = refused->Finish();
  EXPECT_EQ(stream_status.code(), StatusCode::kResourceExhausted)
      << stream_status.ToString();
  EXPECT_EQ(stream_status.message(), busy);
  // A synchronous unary call too (not DEADLINE_EXCEEDED: it did not wait).
  const Status unary_status = Unary(kUnary);
  EXPECT_EQ(unary_status.code(), StatusCode::kResourceExhausted)
      << unary_status.ToString();
  EXPECT_EQ(unary_status.message(), busy);
  // A callback handler needs no thread and answers.
  EXPECT_TRUE(Unary(kCallbackUnary).ok());

  // Once one idle stream ends, its thread serves the next call.
  streams_.front()->WritesDone();
  EXPECT_TRUE(streams_.front()->Finish().ok());
  streams_.erase(streams_.begin());
  const Status after = Unary(kUnary);
  EXPECT_TRUE(after.ok()) << after.ToString();
  CloseIdleStreams();
}

TEST_F(IdleStreamsTest, OneConnectionGetsAtMostItsShareOfThreads) {
  ServerOptions options;
  options.max_sync_threads = 8;
  options.max_sync_threads_per_connection = 5;
  StartServer(options);
  // The greedy client's sixth stream is refused at once.
  for (int i = 0; i < 5; ++i) OpenIdleStream();
  IdleStream* refused = OpenIdleStream();
  const Status status = EndIdleStream(refused);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_EQ(status.message(),
            "this connection's 5 synchronous handler threads are busy "
            "(ServerOptions::max_sync_threads_per_connection)");
  streams_.pop_back();
  EXPECT_EQ(Unary(kUnary).code(), StatusCode::kResourceExhausted);

  // Another client, on a connection of its own, gets the threads left.
  std::shared_ptr<Channel> other =
      CreateChannel(absl::StrCat("127.0.0.1:", port_));
  const Status answered = Unary(kUnary, other.get());
  EXPECT_TRUE(answered.ok()) << answered.ToString();
  for (int i = 0; i < 3; ++i) {
    IdleStream* stream = OpenIdleStream(other.get());
    SimpleRequest request;
    EXPECT_TRUE(stream->Write(request));
  }

  // Once one of its streams ends, the greedy client gets a thread again.
  EXPECT_TRUE(EndIdleStream(streams_.front().get()).ok());
  streams_.erase(streams_.begin());
  const Status again = Unary(kUnary);
  EXPECT_TRUE(again.ok()) << again.ToString();
  CloseIdleStreams();
}

TEST_F(IdleStreamsTest, AConnectionsShareIsThreeQuartersByDefault) {
  ServerOptions options;
  options.max_sync_threads = 8;
  StartServer(options);
  for (int i = 0; i < 6; ++i) OpenIdleStream();
  const Status status = Unary(kUnary);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_EQ(status.message(),
            "this connection's 6 synchronous handler threads are busy "
            "(ServerOptions::max_sync_threads_per_connection)");
  CloseIdleStreams();
}

TEST_F(IdleStreamsTest, BadThreadLimitsAreRefused) {
  for (const auto& [min, max, per_connection, field] :
       {std::make_tuple(0, 0, 0, "ServerOptions::max_sync_threads is 0"),
        std::make_tuple(9, 8, 0, "ServerOptions::min_sync_threads is 9"),
        std::make_tuple(-1, 8, 0, "ServerOptions::min_sync_threads is -1"),
        std::make_tuple(
            0, 8, 9,
            "ServerOptions::max_sync_threads_per_connection is 9; it must "
            "be from 0 to 8"),
        std::make_tuple(
            0, 8, -1,
            "ServerOptions::max_sync_threads_per_connection is -1")}) {
    ServerOptions options;
    options.min_sync_threads = min;
    options.max_sync_threads = max;
    options.max_sync_threads_per_connection = per_connection;
    Status status;
    std::unique_ptr<Server> server = Server::Builder()
                                         .SetOptions(options)
                                         .AddListeningPort("127.0.0.1:0")
                                         .BuildAndStart(&status);
    EXPECT_EQ(server, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), ::testing::HasSubstr(field));
  }
  ServerOptions options;
  options.sync_thread_idle_time = absl::Seconds(-1);
  Status status;
  EXPECT_EQ(Server::Builder()
                .SetOptions(options)
                .AddListeningPort("127.0.0.1:0")
                .BuildAndStart(&status),
            nullptr);
  EXPECT_EQ(status.message(),
            "ServerOptions::sync_thread_idle_time is -1s; it must not be "
            "negative");
}

}  // namespace
}  // namespace h2rpc
