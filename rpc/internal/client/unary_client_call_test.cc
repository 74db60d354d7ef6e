// The pooled client call (rpc/internal/client/unary_client_call.h) against
// stale events meant for the call it served before: a call cancelled while its
// request waits in nghttp2's queue for a stream slot is completed at once, but
// nghttp2 still holds the request and reports its stream closed once a slot
// frees up; and a TryCancel on a context whose call has ended, racing that
// end or made later. By then the call object serves the next call, which
// must receive neither.
#include "rpc/internal/client/unary_client_call.h"

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
#include "test/util/client_call_peer.h"
#include "test/util/notification.h"

namespace h2rpc::internal {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::ClientCallPeer;
using ::h2rpc::testing::Notification;

constexpr absl::Duration kHangTimeout = absl::Seconds(30);
constexpr char kBlock[] = "/h2rpc.test.Client/Block";
constexpr char kEcho[] = "/h2rpc.test.Client/Echo";

// Returns once `channel`'s loop has run every task posted before the call:
// an asynchronous call that cannot start completes on a task posted after
// them (the loop runs posted tasks in order).
void RunPostedTasks(Channel* channel) {
  ClientContext past;
  past.set_deadline(absl::Now() - absl::Seconds(1));
  SimpleRequest request;
  SimpleResponse response;
  Notification done;
  channel->AsyncUnaryCall(&past, kEcho, request, &response,
                          [&](const Status&) { done.Notify(); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout));
}

TEST(UnaryClientCallTest, AQueuedRequestCancelledNeverReachesTheNextCall) {
  Notification entered;
  Notification release;
  ServerOptions options;
  // One stream at a time: a second request waits in the client's queue.
  options.connection.max_concurrent_streams = 1;
  int port = 0;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .SetOptions(options)
          .AddListeningPort("127.0.0.1:0", &port)
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              kBlock,
              [&](ServerContext*, const SimpleRequest&, SimpleResponse*) {
                entered.Notify();
                release.WaitForNotification();
                return Status();
              })
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              kEcho,
              [](ServerContext*, const SimpleRequest& request,
                 SimpleResponse* response) {
                response->mutable_payload()->set_body(request.payload().body());
                return Status();
              })
          .BuildAndStart(&status);
  ASSERT_TRUE(status.ok()) << status.ToString();
  std::shared_ptr<Channel> channel =
      CreateChannel("127.0.0.1:" + std::to_string(port));

  // A takes the only stream slot.
  Status status_a;
  std::thread call_a([&] {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    SimpleResponse response;
    status_a = channel->UnaryCall(&context, kBlock, request, &response);
  });
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(kHangTimeout));

  // B waits for a slot and is cancelled there: it ends at once.
  {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    SimpleResponse response;
    Notification done;
    Status status_b;
    channel->AsyncUnaryCall(&context, kEcho, request, &response,
                            [&](const Status& s) {
                              status_b = s;
                              done.Notify();
                            });
    context.TryCancel();
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout));
    EXPECT_EQ(status_b.code(), StatusCode::kCancelled) << status_b.ToString();
  }
  // B's call object is back in the channel's pool (its cancel task, which
  // held it, has finished), the last one returned.
  RunPostedTasks(channel.get());

  // C reuses B's pooled call object and waits for a slot too, behind B's
  // request, which nghttp2 still holds.
  ClientContext context_c;
  context_c.set_timeout(kHangTimeout);
  SimpleRequest request_c;
  request_c.mutable_payload()->set_body("c");
  SimpleResponse response_c;
  Notification done_c;
  Status status_c;
  channel->AsyncUnaryCall(&context_c, kEcho, request_c, &response_c,
                          [&](const Status& s) {
                            status_c = s;
                            done_c.Notify();
                          });
  // C's request is in nghttp2's queue.
  RunPostedTasks(channel.get());
  EXPECT_TRUE(ClientCallPeer::CallBound(&context_c));

  // A ends and frees the slot: nghttp2 takes B's cancelled request off its
  // queue (reporting its stream closed), then sends C's.
  release.Notify();
  call_a.join();
  EXPECT_TRUE(status_a.ok()) << status_a.ToString();
  ASSERT_TRUE(done_c.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(status_c.ok())
      << "B's stale close reached C: " << status_c.ToString();
  EXPECT_EQ(response_c.payload().body(), "c");
}

// Starts a server with an Echo method on `*port`.
std::unique_ptr<Server> StartEchoServer(int* port) {
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .AddListeningPort("127.0.0.1:0", port)
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              kEcho,
              [](ServerContext*, const SimpleRequest& request,
                 SimpleResponse* response) {
                response->mutable_payload()->set_body(request.payload().body());
                return Status();
              })
          .BuildAndStart(&status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return server;
}

// Another thread cancels call A without pause while A ends and after; each
// next call on the thread that made A reuses A's pooled call object (unless
// an accepted cancel still holds it) and must succeed.
TEST(UnaryClientCallTest, ACancelRacingOrAfterTheEndNeverReachesTheNextCall) {
  int port = 0;
  std::unique_ptr<Server> server = StartEchoServer(&port);
  ASSERT_NE(server, nullptr);
  std::shared_ptr<Channel> channel =
      CreateChannel("127.0.0.1:" + std::to_string(port));
  for (int i = 0; i < 100; ++i) {
    ClientContext context_a;
    context_a.set_timeout(kHangTimeout);
    std::atomic<bool> stop{false};
    std::thread canceller([&] {
      while (!stop.load()) context_a.TryCancel();
    });
    SimpleRequest request;
    SimpleResponse response;
    const Status status_a =
        channel->UnaryCall(&context_a, kEcho, request, &response);
    EXPECT_TRUE(status_a.ok() || status_a.code() == StatusCode::kCancelled)
        << status_a.ToString();
    for (int next = 0; next < 3; ++next) {
      ClientContext context;
      context.set_timeout(kHangTimeout);
      request.mutable_payload()->set_body(std::to_string(next));
      const Status status =
          channel->UnaryCall(&context, kEcho, request, &response);
      EXPECT_TRUE(status.ok())
          << "a cancel for call A reached a later call: " << status.ToString();
      EXPECT_EQ(response.payload().body(), std::to_string(next));
    }
    stop.store(true);
    canceller.join();
  }
}

// A TryCancel made once a context's call is over does nothing, even to a
// call the same context is used for afterwards.
TEST(UnaryClientCallTest, ATryCancelAfterTheCallEndedDoesNothing) {
  int port = 0;
  std::unique_ptr<Server> server = StartEchoServer(&port);
  ASSERT_NE(server, nullptr);
  std::shared_ptr<Channel> channel =
      CreateChannel("127.0.0.1:" + std::to_string(port));
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  SimpleResponse response;
  ASSERT_TRUE(channel->UnaryCall(&context, kEcho, request, &response).ok());
  context.TryCancel();
  request.mutable_payload()->set_body("again");
  const Status status = channel->UnaryCall(&context, kEcho, request, &response);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "again");
}

}  // namespace
}  // namespace h2rpc::internal
