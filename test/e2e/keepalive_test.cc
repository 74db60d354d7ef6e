// Keepalive between an h2rpc Channel and an h2rpc Server over real sockets,
// through a TCP proxy (test/util/tcp_proxy.h) that can turn into a black
// hole: a client's keepalive fails its calls on a path that stopped
// answering, a server's keepalive cancels the handlers of a client behind
// one, and a healthy path keeps an idle call open across many keepalive
// periods, its PINGs answered. Option values are short so that every test
// ends in seconds; the exact timing is checked on a fake clock in
// transport/http2/keepalive_test.cc and session_test.cc.
//
// The timing assertions hold on any machine: a call cannot fail before
// keepalive_time + keepalive_timeout have passed since the last byte the
// proxy delivered to the side that pings (that side's last read), and must
// fail within keepalive_time + keepalive_timeout of the freeze plus a slack
// for a loaded (sanitized) machine.

#include <atomic>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "test/util/tcp_proxy.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::TcpProxy;
using ::h2rpc::testing::WaitFor;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr char kHold[] = "/h2rpc.test.Keepalive/Hold";
constexpr char kEcho[] = "/h2rpc.test.Keepalive/Echo";

constexpr absl::Duration kKeepaliveTime = absl::Milliseconds(500);
constexpr absl::Duration kKeepaliveTimeout = absl::Milliseconds(500);
// On top of the option values, for a loaded (sanitized) machine; only ever
// waited for when something is wrong.
constexpr absl::Duration kSlack = absl::Seconds(10);
// The proxy's clock (absl::Now) against the transport's monotonic clock.
constexpr absl::Duration kClockTolerance = absl::Milliseconds(5);

// A server with two methods: Hold keeps each unary call until it is
// cancelled or Release() is called; Echo echoes a bidirectional stream
// until the client half-closes or the call is cancelled. Both record
// whether and when their call was cancelled.
class KeepaliveServer {
 public:
  explicit KeepaliveServer(ServerOptions options) {
    options.num_loops = 1;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kHold,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              started.Notify();
              // Polls: a synchronous unary handler has nothing to block
              // on until its cancellation.
              WaitFor([&] { return released_ || context->IsCancelled(); },
                      kHangTimeout);
              Ended(context);
              return Status();
            })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
            kEcho,
            [this](ServerContext* context,
                   ServerReaderWriter<StreamingOutputCallResponse,
                                      StreamingOutputCallRequest>* stream) {
              started.Notify();
              StreamingOutputCallRequest request;
              StreamingOutputCallResponse response;
              while (stream->Read(&request)) {
                *response.mutable_payload() = request.payload();
                if (!stream->Write(response)) break;
              }
              Ended(context);
              return Status();
            });
    status_ = server_.Start();
  }
  // Stops the server before released_ and cancelled_at_, which its handlers
  // read and write, are destroyed (they are declared after server_).
  ~KeepaliveServer() {
    released_ = true;
    server_.Stop();
  }

  bool ok() const { return server_.started(); }
  const Status& status() const { return status_; }
  int port() const { return server_.port(); }
  // Lets Hold calls return OK.
  void Release() { released_ = true; }
  // When the handler saw its cancellation; valid once `cancelled` is
  // notified.
  absl::Time cancelled_at() const { return cancelled_at_; }

  Notification started;
  Notification cancelled;
  Notification finished;

 private:
  void Ended(ServerContext* context) {
    if (context->IsCancelled()) {
      cancelled_at_ = absl::Now();
      cancelled.Notify();
    }
    finished.Notify();
  }

  StubServer server_;
  Status status_;
  std::atomic<bool> released_{false};
  absl::Time cancelled_at_;
};

// A server that accepts every client PING (no enforcement strikes), so
// that the client's short keepalive_time is not what ends a connection.
ServerOptions PermissiveServer() {
  ServerOptions options;
  options.keepalive_min_time = absl::ZeroDuration();
  options.keepalive_permit_without_calls = true;
  return options;
}

ChannelOptions KeepaliveChannel() {
  ChannelOptions options;
  options.keepalive_time = kKeepaliveTime;
  options.keepalive_timeout = kKeepaliveTimeout;
  return options;
}

