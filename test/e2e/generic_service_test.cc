// A generic service (Server::Builder::RegisterCallbackGenericService and
// RegisterGenericService) over real loopback sockets, each test in both
// forms: it receives every call no registered method claims (an unknown
// service, an unknown method of a known one) with its path and metadata,
// answers typed and generic clients of every kind, runs the server's
// interceptors, and holds back a client whose messages it does not read.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/byte_buffer.h"
#include "rpc/channel.h"
#include "rpc/interceptor.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;

constexpr char kRegistered[] = "/h2rpc.test.Known/Registered";
constexpr char kUnknownMethod[] = "/h2rpc.test.Known/Unknown";
constexpr char kUnknownService[] = "/other.Service/Anything";
// Served by the generic service: reads nothing until the test says so.
constexpr char kStall[] = "/h2rpc.test.Generic/Stall";

// What the generic service answers to one request message: a
// SimpleResponse naming the method and echoing the request's body, or,
// when the request is not a SimpleRequest, the request's bytes as they are.
ByteBuffer Answer(absl::string_view method, const ByteBuffer& request) {
  SimpleRequest parsed;
  if (!request.Parse(&parsed) || !parsed.has_payload()) {
    return request.Copy();
  }
  SimpleResponse response;
  response.mutable_payload()->set_body(
      absl::StrCat(method, " ", parsed.payload().body()));
  ByteBuffer answer;
  EXPECT_TRUE(answer.Serialize(response).ok());
  return answer;
}

// The callback form: answers each message; at kStall, reads only once the
// test calls StartReading() (through `*stalled`).
class EchoReactor final : public GenericServerBidiReactor {
 public:
  EchoReactor(ServerContext* context, std::atomic<EchoReactor*>* stalled)
      : context_(context) {
    if (auto v = context->client_metadata().Get("x-echo")) {
      context->AddInitialMetadata("x-echo", *v);
    }
    if (context->method() == kStall) {
      stalled->store(this);
    } else {
      StartRead(&request_);
    }
  }
  // Any thread.
  void StartReading() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(Status());
      return;
    }
    response_ = Answer(context_->method(), request_);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(StatusCode::kAborted, "write failed"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  ServerContext* const context_;
  ByteBuffer request_;
  ByteBuffer response_;
};

// Counts the calls the server's interceptor saw, by method.
class MethodCounter final : public ServerInterceptor {
 public:
  Status OnStart(const ServerCallInfo& call) override {
    MutexLock lock(&mu_);
    methods_.emplace_back(call.method);
    return Status();
  }
  std::vector<std::string> methods() {
    MutexLock lock(&mu_);
    return methods_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> methods_ ABSL_GUARDED_BY(mu_);
};

// The parameter: whether the generic service is the synchronous form.
class GenericServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    counter_ = std::make_shared<MethodCounter>();
    Server::Builder& builder = server_.builder();
    builder.AddInterceptor(counter_)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kRegistered, [](ServerContext*, const SimpleRequest& request,
                            SimpleResponse* response) {
              response->mutable_payload()->set_body("registered " +
                                                    request.payload().body());
              return Status();
            });
    if (GetParam()) {
      builder.RegisterGenericService(
          [this](ServerContext* context, GenericServerReaderWriter* stream) {
            if (auto v = context->client_metadata().Get("x-echo")) {
              context->AddInitialMetadata("x-echo", *v);
            }
            if (context->method() == kStall) {
              reading_.WaitForNotificationWithTimeout(kHangTimeout);
            }
            ByteBuffer request;
            while (stream->Read(&request)) {
              if (!stream->Write(Answer(context->method(), request))) {
                return Status(StatusCode::kAborted, "write failed");
              }
            }
            return Status();
          });
    } else {
      builder.RegisterCallbackGenericService(
          [this](ServerContext* context) -> GenericServerBidiReactor* {
            return new EchoReactor(context, &stalled_);
          });
    }
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = server_.NewChannel();
  }

  // A typed unary call to `method`.
  Status Unary(absl::string_view method, const std::string& body,
               SimpleResponse* response, ClientContext* context) {
    SimpleRequest request;
    request.mutable_payload()->set_body(body);
    return channel_->UnaryCall(context, method, request, response);
  }

  StubServer server_;
  std::shared_ptr<Channel> channel_;
  std::shared_ptr<MethodCounter> counter_;
  // The kStall call's reading starts: the synchronous handler waits for
  // reading_, the callback form's reactor (once made) is told.
  Notification reading_;
  std::atomic<EchoReactor*> stalled_{nullptr};
};

