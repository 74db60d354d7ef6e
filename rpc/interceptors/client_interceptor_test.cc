// The client's interceptor chain (rpc/interceptor.h) on a real channel and
// server: hook order, an OnStart that fails the call, metadata added in
// OnStart.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/connectivity_state.h"
#include "rpc/interceptor.h"
#include "rpc/interceptors/echo_loopback.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::EchoLoopback;
using ::h2rpc::testing::kBidiMethod;
using ::h2rpc::testing::kEchoMethod;
using ::h2rpc::testing::kFailMessage;
using ::h2rpc::testing::kFailMethod;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Hook entries of several interceptors, in the order they ran.
class HookLog {
 public:
  void Add(std::string entry) {
    MutexLock lock(&mu_);
    entries_.push_back(std::move(entry));
  }
  std::vector<std::string> Take() {
    MutexLock lock(&mu_);
    return std::move(entries_);
  }

 private:
  Mutex mu_;
  std::vector<std::string> entries_ ABSL_GUARDED_BY(mu_);
};

// Records its hooks as "<name>:<hook>" into a shared log. Its OnStart fails
// with `fail_with` while that is not OK, and adds `metadata` (key, value)
// when given.
class RecordingInterceptor : public ClientInterceptor {
 public:
  RecordingInterceptor(std::string name, HookLog* log)
      : name_(std::move(name)), log_(log) {}

  // Set before calls start.
  Status fail_with;
  std::string metadata_key;
  std::string metadata_value;
  // The call's details each hook saw, checked after the call.
  std::atomic<int> wrong_calls{0};
  const ClientContext* expected_context = nullptr;
  std::string expected_method;
  // What OnFinish saw.
  Status finish_status;
  std::string finish_trailing_echo;
  absl::Duration finish_elapsed;
  // The value of x-first (added by another interceptor) OnStart saw.
  std::string saw_first;

  Status OnStart(const ClientCallInfo& call) override {
    Record("start", call);
    if (auto first = call.context->send_metadata().Get("x-first")) {
      saw_first = std::string(*first);
    }
    if (!metadata_key.empty()) {
      call.context->AddMetadata(metadata_key, metadata_value);
    }
    return fail_with;
  }
  void OnSendMessage(const ClientCallInfo& call, size_t bytes) override {
    Record(absl::StrCat("send ", bytes), call);
  }
  void OnReceiveInitialMetadata(const ClientCallInfo& call,
                                const Metadata& metadata) override {
    Record("initial_metadata", call);
  }
  void OnReceiveMessage(const ClientCallInfo& call, size_t bytes) override {
    Record(absl::StrCat("receive ", bytes), call);
  }
  void OnFinish(const ClientCallInfo& call, const Status& status,
                const Metadata& trailing, absl::Duration elapsed) override {
    Record("finish", call);
    finish_status = status;
    finish_trailing_echo =
        std::string(trailing.Get("echo-x-first").value_or("(none)"));
    finish_elapsed = elapsed;
  }

 private:
  void Record(absl::string_view hook, const ClientCallInfo& call) {
    if (call.context != expected_context || call.method != expected_method) {
      wrong_calls.fetch_add(1);
    }
    log_->Add(absl::StrCat(name_, ":", hook));
  }

  const std::string name_;
  HookLog* const log_;
};

class ClientInterceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"1", "2", "3"}) {
      interceptors_.push_back(
          std::make_shared<RecordingInterceptor>(name, &log_));
    }
    loopback_ = std::make_unique<EchoLoopback>(
        std::vector<std::shared_ptr<ClientInterceptor>>(interceptors_.begin(),
                                                        interceptors_.end()),
        std::vector<std::shared_ptr<ServerInterceptor>>());
    ASSERT_TRUE(loopback_->status().ok()) << loopback_->status().ToString();
  }

  // Points every interceptor's checks at the call about to be made.
  void Expect(const ClientContext& context, absl::string_view method) {
    for (auto& interceptor : interceptors_) {
      interceptor->expected_context = &context;
      interceptor->expected_method = std::string(method);
    }
  }

  HookLog log_;
  std::vector<std::shared_ptr<RecordingInterceptor>> interceptors_;
  std::unique_ptr<EchoLoopback> loopback_;
};

