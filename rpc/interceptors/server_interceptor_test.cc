// The server's interceptor chain (rpc/interceptor.h,
// Server::Builder::AddInterceptor) on a real server and channel: hook
// order, an OnStart that fails the call before its handler, metadata added
// to the response.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/interceptor.h"
#include "rpc/interceptors/echo_loopback.h"
#include "rpc/server_context.h"
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
using ::h2rpc::testing::WaitFor;
using ::testing::ElementsAre;

// Hook entries of several interceptors, in the order they ran.
class HookLog {
 public:
  void Add(std::string entry) {
    MutexLock lock(&mu_);
    entries_.push_back(std::move(entry));
  }
  size_t size() {
    MutexLock lock(&mu_);
    return entries_.size();
  }
  std::vector<std::string> Take() {
    MutexLock lock(&mu_);
    return std::move(entries_);
  }
  // Waits until an entry is `last`, then takes the log.
  std::vector<std::string> TakeThrough(absl::string_view last) {
    EXPECT_TRUE(WaitFor([&] {
      MutexLock lock(&mu_);
      return !entries_.empty() && entries_.back() == last;
    })) << "no '"
        << last << "' entry";
    return Take();
  }

 private:
  Mutex mu_;
  std::vector<std::string> entries_ ABSL_GUARDED_BY(mu_);
};

// Records its hooks as "<name>:<hook>" into a shared log. Its OnStart fails
// with `fail_with` while that is not OK, and adds response metadata when
// told to. Settings are set before calls start; the rest is read once the
// log shows the call finished.
class RecordingInterceptor : public ServerInterceptor {
 public:
  RecordingInterceptor(std::string name, HookLog* log)
      : name_(std::move(name)), log_(log) {}

  Status fail_with;
  bool add_metadata = false;
  std::string expected_method;
  std::atomic<int> wrong_calls{0};
  Status finish_status;
  absl::Duration finish_elapsed;
  std::string saw_client_metadata;

  Status OnStart(const ServerCallInfo& call) override {
    Record("start", call);
    saw_client_metadata = std::string(
        call.context->client_metadata().Get("x-client").value_or("(none)"));
    if (add_metadata) {
      call.context->AddInitialMetadata(absl::StrCat("x-initial-", name_),
                                       "set in OnStart");
      call.context->AddTrailingMetadata(absl::StrCat("x-trailing-", name_),
                                        "set in OnStart");
    }
    return fail_with;
  }
  void OnReceiveMessage(const ServerCallInfo& call, size_t bytes) override {
    Record(absl::StrCat("receive ", bytes), call);
  }
  void OnSendMessage(const ServerCallInfo& call, size_t bytes) override {
    Record(absl::StrCat("send ", bytes), call);
  }
  void OnFinish(const ServerCallInfo& call, const Status& status,
                absl::Duration elapsed) override {
    finish_status = status;
    finish_elapsed = elapsed;
    Record("finish", call);  // last: the test reads the above after it
  }

 private:
  void Record(absl::string_view hook, const ServerCallInfo& call) {
    if (call.method != expected_method ||
        call.context->method() != expected_method) {
      wrong_calls.fetch_add(1);
    }
    log_->Add(absl::StrCat(name_, ":", hook));
  }

  const std::string name_;
  HookLog* const log_;
};

class ServerInterceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"1", "2", "3"}) {
      interceptors_.push_back(
          std::make_shared<RecordingInterceptor>(name, &log_));
    }
    loopback_ = std::make_unique<EchoLoopback>(
        std::vector<std::shared_ptr<ClientInterceptor>>(),
        std::vector<std::shared_ptr<ServerInterceptor>>(interceptors_.begin(),
                                                        interceptors_.end()));
    ASSERT_TRUE(loopback_->status().ok()) << loopback_->status().ToString();
  }

  void Expect(absl::string_view method) {
    for (auto& interceptor : interceptors_) {
      interceptor->expected_method = std::string(method);
    }
  }

  HookLog log_;
  std::vector<std::shared_ptr<RecordingInterceptor>> interceptors_;
  std::unique_ptr<EchoLoopback> loopback_;
};

