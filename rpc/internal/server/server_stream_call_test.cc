// The streaming server call's state machine
// (rpc/internal/server/server_stream_call.h) against the hazards of its
// lifetime: a second Finish (or initial metadata) must not leak an operation
// (the call would never reach OnDone and Server::Shutdown would hang), nor may
// a read outstanding at Finish, and a cancel racing the call's end must never
// run on a deleted call.
#include "rpc/internal/server/server_stream_call.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
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

constexpr char kFinishTwice[] = "/h2rpc.test.Streams/FinishTwice";
constexpr char kMetadataTwice[] = "/h2rpc.test.Streams/MetadataTwice";
constexpr char kCancelInOnDone[] = "/h2rpc.test.Streams/CancelInOnDone";
constexpr char kHandOff[] = "/h2rpc.test.Streams/HandOff";
constexpr char kFinishWhileReading[] = "/h2rpc.test.Streams/FinishWhileReading";

using Reactor = ServerBidiReactor<SimpleRequest, SimpleResponse>;

// Misuse: Finish twice in a row.
class FinishTwiceReactor final : public Reactor {
 public:
  FinishTwiceReactor() {
    Finish(Status());
    Finish(Status(StatusCode::kInternal, "second"));
  }
  void OnDone() override { delete this; }
};

// Misuse: initial metadata twice while the first is outstanding.
class MetadataTwiceReactor final : public Reactor {
 public:
  MetadataTwiceReactor() {
    StartSendInitialMetadata();
    StartSendInitialMetadata();
  }
  void OnCancel() override { Finish(Status()); }
  void OnDone() override { delete this; }
};

// Cancels from its last event: the cancel lands while the call is still
// open and its task runs once the call has ended.
class CancelInOnDoneReactor final : public Reactor {
 public:
  explicit CancelInOnDoneReactor(ServerContext* context) : context_(context) {
    Finish(Status());
  }
  void OnDone() override {
    context_->TryCancel();
    delete this;
  }

 private:
  ServerContext* const context_;
};

// Hands itself to the test, which finishes it from one thread while another
// cancels it. OnDone waits until the cancelling thread has returned from
// TryCancel, so TryCancel always runs while the call is alive (as the API
// requires) but as late as the race allows.
class HandOffReactor final : public Reactor {
 public:
  explicit HandOffReactor(ServerContext* context) : context_(context) {}
  void OnDone() override {
    EXPECT_TRUE(cancel_returned_.WaitForNotificationWithTimeout(kHangTimeout));
    delete this;
  }

  ServerContext* const context_;
  Notification cancel_returned_;
};

// Starts a read, then finishes at once while the read waits for a message
// the client never sends (nor half-closes); records how the read ended.
class FinishWhileReadingReactor final : public Reactor {
 public:
  explicit FinishWhileReadingReactor(std::atomic<int>* read_done)
      : read_done_(read_done) {
    StartRead(&request_);
    Finish(Status(StatusCode::kUnavailable, "finished while reading"));
  }
  void OnReadDone(bool ok) override { read_done_->store(ok ? 1 : 0); }
  void OnDone() override { delete this; }

 private:
  std::atomic<int>* const read_done_;
  SimpleRequest request_;
};

class ServerStreamCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 1;
    Status status;
    server_ = Server::Builder()
                  .SetOptions(options)
                  .AddListeningPort("127.0.0.1:0", &port_)
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kFinishTwice,
                      [](ServerContext*) { return new FinishTwiceReactor(); })
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kMetadataTwice,
                      [](ServerContext*) { return new MetadataTwiceReactor(); })
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kCancelInOnDone,
                      [](ServerContext* context) {
                        return new CancelInOnDoneReactor(context);
                      })
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kHandOff,
                      [this](ServerContext* context) {
                        auto* reactor = new HandOffReactor(context);
                        MutexLock lock(&mu_);
                        handed_off_ = reactor;
                        return reactor;
                      })
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kFinishWhileReading,
                      [this](ServerContext*) {
                        return new FinishWhileReadingReactor(&read_done_);
                      })
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

  Status CallAndFinish(const char* method) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
        &context, method);
    stream->WritesDone();
    return stream->Finish();
  }

  HandOffReactor* TakeHandedOff() {
    HandOffReactor* reactor = nullptr;
    EXPECT_TRUE(WaitFor([&] {
      MutexLock lock(&mu_);
      std::swap(reactor, handed_off_);
      return reactor != nullptr;
    }));
    return reactor;
  }

  // Every call ended (nothing leaked) and Shutdown returns without waiting;
  // a leak would hang here, so give up loudly instead.
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
  Mutex mu_;
  HandOffReactor* handed_off_ ABSL_GUARDED_BY(mu_) = nullptr;
  // FinishWhileReadingReactor's read: -1 outstanding, else its `ok`.
  std::atomic<int> read_done_{-1};
};