// An asynchronous Hold call without a deadline, and its outcome.
class PendingCall {
 public:
  void Start(Channel& channel) {
    channel.AsyncUnaryCall(&context_, kHold, SimpleRequest(), &response_,
                           [this](const Status& status) {
                             status_ = status;
                             ended_at_ = absl::Now();
                             done.Notify();
                           });
  }
  // Valid once `done` is notified.
  const Status& status() const { return status_; }
  absl::Time ended_at() const { return ended_at_; }

  Notification done;

 private:
  ClientContext context_;
  SimpleResponse response_;
  Status status_;
  absl::Time ended_at_;
};

TEST(KeepaliveTest, AClientsKeepaliveFailsItsCallOnAPathThatStoppedAnswering) {
  KeepaliveServer server(PermissiveServer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  PendingCall call;  // outlives the channel, whose destruction ends it
  std::shared_ptr<Channel> channel =
      CreateChannel(proxy.target(), KeepaliveChannel());
  call.Start(*channel);
  ASSERT_TRUE(server.started.WaitForNotificationWithTimeout(kHangTimeout));

  proxy.Freeze();
  const absl::Time frozen_at = absl::Now();
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(
      kKeepaliveTime + kKeepaliveTimeout + kSlack))
      << "no keepalive failure within keepalive_time + keepalive_timeout of "
         "the freeze (+ slack)";
  EXPECT_EQ(call.status().code(), StatusCode::kUnavailable)
      << call.status().ToString();
  EXPECT_THAT(call.status().message(), HasSubstr("keepalive"));
  const TcpProxy::Counters counters = proxy.counters();
  // The client's last read was no earlier than the proxy's last delivery to
  // it; a PING goes out keepalive_time after it, and the connection is
  // declared dead keepalive_timeout after that.
  EXPECT_GE(call.ended_at() - counters.to_client.last_forwarded,
            kKeepaliveTime + kKeepaliveTimeout - kClockTolerance);
  EXPECT_LE(call.ended_at() - frozen_at,
            kKeepaliveTime + kKeepaliveTimeout + kSlack);
  // Not ended by the server for another reason.
  EXPECT_TRUE(counters.to_client.goaways.empty());
  EXPECT_FALSE(server.cancelled.HasBeenNotified());
}

TEST(KeepaliveTest, AClientsKeepaliveFailsAStreamOnAPathThatStoppedAnswering) {
  KeepaliveServer server(PermissiveServer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  std::shared_ptr<Channel> channel =
      CreateChannel(proxy.target(), KeepaliveChannel());
  ClientContext context;
  // Only a guard against a hang: far beyond what the test waits for.
  context.set_timeout(kHangTimeout);
  auto stream =
      channel->BidiStreamingCall<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(&context, kEcho);
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body("before");
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.payload().body(), "before");

  proxy.Freeze();
  const absl::Time frozen_at = absl::Now();
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  const absl::Time ended_at = absl::Now();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_GE(ended_at - proxy.counters().to_client.last_forwarded,
            kKeepaliveTime + kKeepaliveTimeout - kClockTolerance);
  EXPECT_LE(ended_at - frozen_at, kKeepaliveTime + kKeepaliveTimeout + kSlack);
}

TEST(KeepaliveTest,
     AServersKeepaliveCancelsTheHandlerOfAClientBehindADeadPath) {
  ServerOptions options;
  options.keepalive_time = kKeepaliveTime;
  options.keepalive_timeout = kKeepaliveTimeout;
  KeepaliveServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  PendingCall call;
  std::shared_ptr<Channel> channel =
      CreateChannel(proxy.target());  // no keepalive
  call.Start(*channel);
  ASSERT_TRUE(server.started.WaitForNotificationWithTimeout(kHangTimeout));

  proxy.Freeze();
  const absl::Time frozen_at = absl::Now();
  ASSERT_TRUE(server.cancelled.WaitForNotificationWithTimeout(
      kKeepaliveTime + kKeepaliveTimeout + kSlack))
      << "the handler saw no cancellation within keepalive_time + "
         "keepalive_timeout of the freeze (+ slack)";
  EXPECT_GE(server.cancelled_at() - proxy.counters().to_server.last_forwarded,
            kKeepaliveTime + kKeepaliveTimeout - kClockTolerance);
  EXPECT_LE(server.cancelled_at() - frozen_at,
            kKeepaliveTime + kKeepaliveTimeout + kSlack);
  EXPECT_TRUE(server.finished.WaitForNotificationWithTimeout(kHangTimeout));
  // The client has heard nothing yet; once the path works again it learns
  // that the connection is gone.
  EXPECT_FALSE(call.done.HasBeenNotified());
  proxy.Thaw();
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(call.status().code(), StatusCode::kUnavailable)
      << call.status().ToString();
}

