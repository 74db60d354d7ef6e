// h2rpc client <-> h2rpc server, unary calls over real loopback sockets.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;

constexpr char kEcho[] = "/h2rpc.test.Echo/Echo";
constexpr char kEchoCallback[] = "/h2rpc.test.Echo/EchoCallback";
constexpr char kSleep[] = "/h2rpc.test.Echo/Sleep";
constexpr char kServerCancels[] = "/h2rpc.test.Echo/ServerCancels";

// Echoes the payload, sized response_size, with response_status and echoed
// metadata, like the interop server's UnaryCall.
Status Echo(ServerContext* context, const SimpleRequest& request,
            SimpleResponse* response) {
  response->mutable_payload()->set_body(
      request.response_size() > 0 ? std::string(request.response_size(), 'r')
                                  : request.payload().body());
  if (auto v = context->client_metadata().Get("x-echo-initial")) {
    context->AddInitialMetadata("x-echo-initial", *v);
  }
  if (auto v = context->client_metadata().Get("x-echo-trailing-bin")) {
    context->AddTrailingMetadata("x-echo-trailing-bin", *v);
  }
  // Keys with capitals are invalid on the wire.
  if (context->client_metadata().Get("x-bad-initial")) {
    context->AddInitialMetadata("Bad-Initial", "v");
  }
  if (context->client_metadata().Get("x-bad-trailing")) {
    context->AddTrailingMetadata("Bad-Trailing", "v");
  }
  if (request.has_response_status()) {
    return Status(static_cast<StatusCode>(request.response_status().code()),
                  request.response_status().message());
  }
  return Status();
}

class UnaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 2;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo)
        .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
            kEchoCallback,
            [](ServerContext* context, const SimpleRequest* request,
               SimpleResponse* response,
               UnaryDone done) { done(Echo(context, *request, response)); })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kSleep,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              // Runs until cancelled (a handler has no cancel
              // callback: it polls), or gives up after
              // kHangTimeout without notifying saw_cancel_.
              sleeping_.Notify();
              if (!WaitFor([context] { return context->IsCancelled(); })) {
                return Status(StatusCode::kAborted, "no cancel");
              }
              saw_cancel_.Notify();
              return Status(StatusCode::kCancelled, "noticed");
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kServerCancels, [](ServerContext* context, const SimpleRequest&,
                               SimpleResponse* response) {
              context->TryCancel();
              response->mutable_payload()->set_body("not sent");
              return Status();
            });
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_GT(server_.port(), 0);
    channel_ = server_.NewChannel();
  }

  StubServer server_;
  std::shared_ptr<Channel> channel_;
  Notification sleeping_;
  Notification saw_cancel_;
};

TEST_F(UnaryTest, BlockingCallRoundTrips) {
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  SimpleResponse response;
  ClientContext context;
  const Status status =
      channel_->UnaryCall(&context, kEcho, request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "hello");
}

TEST_F(UnaryTest, LargeMessagesBothWays) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(271828, 'q'));
  request.set_response_size(314159);
  SimpleResponse response;
  for (const char* method : {kEcho, kEchoCallback}) {
    ClientContext context;
    const Status status =
        channel_->UnaryCall(&context, method, request, &response);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(response.payload().body(), std::string(314159, 'r'));
  }
}

TEST_F(UnaryTest, MetadataIsEchoed) {
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  context.AddMetadata("x-echo-initial", "test_initial_metadata_value");
  context.AddMetadata("x-echo-trailing-bin",
                      std::string("\x0a\x0b\x0a\x0b\x0a\x0b", 6));
  ASSERT_TRUE(channel_->UnaryCall(&context, kEcho, request, &response).ok());
  EXPECT_EQ(context.GetServerInitialMetadata().Get("x-echo-initial"),
            absl::string_view("test_initial_metadata_value"));
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-echo-trailing-bin"),
            absl::string_view("\x0a\x0b\x0a\x0b\x0a\x0b", 6));
}

TEST_F(UnaryTest, StatusCodeAndMessageAreEchoed) {
  SimpleRequest request;
  request.mutable_response_status()->set_code(2);
  request.mutable_response_status()->set_message(
      "\t\ntest with whitespace\r\nand Unicode BMP \xe2\x98\xba and non-BMP "
      "\xf0\x9f\x98\x88\t\n");
  SimpleResponse response;
  for (const char* method : {kEcho, kEchoCallback}) {
    ClientContext context;
    const Status status =
        channel_->UnaryCall(&context, method, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kUnknown);
    EXPECT_EQ(status.message(), request.response_status().message());
  }
}

