// The streaming operations engine (rpc/internal/common/stream_ops.h), on both
// sides, against misuse: a second read or write while one is outstanding is
// reported naming the method, and fails the call with INTERNAL (in
// optimized builds; a debug build aborts). Counted as an operation whose
// task never runs, it would keep the call from completing and leak the
// server's count of live calls (Shutdown would hang).
#include "rpc/internal/common/stream_ops.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"

namespace h2rpc::internal {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::Notification;
using ::testing::HasSubstr;

using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;

constexpr char kReadTwice[] = "/h2rpc.test.Ops/ReadTwice";
constexpr char kWriteTwice[] = "/h2rpc.test.Ops/WriteTwice";
constexpr char kEcho[] = "/h2rpc.test.Ops/Echo";

// Base of the server reactors below: finishes once (after a failed read or
// a cancel) and deletes itself in OnDone. Loop thread only.
class FinishingReactor
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 protected:
  void FinishOnce() {
    if (finished_) return;
    finished_ = true;
    Finish(Status());
  }
  void OnCancel() override { FinishOnce(); }
  void OnDone() override { delete this; }

  bool finished_ = false;
};

// Misuse: two reads outstanding at once.
class ReadTwiceReactor final : public FinishingReactor {
 public:
  ReadTwiceReactor() {
    StartRead(&first_);
    StartRead(&second_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) FinishOnce();
  }

 private:
  SimpleRequest first_;
  SimpleRequest second_;
};

// Misuse: two writes outstanding at once.
class WriteTwiceReactor final : public FinishingReactor {
 public:
  WriteTwiceReactor() {
    response_.mutable_payload()->set_body("w");
    StartWrite(&response_);
    StartWrite(&response_);
  }

 private:
  SimpleResponse response_;
};

// Reads until the client half-closes (or the call fails), then finishes.
class DrainReactor final : public FinishingReactor {
 public:
  DrainReactor() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (ok) {
      StartRead(&request_);
    } else {
      FinishOnce();
    }
  }

 private:
  SimpleRequest request_;
};

// Misuse on the client: two reads before the call starts.
class ClientReadTwiceReactor final
    : public ClientBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  void Begin(Channel* channel, ClientContext* context) {
    channel->AsyncBidiStreamingCall(context, kEcho, this);
    StartRead(&first_);
    StartRead(&second_);
    StartCall();
  }
  void OnDone(const Status& status) override {
    status_ = status;
    done_.Notify();
  }
  Status Await() {
    EXPECT_TRUE(done_.WaitForNotificationWithTimeout(kHangTimeout));
    return status_;
  }

 private:
  SimpleResponse first_;
  SimpleResponse second_;
  Notification done_;
  Status status_;
};

class StreamOpsMisuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status status;
    server_ = Server::Builder()
                  .AddListeningPort("127.0.0.1:0", &port_)
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kReadTwice,
                      [](ServerContext*) { return new ReadTwiceReactor(); })
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kWriteTwice,
                      [](ServerContext*) { return new WriteTwiceReactor(); })
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kEcho, [](ServerContext*) { return new DrainReactor(); })
                  .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = CreateChannel("127.0.0.1:" + std::to_string(port_));
  }

  void TearDown() override {
    SetMisuseIsFatalForTest(
#ifdef NDEBUG
        false
#else
        true
#endif
    );
  }

  // The server's status for a bidi call to `method` that sends nothing.
  Status CallAndFinish(const char* method) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
        &context, method);
    stream->WritesDone();
    return stream->Finish();
  }

  // Every call ended (nothing leaked) and Shutdown returns without waiting
  // for its deadline; a leak would hang here, so give up loudly instead.
  void ExpectCleanShutdown() {
    EXPECT_TRUE(WaitFor([this] { return server_->live_calls() == 0; }))
        << server_->live_calls() << " calls still live";
    Notification returned;
    std::thread shutdown([&] {
      server_->Shutdown(absl::Now());
      returned.Notify();
    });
    if (!returned.WaitForNotificationWithTimeout(kHangTimeout)) {
      std::fprintf(stderr, "Server::Shutdown hangs\n");
      std::abort();
    }
    shutdown.join();
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
};

TEST_F(StreamOpsMisuseTest, SecondServerReadFailsTheCallWithInternal) {
  SetMisuseIsFatalForTest(false);
  const Status status = CallAndFinish(kReadTwice);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("StartRead while a read is outstanding on a call of "
                        "/h2rpc.test.Ops/ReadTwice"));
  ExpectCleanShutdown();
}

TEST_F(StreamOpsMisuseTest, SecondServerWriteFailsTheCallWithInternal) {
  SetMisuseIsFatalForTest(false);
  const Status status = CallAndFinish(kWriteTwice);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("StartWrite while a write is outstanding on a call of "
                        "/h2rpc.test.Ops/WriteTwice"));
  ExpectCleanShutdown();
}

TEST_F(StreamOpsMisuseTest, SecondClientReadFailsTheCallWithInternal) {
  SetMisuseIsFatalForTest(false);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  ClientReadTwiceReactor reactor;
  reactor.Begin(channel_.get(), &context);
  const Status status = reactor.Await();
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("StartRead while a read is outstanding on a call of "
                        "/h2rpc.test.Ops/Echo"));
  ExpectCleanShutdown();
}

TEST_F(StreamOpsMisuseTest, SecondReadAbortsNamingTheMethodInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SetMisuseIsFatalForTest(true);
  // The call aborts the process: there is no status to look at.
  EXPECT_DEATH(static_cast<void>(CallAndFinish(kReadTwice)),
               "API misuse: StartRead while a read is outstanding on a call "
               "of /h2rpc.test.Ops/ReadTwice");
}

}  // namespace
}  // namespace h2rpc::internal