TEST_F(ClientInterceptorTest, HooksRunInOrderAndFinishInReverse) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  Expect(context, kEchoMethod);
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(&context, kEchoMethod,
                                                        request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "hello");

  // OnFinish runs before the blocking call returns.
  const std::string send = absl::StrCat("send ", request.ByteSizeLong());
  const std::string receive = absl::StrCat("receive ", response.ByteSizeLong());
  EXPECT_THAT(log_.Take(),
              ElementsAre("1:start", "2:start", "3:start",             //
                          "1:" + send, "2:" + send, "3:" + send,       //
                          "1:initial_metadata", "2:initial_metadata",  //
                          "3:initial_metadata",                        //
                          "1:" + receive, "2:" + receive, "3:" + receive,
                          "3:finish", "2:finish", "1:finish"));
  for (const auto& interceptor : interceptors_) {
    EXPECT_EQ(interceptor->wrong_calls.load(), 0);
    EXPECT_TRUE(interceptor->finish_status.ok());
    EXPECT_GT(interceptor->finish_elapsed, absl::ZeroDuration());
  }
}

TEST_F(ClientInterceptorTest, AFailedCallFinishesEveryInterceptor) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  Expect(context, kFailMethod);
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(
      &context, kFailMethod, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  const std::vector<std::string> log = log_.Take();
  ASSERT_FALSE(log.empty());
  EXPECT_THAT(std::vector<std::string>(log.end() - 3, log.end()),
              ElementsAre("3:finish", "2:finish", "1:finish"));
  for (const auto& interceptor : interceptors_) {
    EXPECT_EQ(interceptor->finish_status.code(), StatusCode::kNotFound);
    EXPECT_EQ(interceptor->finish_status.message(), kFailMessage);
  }
}

// The second OnStart fails: the call fails with its status, the third
// never starts, the first two finish (second first), and nothing reaches
// the server: the channel does not even connect.
TEST_F(ClientInterceptorTest, AFailingOnStartEndsTheCallBeforeItIsSent) {
  interceptors_[1]->fail_with =
      Status(StatusCode::kPermissionDenied, "interceptor 2 says no");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  Expect(context, kEchoMethod);
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(
      &context, kEchoMethod, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(), "interceptor 2 says no");
  EXPECT_THAT(log_.Take(),
              ElementsAre("1:start", "2:start", "2:finish", "1:finish"));
  EXPECT_EQ(interceptors_[0]->finish_status, status);
  EXPECT_EQ(interceptors_[1]->finish_status, status);
  EXPECT_EQ(interceptors_[0]->wrong_calls.load(), 0);
  EXPECT_EQ(interceptors_[1]->wrong_calls.load(), 0);
  EXPECT_EQ(loopback_->channel()->GetState(/*try_to_connect=*/false),
            ConnectivityState::kIdle);
  EXPECT_EQ(loopback_->handler_calls(), 0);

  // The next call goes through; the server then has seen that one only.
  interceptors_[1]->fail_with = Status();
  ClientContext next;
  next.set_timeout(kHangTimeout);
  Expect(next, kEchoMethod);
  const Status next_status = loopback_->channel()->UnaryCall(
      &next, kEchoMethod, SimpleRequest(), &response);
  EXPECT_TRUE(next_status.ok()) << next_status.ToString();
  EXPECT_EQ(loopback_->handler_calls(), 1);
}