INSTANTIATE_TEST_SUITE_P(CallbackAndSync, GenericServiceTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sync" : "Callback";
                         });

TEST_P(GenericServiceTest, TakesEveryCallNoMethodClaims) {
  for (const char* method : {kUnknownMethod, kUnknownService}) {
    SCOPED_TRACE(method);
    ClientContext context;
    context.AddMetadata("x-echo", "v1");
    SimpleResponse response;
    const Status status = Unary(method, "hi", &response, &context);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(response.payload().body(), absl::StrCat(method, " hi"));
    EXPECT_EQ(context.GetServerInitialMetadata().Get("x-echo"), "v1");
  }
  ClientContext context;
  SimpleResponse response;
  ASSERT_TRUE(Unary(kRegistered, "hi", &response, &context).ok());
  EXPECT_EQ(response.payload().body(), "registered hi");
  EXPECT_EQ(
      counter_->methods(),
      (std::vector<std::string>{kUnknownMethod, kUnknownService, kRegistered}));
}

TEST_P(GenericServiceTest, StreamsBothWaysWithAGenericClient) {
  ClientContext context;
  std::unique_ptr<GenericClientReaderWriter> stream =
      channel_->BidiStreamingCall<ByteBuffer, ByteBuffer>(&context,
                                                          kUnknownService);
  ByteBuffer response;
  for (int i = 0; i < 10; ++i) {
    // Not SimpleRequests with a payload: echoed byte for byte.
    const ByteBuffer request(std::string(i * 1000, static_cast<char>(i)));
    ASSERT_TRUE(stream->Write(request.Copy()));
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.ToString(), request.ToString());
  }
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST_P(GenericServiceTest, ServesTypedStreamingClients) {
  SimpleRequest request;
  request.mutable_payload()->set_body("x");
  ClientContext context;
  std::unique_ptr<ClientReader<SimpleResponse>> reader =
      channel_->ServerStreamingCall<SimpleRequest, SimpleResponse>(
          &context, kUnknownMethod, request);
  SimpleResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.payload().body(), absl::StrCat(kUnknownMethod, " x"));
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
}

// The service does not read: the client's writes stop completing within
// the stream's flow-control window and send buffer, and go on once it
// reads; every message arrives, in order.
TEST_P(GenericServiceTest, AClientItDoesNotReadIsHeldBack) {
  constexpr int kMessages = 256;
  constexpr size_t kMessageBytes = 64 << 10;  // 16 MiB in all
  ClientContext context;
  std::unique_ptr<GenericClientReaderWriter> stream =
      channel_->BidiStreamingCall<ByteBuffer, ByteBuffer>(&context, kStall);
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; i < kMessages; ++i) {
      if (!stream->Write(
              ByteBuffer(std::string(kMessageBytes, 'a' + i % 26)))) {
        return;
      }
      written.fetch_add(1);
    }
    stream->WritesDone();
  });
  // Stalled: no write completes for 200 ms (the time only decides when the
  // stalled sender is looked at; a sender that is not held back finishes).
  int before;
  do {
    before = written.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (written.load() != before);
  EXPECT_LT(written.load(), kMessages / 2)
      << "the client sent " << written.load() << " messages of "
      << kMessageBytes << " bytes to a service that reads none";
  if (GetParam()) {
    reading_.Notify();
  } else {
    ASSERT_TRUE(WaitFor([this] { return stalled_.load() != nullptr; }));
    stalled_.load()->StartReading();
  }
  ByteBuffer response;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(stream->Read(&response)) << i;
    ASSERT_EQ(response.size(), kMessageBytes);
    ASSERT_EQ(response.bytes()[0], 'a' + i % 26) << i;
  }
  writer.join();
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(GenericServiceBuilderTest, OneGenericServiceOnly) {
  Server::Builder builder;
  builder.RegisterGenericService(
      [](ServerContext*, GenericServerReaderWriter*) { return Status(); });
  builder.RegisterCallbackGenericService(
      [](ServerContext*) -> GenericServerBidiReactor* { return nullptr; });
  Status status;
  EXPECT_EQ(builder.BuildAndStart(&status), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace h2rpc