TEST_F(ServerInterceptorTest, HooksRunInOrderAndFinishInReverse) {
  Expect(kEchoMethod);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(&context, kEchoMethod,
                                                        request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(loopback_->handler_calls(), 1);

  // The server's OnFinish may run after the client has its answer.
  const std::string receive = absl::StrCat("receive ", request.ByteSizeLong());
  const std::string send = absl::StrCat("send ", response.ByteSizeLong());
  EXPECT_THAT(log_.TakeThrough("1:finish"),
              ElementsAre("1:start", "2:start", "3:start",  //
                          "1:" + receive, "2:" + receive, "3:" + receive,
                          "1:" + send, "2:" + send, "3:" + send,  //
                          "3:finish", "2:finish", "1:finish"));
  for (const auto& interceptor : interceptors_) {
    EXPECT_EQ(interceptor->wrong_calls.load(), 0);
    EXPECT_TRUE(interceptor->finish_status.ok());
    EXPECT_GT(interceptor->finish_elapsed, absl::ZeroDuration());
  }
}

TEST_F(ServerInterceptorTest, TheHandlersStatusReachesOnFinish) {
  Expect(kFailMethod);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(
      &context, kFailMethod, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  const std::vector<std::string> log = log_.TakeThrough("1:finish");
  ASSERT_GE(log.size(), 3u);
  EXPECT_THAT(std::vector<std::string>(log.end() - 3, log.end()),
              ElementsAre("3:finish", "2:finish", "1:finish"));
  for (const auto& interceptor : interceptors_) {
    EXPECT_EQ(interceptor->finish_status.code(), StatusCode::kNotFound);
    EXPECT_EQ(interceptor->finish_status.message(), kFailMessage);
  }
}

// The second OnStart fails: the client gets its status, the third never
// starts, the handler never runs, the first two finish (second first).
TEST_F(ServerInterceptorTest, AFailingOnStartEndsTheCallBeforeTheHandler) {
  Expect(kEchoMethod);
  interceptors_[0]->add_metadata = true;
  interceptors_[1]->fail_with =
      Status(StatusCode::kPermissionDenied, "interceptor 2 says no");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(
      &context, kEchoMethod, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(), "interceptor 2 says no");
  // The handler would have run before the answer was sent.
  EXPECT_EQ(loopback_->handler_calls(), 0);
  EXPECT_THAT(log_.TakeThrough("1:finish"),
              ElementsAre("1:start", "2:start", "2:finish", "1:finish"));
  EXPECT_EQ(interceptors_[0]->finish_status, status);
  EXPECT_EQ(interceptors_[1]->finish_status, status);
  // Trailing metadata set by an interceptor that ran goes with the error.
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-trailing-1"),
            "set in OnStart");
}

TEST_F(ServerInterceptorTest, AFailingOnStartEndsAStreamingCall) {
  Expect(kBidiMethod);
  interceptors_[1]->fail_with =
      Status(StatusCode::kPermissionDenied, "interceptor 2 says no");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  auto stream = loopback_->channel()
                    ->BidiStreamingCall<StreamingOutputCallRequest,
                                        StreamingOutputCallResponse>(
                        &context, kBidiMethod);
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(), "interceptor 2 says no");
  EXPECT_EQ(loopback_->handler_calls(), 0);
  EXPECT_THAT(log_.TakeThrough("1:finish"),
              ElementsAre("1:start", "2:start", "2:finish", "1:finish"));
}

// OnStart reads the client's metadata and adds initial and trailing
// metadata that the client receives.
TEST_F(ServerInterceptorTest, MetadataAddedInOnStartReachesTheClient) {
  Expect(kEchoMethod);
  interceptors_[0]->add_metadata = true;
  interceptors_[2]->add_metadata = true;
  ClientContext context;
  context.set_timeout(kHangTimeout);
  context.AddMetadata("x-client", "hi");
  SimpleResponse response;
  const Status status = loopback_->channel()->UnaryCall(
      &context, kEchoMethod, SimpleRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  for (const char* name : {"1", "3"}) {
    EXPECT_EQ(context.GetServerInitialMetadata().Get(
                  absl::StrCat("x-initial-", name)),
              "set in OnStart")
        << name;
    EXPECT_EQ(context.GetServerTrailingMetadata().Get(
                  absl::StrCat("x-trailing-", name)),
              "set in OnStart")
        << name;
  }
  EXPECT_FALSE(context.GetServerInitialMetadata().Get("x-initial-2"));
  // The handler's own trailing metadata is there too.
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("echo-x-client"), "hi");
  log_.TakeThrough("1:finish");
  for (const auto& interceptor : interceptors_) {
    EXPECT_EQ(interceptor->saw_client_metadata, "hi");
  }
}

// Each message of a stream passes every interceptor, in order.
TEST_F(ServerInterceptorTest, StreamingMessagesPassEveryInterceptor) {
  Expect(kBidiMethod);
  ClientContext context;
  context.set_timeout(kHangTimeout);
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
  const std::string receive = absl::StrCat("receive ", request.ByteSizeLong());
  const std::string send = absl::StrCat("send ", response.ByteSizeLong());
  EXPECT_THAT(log_.TakeThrough("1:finish"),
              ElementsAre("1:start", "2:start", "3:start",  //
                          "1:" + receive, "2:" + receive, "3:" + receive,
                          "1:" + send, "2:" + send, "3:" + send,  //
                          "1:" + receive, "2:" + receive, "3:" + receive,
                          "1:" + send, "2:" + send, "3:" + send,  //
                          "3:finish", "2:finish", "1:finish"));
  for (const auto& interceptor : interceptors_) {
    EXPECT_EQ(interceptor->wrong_calls.load(), 0);
  }
}

}  // namespace
}  // namespace h2rpc
