// ServerContext::IsCancelled() and TryCancel() from threads other than the
// handler's. IsCancelled() reads an atomic flag, not the call's transport
// stream, which the loop nulls when the call ends: a thread watching a
// context while the handler finishes neither races that write
// (ThreadSanitizer) nor dereferences null.
#include "rpc/server_context.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::Notification;

using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;

constexpr char kWatched[] = "/h2rpc.test.Context/Watched";
constexpr char kCancelSelf[] = "/h2rpc.test.Context/CancelSelf";
constexpr char kWatchedStream[] = "/h2rpc.test.Context/WatchedStream";

// A bidi reactor that hands its context to a watcher thread and finishes
// once cancelled; OnDone waits until the watcher has stopped looking.
class WatchedReactor final
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  explicit WatchedReactor(Notification* watcher_done)
      : watcher_done_(watcher_done) {}
  void OnCancel() override { Finish(Status()); }
  void OnDone() override {
    EXPECT_TRUE(watcher_done_->WaitForNotificationWithTimeout(kHangTimeout));
    delete this;
  }

 private:
  Notification* const watcher_done_;
};

class ServerContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status status;
    server_ = Server::Builder()
                  .AddListeningPort("127.0.0.1:0", &port_)
                  .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                      kWatched,
                      [this](ServerContext* context, const SimpleRequest*,
                             SimpleResponse*, UnaryDone done) {
                        watched_.store(context, std::memory_order_release);
                        done(Status());
                      })
                  .RegisterUnary<SimpleRequest, SimpleResponse>(
                      kCancelSelf,
                      [this](ServerContext* context, const SimpleRequest&,
                             SimpleResponse*) {
                        context->TryCancel();
                        cancelled_at_once_ = context->IsCancelled();
                        cancel_self_checked_.Notify();
                        return Status();
                      })
                  .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                      kWatchedStream,
                      [this](ServerContext* context) {
                        watched_.store(context, std::memory_order_release);
                        return new WatchedReactor(&watcher_done_);
                      })
                  .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = CreateChannel("127.0.0.1:" + std::to_string(port_));
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
  std::atomic<ServerContext*> watched_{nullptr};
  std::atomic<bool> cancelled_at_once_{false};
  Notification cancel_self_checked_;
  Notification watcher_done_;
};

// A thread keeps asking while the handler calls done() and the loop ends
// the call: every answer is false (nothing cancelled it), and asking after
// the call ended is safe.
TEST_F(ServerContextTest, IsCancelledFromAnotherThreadAcrossTheCallsEnd) {
  std::atomic<bool> call_over{false};
  std::atomic<int> polls_after_call{0};
  std::atomic<int> saw_cancelled{0};
  std::thread watcher([&] {
    ServerContext* context = nullptr;
    while ((context = watched_.load(std::memory_order_acquire)) == nullptr) {
    }
    // Keep asking until well after the call is over.
    while (polls_after_call.load(std::memory_order_relaxed) < 100000) {
      if (context->IsCancelled()) saw_cancelled.fetch_add(1);
      if (call_over.load(std::memory_order_acquire)) {
        polls_after_call.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  context.set_timeout(kHangTimeout);
  const Status status =
      channel_->UnaryCall(&context, kWatched, request, &response);
  call_over.store(true, std::memory_order_release);
  watcher.join();
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(saw_cancelled.load(), 0);
}

TEST_F(ServerContextTest, TryCancelMarksTheContextCancelledAtOnce) {
  SimpleRequest request;
  SimpleResponse response;
  ClientContext context;
  context.set_timeout(kHangTimeout);
  const Status status =
      channel_->UnaryCall(&context, kCancelSelf, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  // The client may see the cancel before the handler's next statement ran.
  ASSERT_TRUE(
      cancel_self_checked_.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(cancelled_at_once_.load());
}

// The client cancels a streaming call; a thread that is neither the loop
// nor a handler sees IsCancelled() turn true.
TEST_F(ServerContextTest, IsCancelledTurnsTrueForAWatchingThread) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kWatchedStream);
  ASSERT_TRUE(WaitFor([this] { return watched_.load() != nullptr; }));
  ServerContext* server_context = watched_.load();
  EXPECT_FALSE(server_context->IsCancelled());
  bool saw_cancel = false;
  std::thread watcher([&] {
    saw_cancel = WaitFor([&] { return server_context->IsCancelled(); });
    watcher_done_.Notify();
  });
  context.TryCancel();
  watcher.join();
  EXPECT_TRUE(saw_cancel);
  EXPECT_EQ(stream->Finish().code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace h2rpc