TEST_F(UnaryTest, ServerCancelEndsTheCallWithCancelled) {
  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
  const Status status =
      channel_->UnaryCall(&context, kServerCancels, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  EXPECT_FALSE(response.has_payload());
}

TEST_F(UnaryTest, UnknownMethodAndServiceAreUnimplemented) {
  SimpleRequest request;
  SimpleResponse response;
  ClientContext c1;
  Status status =
      channel_->UnaryCall(&c1, "/h2rpc.test.Echo/Nope", request, &response);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("Nope"));
  ClientContext c2;
  status = channel_->UnaryCall(&c2, "/no.Such/Thing", request, &response);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("no.Such"));
}

TEST_F(UnaryTest, PastDeadlineFailsWithoutAStream) {
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  context.set_deadline(absl::Now() - absl::Seconds(1));
  const Status status =
      channel_->UnaryCall(&context, kEcho, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
}

TEST_F(UnaryTest, DeadlineExpiresOnASleepingServer) {
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  context.set_timeout(absl::Milliseconds(200));
  const Status status =
      channel_->UnaryCall(&context, kSleep, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  // The handler's context expires too.
  EXPECT_TRUE(saw_cancel_.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST_F(UnaryTest, ClientCancelReachesTheHandler) {
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  Notification done;
  Status result;
  channel_->AsyncUnaryCall(&context, kSleep, request, &response,
                           [&](const Status& status) {
                             result = status;
                             done.Notify();
                           });
  ASSERT_TRUE(sleeping_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  context.TryCancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(result.code(), StatusCode::kCancelled);
  EXPECT_TRUE(saw_cancel_.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST_F(UnaryTest, InvalidMetadataFailsWithInternal) {
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  context.AddMetadata("Bad-Key", "v");
  const Status status =
      channel_->UnaryCall(&context, kEcho, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("Bad-Key"));
}

TEST_F(UnaryTest, InvalidServerMetadataFailsWithInternalNamingTheKey) {
  for (const char* which : {"x-bad-initial", "x-bad-trailing"}) {
    SimpleRequest request;
    request.mutable_payload()->set_body("hi");
    SimpleResponse response;
    ClientContext context;
    context.AddMetadata(which, "1");
    const Status status =
        channel_->UnaryCall(&context, kEcho, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << which;
    EXPECT_THAT(
        status.message(),
        HasSubstr(which == std::string("x-bad-initial") ? "Bad-Initial"
                                                        : "Bad-Trailing"));
  }
  // The connection still serves.
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  EXPECT_TRUE(channel_->UnaryCall(&context, kEcho, request, &response).ok());
}

TEST_F(UnaryTest, ThousandConcurrentCallsOnOneConnection) {
  constexpr int kCalls = 1000;
  struct Call {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::mutex mu;
  std::condition_variable cv;
  int remaining = kCalls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Call>();
    call->request.mutable_payload()->set_body(std::to_string(i));
    Call* raw = call.get();
    calls.push_back(std::move(call));
    channel_->AsyncUnaryCall(&raw->context, i % 2 ? kEcho : kEchoCallback,
                             raw->request, &raw->response,
                             [raw, &mu, &cv, &remaining](const Status& status) {
                               raw->status = status;
                               std::lock_guard<std::mutex> lock(mu);
                               if (--remaining == 0) cv.notify_all();
                             });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60),
                            [&] { return remaining == 0; }));
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i]->status.ok()) << i << calls[i]->status.ToString();
    EXPECT_EQ(calls[i]->response.payload().body(), std::to_string(i));
  }
}

TEST_F(UnaryTest, CallsFromEightThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this, t, &failures] {
      for (int i = 0; i < 100; ++i) {
        SimpleRequest request;
        request.mutable_payload()->set_body(std::to_string(t * 1000 + i));
        SimpleResponse response;
        ClientContext context;
        const Status status =
            channel_->UnaryCall(&context, kEcho, request, &response);
        if (!status.ok() ||
            response.payload().body() != request.payload().body()) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

// Beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS calls wait instead of
// failing; streams the server refuses before its SETTINGS arrive are retried
// transparently.
TEST(UnaryConcurrencyTest, CallsBeyondMaxConcurrentStreamsWait) {
  ServerOptions options;
  options.connection.max_concurrent_streams = 4;
  StubServer server;
  server.builder()
      .SetOptions(options)
      .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo);
  ASSERT_TRUE(server.Start().ok());
  std::shared_ptr<Channel> channel = server.NewChannel();
  constexpr int kCalls = 200;
  struct Call {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    Status status;
    Notification done;
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::make_unique<Call>());
    Call* c = calls.back().get();
    c->request.mutable_payload()->set_body(std::to_string(i));
    channel->AsyncUnaryCall(&c->context, kEcho, c->request, &c->response,
                            [c](const Status& s) {
                              c->status = s;
                              c->done.Notify();
                            });
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(
        calls[i]->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
    EXPECT_TRUE(calls[i]->status.ok())
        << i << ": " << calls[i]->status.ToString();
    EXPECT_EQ(calls[i]->response.payload().body(), std::to_string(i));
  }
}

TEST(UnaryConnectTest, NoServerIsUnavailableNamingTheAddress) {
  // Bind and close a port so nothing listens on it.
  StubServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Stop();
  const int port = server.port();
  std::shared_ptr<Channel> channel = server.NewChannel();
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  const Status status = channel->UnaryCall(&context, kEcho, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("127.0.0.1:" + std::to_string(port)));
}

TEST(UnaryShutdownTest, GracefulShutdownLosesNoCallInFlight) {
  Notification release;
  std::atomic<int> started{0};
  // One loop: the server's DrainConnections() sends GOAWAY on all of the
  // loop's connections in one task, so a GOAWAY seen on one connection
  // means the channel's connection got its GOAWAY too.
  ServerOptions options;
  options.num_loops = 1;
  StubServer server;
  server.builder()
      .SetOptions(options)
      .RegisterUnary<SimpleRequest, SimpleResponse>(
          kEcho, [&](ServerContext* context, const SimpleRequest& request,
                     SimpleResponse* response) {
            started.fetch_add(1);
            release.WaitForNotification();
            return Echo(context, request, response);
          });
  ASSERT_TRUE(server.Start().ok());
  // Whatever fails below, the handlers return before ~Server waits for them.
  absl::Cleanup release_handlers = [&release] { release.Notify(); };
  constexpr int kCalls = 4;
  struct Call {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    Status status;
    Notification done;
  };
  // Before the channel: outlives the callbacks ~Channel may run.
  std::vector<std::unique_ptr<Call>> calls;
  std::shared_ptr<Channel> channel = server.NewChannel();
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::make_unique<Call>());
    Call* c = calls.back().get();
    c->request.mutable_payload()->set_body("x" + std::to_string(i));
    channel->AsyncUnaryCall(&c->context, kEcho, c->request, &c->response,
                            [c](const Status& s) {
                              c->status = s;
                              c->done.Notify();
                            });
  }
  ASSERT_TRUE(WaitFor([&] { return started.load() == kCalls; }))
      << started.load() << " of " << kCalls << " handlers started";
  // A second connection, which the server has taken (it answered a PING),
  // watches for the server's GOAWAY.
  std::string error;
  std::unique_ptr<RawH2Client> watcher =
      RawH2Client::Connect(server.port(), &error);
  ASSERT_NE(watcher, nullptr) << error;
  ASSERT_TRUE(watcher->Ping());
  std::thread shutdown(
      [&] { server.server().Shutdown(absl::Now() + absl::Seconds(30)); });
  // Every handler is still blocked when the GOAWAY goes out: the calls are
  // in flight on a draining connection.
  const bool goaway = watcher->RunUntil(
      [&] { return watcher->goaway_received(); }, kHangTimeout);
  EXPECT_TRUE(goaway) << watcher->error();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_FALSE(calls[i]->done.HasBeenNotified()) << "call " << i;
  }
  // Done watching. Closing now spares Shutdown the wait for this client's
  // answer to the PING that follows the GOAWAY (up to 20 s).
  watcher.reset();
  release.Notify();
  shutdown.join();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(
        calls[i]->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_TRUE(calls[i]->status.ok()) << calls[i]->status.ToString();
    EXPECT_EQ(calls[i]->response.payload().body(), "x" + std::to_string(i));
  }
  // After shutdown, new calls fail with UNAVAILABLE.
  ClientContext context;
  SimpleResponse response;
  EXPECT_EQ(
      channel->UnaryCall(&context, kEcho, SimpleRequest(), &response).code(),
      StatusCode::kUnavailable);
}

}  // namespace
}  // namespace h2rpc
