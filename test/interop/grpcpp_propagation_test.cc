// Deadline and cancellation propagation through an h2rpc server between
// stock gRPC C++ 1.51 peers over real loopback sockets: a gRPC C++ client
// calls grpc.testing.TestService/UnaryCall on an h2rpc server (A), whose
// handler makes the same call, with a ClientContext made from its
// ServerContext, to a gRPC C++ server (B) in this process that waits for
// its call's cancellation:
//   - the client's deadline, sent as grpc-timeout to A, reaches B as its
//     own and expires there: B sees the cancellation, the client's call
//     ends DEADLINE_EXCEEDED;
//   - the client cancelling reaches B's handler (IsCancelled), and A's
//     call to B ends CANCELLED.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "rpc/channel.h"
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

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";

// B: UnaryCall waits until its call is cancelled, noting when it starts,
// the deadline it got, and that it saw the cancellation.
class WaitingService final : public grpc::testing::TestService::Service {
 public:
  grpc::Status UnaryCall(grpc::ServerContext* context, const SimpleRequest*,
                         SimpleResponse*) override {
    {
      MutexLock lock(&mu_);
      deadline_ = absl::FromChrono(context->deadline());
    }
    started_.Notify();
    if (!WaitFor([context] { return context->IsCancelled(); })) {
      return grpc::Status(grpc::StatusCode::ABORTED, "B saw no cancel");
    }
    saw_cancel_.Notify();
    return grpc::Status(grpc::StatusCode::CANCELLED, "B saw the cancel");
  }

  Notification& started() { return started_; }
  Notification& saw_cancel() { return saw_cancel_; }
  absl::Time deadline() {
    MutexLock lock(&mu_);
    return deadline_;
  }

 private:
  Notification started_;
  Notification saw_cancel_;
  Mutex mu_;
  absl::Time deadline_ ABSL_GUARDED_BY(mu_);
};

class GrpcppPropagationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &b_port_);
    builder.RegisterService(&b_service_);
    b_ = builder.BuildAndStart();
    ASSERT_NE(b_, nullptr);
    ASSERT_GT(b_port_, 0);
    b_channel_ = CreateChannel(absl::StrCat("127.0.0.1:", b_port_),
                               InsecureChannelCredentials());

    a_.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
        kUnaryCall, [this](ServerContext* context, const SimpleRequest& request,
                           SimpleResponse* response) {
          ClientContext child(*context);
          const Status status =
              b_channel_->UnaryCall(&child, kUnaryCall, request, response);
          MutexLock lock(&mu_);
          child_status_ = status;
          child_done_ = true;
          return status;
        });
    const Status status = a_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    client_ = grpc::testing::TestService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", a_.port()),
                            grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    a_.Stop();
    if (b_ != nullptr) {
      b_->Shutdown(std::chrono::system_clock::now() +
                   absl::ToChronoSeconds(kHangTimeout));
    }
  }

  // A's call to B, once over.
  Status ChildStatus() {
    EXPECT_TRUE(WaitFor([this] {
      MutexLock lock(&mu_);
      return child_done_;
    }));
    MutexLock lock(&mu_);
    return child_status_;
  }

  WaitingService b_service_;
  int b_port_ = 0;
  std::unique_ptr<grpc::Server> b_;
  std::shared_ptr<Channel> b_channel_;
  StubServer a_;
  std::unique_ptr<grpc::testing::TestService::Stub> client_;
  Mutex mu_;
  Status child_status_ ABSL_GUARDED_BY(mu_);
  bool child_done_ ABSL_GUARDED_BY(mu_) = false;
};

TEST_F(GrpcppPropagationTest, TheClientsDeadlineExpiresInB) {
  grpc::ClientContext context;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);
  context.set_deadline(absl::ToChronoTime(deadline));
  SimpleResponse response;
  const grpc::Status status =
      client_->UnaryCall(&context, SimpleRequest(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << status.error_message();
  ASSERT_TRUE(
      b_service_.saw_cancel().WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_LE(b_service_.deadline(), deadline + absl::Milliseconds(50));
  // A's call to B ends at the deadline it inherited, or when A's own call
  // is cancelled (A's deadline passing: DEADLINE_EXCEEDED; the client's
  // RST_STREAM at its deadline reaching A first: CANCELLED).
  EXPECT_THAT(
      ChildStatus().code(),
      ::testing::AnyOf(StatusCode::kDeadlineExceeded, StatusCode::kCancelled))
      << ChildStatus().ToString();
}

TEST_F(GrpcppPropagationTest, TheClientsCancelReachesB) {
  grpc::ClientContext context;
  std::thread canceller([&] {
    ASSERT_TRUE(
        b_service_.started().WaitForNotificationWithTimeout(kHangTimeout));
    context.TryCancel();
  });
  SimpleResponse response;
  const grpc::Status status =
      client_->UnaryCall(&context, SimpleRequest(), &response);
  canceller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED)
      << status.error_message();
  ASSERT_TRUE(
      b_service_.saw_cancel().WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(ChildStatus().code(), StatusCode::kCancelled)
      << ChildStatus().ToString();
}

}  // namespace
}  // namespace h2rpc