TEST_F(ClientInterceptorTest, AFailingOnStartEndsAnAsyncCall) {
  interceptors_[1]->fail_with =
      Status(StatusCode::kPermissionDenied, "interceptor 2 says no");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  Expect(context, kEchoMethod);
  SimpleResponse response;
  Notification done;
  Status status;
  loopback_->channel()->AsyncUnaryCall(&context, kEchoMethod, SimpleRequest(),
                                       &response, [&](const Status& s) {
                                         status = s;
                                         done.Notify();
                                       });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(log_.Take(),
              ElementsAre("1:start", "2:start", "2:finish", "1:finish"));
  EXPECT_EQ(loopback_->handler_calls(), 0);
}

TEST_F(ClientInterceptorTest, AFailingOnStartEndsAStreamingCall) {
  interceptors_[1]->fail_with =
      Status(StatusCode::kPermissionDenied, "interceptor 2 says no");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  Expect(context, kBidiMethod);
  auto stream = loopback_->channel()
                    ->BidiStreamingCall<StreamingOutputCallRequest,
                                        StreamingOutputCallResponse>(
                        &context, kBidiMethod);
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(), "interceptor 2 says no");
  EXPECT_THAT(log_.Take(),
              ElementsAre("1:start", "2:start", "2:finish", "1:finish"));
  EXPECT_EQ(loopback_->handler_calls(), 0);
}

// Metadata added by an OnStart reaches the server (which echoes x- keys
// into its trailers), and later interceptors see it.
TEST_F(ClientInterceptorTest, MetadataAddedInOnStartReachesTheServer) {
  interceptors_[0]->metadata_key = "x-first";
  interceptors_[0]->metadata_value = "from interceptor 1";
  ClientContext context;
  context.set_timeout(kHangTimeout);
  Expect(context, kEchoMethod);
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(
      &context, kEchoMethod, SimpleRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("echo-x-first"),
            "from interceptor 1");
  EXPECT_THAT(interceptors_[0]->saw_first, IsEmpty());
  EXPECT_EQ(interceptors_[1]->saw_first, "from interceptor 1");
  EXPECT_EQ(interceptors_[2]->saw_first, "from interceptor 1");
  // OnFinish gets the server's trailers.
  EXPECT_EQ(interceptors_[0]->finish_trailing_echo, "from interceptor 1");
}

// Each message of a stream passes every interceptor, in order.
TEST_F(ClientInterceptorTest, StreamingMessagesPassEveryInterceptor) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  Expect(context, kBidiMethod);
  auto stream = loopback_->channel()
                    ->BidiStreamingCall<StreamingOutputCallRequest,
                                        StreamingOutputCallResponse>(
                        &context, kBidiMethod);
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body("ping");
  StreamingOutputCallResponse response;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(stream->Write(request));
    ASSERT_TRUE(stream->Read(&response));
  }
  ASSERT_TRUE(stream->WritesDone());
  const Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();

  const std::string send = absl::StrCat("send ", request.ByteSizeLong());
  const std::string receive = absl::StrCat("receive ", response.ByteSizeLong());
  std::vector<std::string> log = log_.Take();
  // The response headers may come before or after the first request is
  // handed over; everything else has one order.
  std::vector<std::string> metadata;
  std::vector<std::string> rest;
  for (std::string& entry : log) {
    (absl::EndsWith(entry, ":initial_metadata") ? metadata : rest)
        .push_back(std::move(entry));
  }
  EXPECT_THAT(metadata, ElementsAre("1:initial_metadata", "2:initial_metadata",
                                    "3:initial_metadata"));
  EXPECT_THAT(rest, ElementsAre("1:start", "2:start", "3:start",        //
                                "1:" + send, "2:" + send, "3:" + send,  //
                                "1:" + receive, "2:" + receive,
                                "3:" + receive,                         //
                                "1:" + send, "2:" + send, "3:" + send,  //
                                "1:" + receive, "2:" + receive,
                                "3:" + receive,  //
                                "3:finish", "2:finish", "1:finish"));
  for (const auto& interceptor : interceptors_) {
    EXPECT_EQ(interceptor->wrong_calls.load(), 0);
  }
}

}  // namespace
}  // namespace h2rpc
