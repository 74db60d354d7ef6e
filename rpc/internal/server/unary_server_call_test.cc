// The unary server call's state machine
// (rpc/internal/server/unary_server_call.h) against the hazards of its
// lifetime: a cancel that loses the race with the handler's done() must not
// reach the next call on the pooled object, and a UnaryDone is move-only and
// once-only (a second call or a dropped one is reported and never hangs or
// double-frees the call).
#include "rpc/internal/server/unary_server_call.h"

#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

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
#include "test/util/raw_h2_client.h"
#include "test/util/wait_for.h"

namespace h2rpc::internal {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::testing::HasSubstr;

static_assert(!std::is_copy_constructible<UnaryDone>::value,
              "UnaryDone is move-only");
static_assert(!std::is_copy_assignable<UnaryDone>::value,
              "UnaryDone is move-only");
static_assert(std::is_nothrow_move_constructible<UnaryDone>::value,
              "UnaryDone moves without throwing");

using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;

constexpr char kCancelThenDone[] = "/h2rpc.test.Calls/CancelThenDone";
constexpr char kHold[] = "/h2rpc.test.Calls/Hold";
constexpr char kDoneTwice[] = "/h2rpc.test.Calls/DoneTwice";
constexpr char kDropDone[] = "/h2rpc.test.Calls/DropDone";
constexpr char kDoneElsewhere[] = "/h2rpc.test.Calls/DoneElsewhere";

class UnaryServerCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 1;  // every call on the one loop and its pool
    Status status;
    server_ =
        Server::Builder()
            .SetOptions(options)
            .AddListeningPort("127.0.0.1:0", &port_)
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kCancelThenDone,
                [](ServerContext* context, const SimpleRequest*,
                   SimpleResponse*, UnaryDone done) {
                  // Legal: TryCancel while the handler runs, then done.
                  // The cancel's task runs after the call has ended.
                  context->TryCancel();
                  done(Status());
                })
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kHold,
                [this](ServerContext* context, const SimpleRequest*,
                       SimpleResponse*, UnaryDone done) {
                  MutexLock lock(&mu_);
                  held_.push_back({context, std::move(done)});
                })
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kDoneTwice,
                [](ServerContext*, const SimpleRequest*, SimpleResponse*,
                   UnaryDone done) {
                  done(Status());
                  done(Status(StatusCode::kInternal, "second"));
                })
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kDropDone,
                [](ServerContext*, const SimpleRequest*, SimpleResponse*,
                   UnaryDone done) { UnaryDone dropped = std::move(done); })
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kDoneElsewhere,
                [this](ServerContext*, const SimpleRequest* request,
                       SimpleResponse* response, UnaryDone done) {
                  response->mutable_payload()->set_body(
                      request->payload().body());
                  MutexLock lock(&mu_);
                  threads_.emplace_back(
                      [done = std::move(done)]() mutable { done(Status()); });
                })
            .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = CreateChannel("127.0.0.1:" + std::to_string(port_));
  }

  void TearDown() override {
    ReleaseHeld();
    std::vector<std::thread> threads;
    {
      MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    for (std::thread& thread : threads) thread.join();
    // Every call ended: none is left counted (a leak would hang Shutdown).
    if (server_ != nullptr) {
      EXPECT_TRUE(WaitFor([this] { return server_->live_calls() == 0; }))
          << server_->live_calls() << " calls still live";
    }
    channel_.reset();
    server_.reset();
    SetMisuseIsFatalForTest(MisuseIsFatalByDefault());
  }

  static bool MisuseIsFatalByDefault() {
#ifdef NDEBUG
    return false;
#else
    return true;
#endif
  }

  struct HeldCall {
    ServerContext* context;
    UnaryDone done;
  };

  int HeldCount() {
    MutexLock lock(&mu_);
    return static_cast<int>(held_.size());
  }

  // Completes every held call with OK (from this thread).
  void ReleaseHeld() {
    std::vector<HeldCall> held;
    {
      MutexLock lock(&mu_);
      held.swap(held_);
    }
    for (HeldCall& call : held) call.done(Status());
  }

  Status Call(const char* method, SimpleResponse* response = nullptr) {
    SimpleRequest request;
    request.mutable_payload()->set_body("ping");
    SimpleResponse ignored;
    ClientContext context;
    context.set_timeout(kHangTimeout);
    return channel_->UnaryCall(&context, method, request,
                               response != nullptr ? response : &ignored);
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
  Mutex mu_;
  std::vector<HeldCall> held_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

// A cancel that loses the race to done() never touches the next call: a
// handler that calls TryCancel() and then done() ends the call before the
// cancel's task runs, and the call object stays out of the pool until that
// task has run, so the next request (in the same read) gets another object
// and its stream is left alone. Both requests go out in one write, so the
// server reads them in one loop iteration, before the task runs.
TEST_F(UnaryServerCallTest, ACancelThatLosesToDoneNeverReachesTheNextCall) {
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
  ASSERT_NE(client, nullptr) << error;
  constexpr int kRounds = 10;
  for (int round = 0; round < kRounds; ++round) {
    RawRequest cancel_then_done;
    cancel_then_done.headers = GrpcRequestHeaders(kCancelThenDone, port_);
    cancel_then_done.body = GrpcFrame("");
    RawRequest hold;
    hold.headers = GrpcRequestHeaders(kHold, port_);
    hold.body = GrpcFrame("");
    const int32_t first = client->Start(cancel_then_done);
    const int32_t second = client->Start(hold);
    ASSERT_GT(first, 0);
    ASSERT_GT(second, 0);
    // The held call's handler ran (so the stale task, posted before it,
    // runs before its done's task).
    ASSERT_TRUE(client->RunUntil(
        [&] {
          return HeldCount() == 1 && client->Response(first).stream_closed;
        },
        kHangTimeout))
        << client->Response(first).DebugString();
    ReleaseHeld();
    ASSERT_TRUE(client->RunUntil(
        [&] { return client->Response(second).stream_closed; }, kHangTimeout));
    const RawResponse held = client->Response(second);
    EXPECT_FALSE(held.rst_received)
        << "round " << round << ": the cancel reached an unrelated call\n"
        << held.DebugString();
    EXPECT_EQ(held.Trailer("grpc-status"), "0") << held.DebugString();
    // The call that cancelled and finished: either outcome, but an end.
    const RawResponse cancelled = client->Response(first);
    EXPECT_TRUE(cancelled.rst_received ||
                cancelled.Trailer("grpc-status") == "0")
        << cancelled.DebugString();
  }
}

// TryCancel from another thread while the handler holds done: the cancel's
// task runs before done's, so the client sees CANCELLED.
TEST_F(UnaryServerCallTest, TryCancelFromAnotherThreadBeforeDoneCancels) {
  Status status;
  std::thread caller([&] { status = Call(kHold); });
  ASSERT_TRUE(WaitFor([this] { return HeldCount() == 1; }));
  std::vector<HeldCall> held;
  {
    MutexLock lock(&mu_);
    held.swap(held_);
  }
  held[0].context->TryCancel();
  EXPECT_TRUE(held[0].context->IsCancelled());
  held[0].done(Status());
  caller.join();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
}

TEST_F(UnaryServerCallTest, DoneMovedToAnotherThreadCompletesTheCall) {
  SimpleResponse response;
  const Status status = Call(kDoneElsewhere, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "ping");
}

// A UnaryDone called twice completes the call once: the second call is
// reported as misuse and, when misuse is not fatal, ignored (no second
// completion, the object pooled once).
TEST_F(UnaryServerCallTest, DoneCalledTwiceIsIgnoredWhenMisuseIsNotFatal) {
  SetMisuseIsFatalForTest(false);
  for (int i = 0; i < 3; ++i) {
    const Status status = Call(kDoneTwice);
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  // The pool holds the object once: two calls held at once get two objects.
  std::vector<Status> statuses(2);
  std::vector<std::thread> callers;
  for (Status& status : statuses) {
    callers.emplace_back([&] { status = Call(kHold); });
  }
  ASSERT_TRUE(WaitFor([this] { return HeldCount() == 2; }));
  {
    MutexLock lock(&mu_);
    EXPECT_NE(held_[0].context, held_[1].context);
  }
  ReleaseHeld();
  for (std::thread& caller : callers) caller.join();
  for (const Status& status : statuses) EXPECT_TRUE(status.ok());
}

TEST_F(UnaryServerCallTest, DoneCalledTwiceAbortsNamingTheMethodInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(static_cast<void>(Call(kDoneTwice)),
               "API misuse: the UnaryDone of a call of "
               "/h2rpc.test.Calls/DoneTwice was called twice");
}

// A UnaryDone destroyed without being called fails the call with INTERNAL,
// so neither the client nor Server::Shutdown waits for ever.
TEST_F(UnaryServerCallTest, DroppedDoneFailsTheCallWithInternal) {
  SetMisuseIsFatalForTest(false);
  const Status status = Call(kDropDone);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("the UnaryDone of a call of "
                        "/h2rpc.test.Calls/DropDone was destroyed without "
                        "being called"));
  // And the server shuts down at once: nothing is left waiting.
  server_->Shutdown(absl::Now());
  EXPECT_EQ(server_->live_calls(), 0);
}

TEST_F(UnaryServerCallTest, DroppedDoneAbortsNamingTheMethodInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(static_cast<void>(Call(kDropDone)),
               "API misuse: the UnaryDone of a call of "
               "/h2rpc.test.Calls/DropDone was destroyed without being "
               "called");
}

}  // namespace
}  // namespace h2rpc::internal