// A second Finish before the first has taken effect fails the call with
// INTERNAL naming the misuse (the first status is not sent as if nothing
// happened), and leaks nothing: every call reaches OnDone and Shutdown
// returns without waiting.
TEST_F(ServerStreamCallTest, SecondFinishFailsTheCallWithInternal) {
  SetMisuseIsFatalForTest(false);
  for (int i = 0; i < 3; ++i) {
    const Status status = CallAndFinish(kFinishTwice);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr("Finish called twice on a call of "
                                            "/h2rpc.test.Streams/FinishTwice"));
  }
  ExpectCleanShutdown();
}

TEST_F(ServerStreamCallTest, SecondFinishAbortsNamingTheMethodInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(static_cast<void>(CallAndFinish(kFinishTwice)),
               "API misuse: Finish called twice on a call of "
               "/h2rpc.test.Streams/FinishTwice");
}

TEST_F(ServerStreamCallTest, SecondInitialMetadataFailsTheCallWithInternal) {
  SetMisuseIsFatalForTest(false);
  const Status status = CallAndFinish(kMetadataTwice);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("StartSendInitialMetadata while one is outstanding on "
                        "a call of /h2rpc.test.Streams/MetadataTwice"));
  ExpectCleanShutdown();
}

// A cancel accepted while the call completes runs before the call object
// is freed: the cancel gate keeps the call until the cancel's task has run
// (otherwise ASan reports a heap-use-after-free).
TEST_F(ServerStreamCallTest, ACancelFromOnDoneRunsBeforeTheCallIsFreed) {
  for (int i = 0; i < 5; ++i) {
    const Status status = CallAndFinish(kCancelInOnDone);
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  ExpectCleanShutdown();
}

// Finish on one thread, TryCancel on another, at once: the client sees
// either outcome, and every call ends exactly once.
TEST_F(ServerStreamCallTest, TryCancelRacingFinishEndsTheCallOnce) {
  constexpr int kRounds = 100;
  for (int round = 0; round < kRounds; ++round) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
        &context, kHandOff);
    HandOffReactor* reactor = TakeHandedOff();
    ASSERT_NE(reactor, nullptr);
    std::atomic<bool> go{false};
    std::thread canceller([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      reactor->context_->TryCancel();
      reactor->cancel_returned_.Notify();
    });
    go.store(true, std::memory_order_release);
    reactor->Finish(Status());
    canceller.join();
    const Status status = stream->Finish();
    EXPECT_TRUE(status.ok() || status.code() == StatusCode::kCancelled)
        << status.ToString();
  }
  ExpectCleanShutdown();
}

// Finish ends a read still waiting for a message: the transport delivers
// nothing once the stream is finished, and its normal close is no cancel,
// so the read completes (and OnDone runs, and Shutdown does not wait on the
// call) only because Finish ends it.
TEST_F(ServerStreamCallTest, FinishEndsAWaitingRead) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kFinishWhileReading);
  // Neither a message nor a half-close: only Finish can end the read.
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_EQ(status.message(), "finished while reading");
  EXPECT_TRUE(WaitFor([this] { return read_done_.load() != -1; }));
  EXPECT_EQ(read_done_.load(), 0);
  ExpectCleanShutdown();
}

}  // namespace
}  // namespace h2rpc::internal