TEST(KeepaliveTest, AServersKeepaliveCancelsAStreamOfAClientBehindADeadPath) {
  ServerOptions options;
  options.keepalive_time = kKeepaliveTime;
  options.keepalive_timeout = kKeepaliveTimeout;
  KeepaliveServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target());
  ClientContext context;
  context.set_timeout(kHangTimeout);  // a guard against a hang only
  auto stream =
      channel->BidiStreamingCall<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(&context, kEcho);
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));

  proxy.Freeze();
  const absl::Time frozen_at = absl::Now();
  ASSERT_TRUE(server.cancelled.WaitForNotificationWithTimeout(
      kKeepaliveTime + kKeepaliveTimeout + kSlack));
  EXPECT_GE(server.cancelled_at() - proxy.counters().to_server.last_forwarded,
            kKeepaliveTime + kKeepaliveTimeout - kClockTolerance);
  EXPECT_LE(server.cancelled_at() - frozen_at,
            kKeepaliveTime + kKeepaliveTimeout + kSlack);
  proxy.Thaw();
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_THAT(stream->Finish().code(),
              AnyOf(StatusCode::kUnavailable, StatusCode::kCancelled));
}

TEST(KeepaliveTest, AHealthyPathKeepsAnIdleCallOpenAcrossManyKeepalivePeriods) {
  KeepaliveServer server(PermissiveServer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  PendingCall call;
  ChannelOptions options = KeepaliveChannel();
  options.keepalive_time = absl::Milliseconds(200);
  // Far longer than keepalive_time: each PING must still come
  // keepalive_time after the last ACK, not keepalive_timeout after the
  // last PING.
  options.keepalive_timeout = absl::Seconds(20);
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target(), options);
  const absl::Time start = absl::Now();
  call.Start(*channel);
  ASSERT_TRUE(server.started.WaitForNotificationWithTimeout(kHangTimeout));

  // The call sends nothing more: every frame from here on is keepalive.
  constexpr int kPings = 6;
  ASSERT_TRUE(proxy.WaitUntil(
      [&](const TcpProxy::Counters& c) {
        return c.to_server.pings >= kPings && c.to_client.ping_acks >= kPings;
      },
      kPings * (options.keepalive_time + absl::Milliseconds(100)) + kSlack))
      << proxy.counters().ToString();
  // At most one PING per keepalive_time (each waits that long after the
  // last ACK).
  EXPECT_GE(absl::Now() - start,
            kPings * options.keepalive_time - kClockTolerance);
  const TcpProxy::Counters counters = proxy.counters();
  EXPECT_FALSE(call.done.HasBeenNotified());
  EXPECT_FALSE(server.cancelled.HasBeenNotified());
  EXPECT_EQ(counters.accepted, 1);
  EXPECT_EQ(counters.open, 1);
  EXPECT_TRUE(counters.to_client.goaways.empty());

  server.Release();
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(call.status().ok()) << call.status().ToString();
  EXPECT_EQ(proxy.counters().accepted, 1);
}

TEST(KeepaliveTest, PermitWithoutCallsPingsAConnectionWithoutCalls) {
  KeepaliveServer server(PermissiveServer());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  ChannelOptions options = KeepaliveChannel();
  options.keepalive_time = absl::Milliseconds(200);
  options.keepalive_permit_without_calls = true;
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target(), options);
  ASSERT_TRUE(channel->WaitForConnected(absl::Now() + kHangTimeout));
  constexpr int kPings = 3;
  ASSERT_TRUE(proxy.WaitUntil(
      [&](const TcpProxy::Counters& c) {
        return c.to_server.pings >= kPings && c.to_client.ping_acks >= kPings;
      },
      kPings * (options.keepalive_time + absl::Milliseconds(100)) + kSlack))
      << proxy.counters().ToString();
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);
  EXPECT_EQ(proxy.counters().accepted, 1);
  EXPECT_TRUE(proxy.counters().to_client.goaways.empty());

  // A dead path is detected without a call too: the channel drops the
  // connection and goes IDLE.
  proxy.Freeze();
  EXPECT_TRUE(WaitFor(
      [&] { return channel->GetState(false) != ConnectivityState::kReady; },
      options.keepalive_time + options.keepalive_timeout + kSlack));
}

}  // namespace
}  // namespace h2rpc
