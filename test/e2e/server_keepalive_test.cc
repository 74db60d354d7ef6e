// A server's connection management over real sockets, against a raw
// nghttp2 client (test/util/raw_h2_client.h) that answers PINGs only while
// the test drives it: keepalive PINGs that free the calls of a client that
// stopped answering, max_connection_idle and max_connection_age with their
// graceful GOAWAYs, PING enforcement, and the options' validation. Option
// values are short so that every test ends in seconds; the exact timing is
// checked on a fake clock in transport/http2/session_test.cc.

#include <nghttp2/nghttp2.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/raw_frames.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kClientPreface;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::RawBytesResult;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::SendRawBytes;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;

constexpr char kHold[] = "/h2rpc.test.Keepalive/Hold";

// Slack for a loaded (sanitized) machine on top of the option values; the
// tests only ever wait this long when something is wrong.
constexpr absl::Duration kSlack = absl::Seconds(10);

// A server whose one method holds each call until the call is cancelled,
// recording when that happened.
class HoldServer {
 public:
  explicit HoldServer(const ServerOptions& options) {
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kHold, [this](ServerContext* context, const SimpleRequest&,
                          SimpleResponse*) {
              started_at_ = absl::Now();
              started.Notify();
              const bool seen =
                  WaitFor([&] { return released_ || context->IsCancelled(); },
                          kHangTimeout);
              if (seen && context->IsCancelled()) {
                cancelled_after_ = absl::Now() - started_at_;
                cancelled.Notify();
              }
              finished.Notify();
              return Status();
            });
    status_ = server_.Start();
  }
  // Stops the server before the members its handler reads and writes
  // (declared after server_) are destroyed.
  ~HoldServer() {
    released_ = true;
    server_.Stop();
  }

  bool ok() const { return server_.started(); }
  const Status& status() const { return status_; }
  int port() const { return server_.port(); }
  // From the handler's start to its seeing the cancellation; valid once
  // `cancelled` is notified.
  absl::Duration cancelled_after() const { return cancelled_after_; }

  Notification started;
  Notification cancelled;
  Notification finished;

 private:
  StubServer server_;
  Status status_;
  std::atomic<bool> released_{false};
  absl::Time started_at_;
  absl::Duration cancelled_after_;
};

RawRequest HoldRequest(int port) {
  RawRequest request;
  request.headers = GrpcRequestHeaders(kHold, port);
  request.body = GrpcFrame(SimpleRequest().SerializeAsString());
  return request;
}

ServerOptions KeepaliveOptions() {
  ServerOptions options;
  options.num_loops = 1;
  options.keepalive_time = absl::Milliseconds(300);
  options.keepalive_timeout = absl::Milliseconds(300);
  return options;
}

TEST(ServerKeepaliveTest, ACallOfAClientThatStopsAnsweringIsCancelled) {
  const ServerOptions options = KeepaliveOptions();
  HoldServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(server.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  ASSERT_GT(client->Start(HoldRequest(server.port())), 0);
  ASSERT_TRUE(client->RunUntil([&] { return server.started.HasBeenNotified(); },
                               kHangTimeout))
      << client->error();
  // From here on the client neither reads nor writes: the server's PING,
  // `keepalive_time` after the request, is never answered.
  ASSERT_TRUE(server.cancelled.WaitForNotificationWithTimeout(
      options.keepalive_time + options.keepalive_timeout + kSlack));
  EXPECT_GE(server.cancelled_after(), options.keepalive_time);
  EXPECT_TRUE(server.finished.WaitForNotificationWithTimeout(kHangTimeout));
  // The connection is gone: what the client reads now is the end.
  EXPECT_TRUE(client->RunUntil([&] { return client->closed(); }, kHangTimeout));
}

TEST(ServerKeepaliveTest, AClientThatAnswersKeepsItsCalls) {
  const ServerOptions options = KeepaliveOptions();
  HoldServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(server.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  ASSERT_GT(client->Start(HoldRequest(server.port())), 0);
  // Three keepalive periods, the client answering every PING.
  const absl::Duration period =
      options.keepalive_time + options.keepalive_timeout;
  EXPECT_FALSE(client->RunUntil([] { return false; }, 3 * period));
  EXPECT_FALSE(client->closed()) << client->error();
  EXPECT_TRUE(server.started.HasBeenNotified());
  EXPECT_FALSE(server.cancelled.HasBeenNotified());
}

TEST(ServerKeepaliveTest, AnIdleConnectionIsShutDownGracefully) {
  ServerOptions options;
  options.max_connection_idle = absl::Milliseconds(200);
  HoldServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string error;
  const absl::Time start = absl::Now();
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(server.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  // nghttp2 ends a client session without streams at the first GOAWAY
  // (after answering the PING that follows it).
  EXPECT_TRUE(client->RunUntil([&] { return client->closed(); },
                               options.max_connection_idle + kSlack))
      << client->error();
  EXPECT_GE(absl::Now() - start, options.max_connection_idle);
  const RawResponse connection = client->Response(0);
  EXPECT_TRUE(connection.goaway_received);
  EXPECT_EQ(connection.goaway_error_code, NGHTTP2_NO_ERROR);
}

TEST(ServerKeepaliveTest,
     AnIdleConnectionGetsBothGoAwaysThenACloseEvenUnanswered) {
  ServerOptions options;
  options.max_connection_idle = absl::Milliseconds(200);
  // The bound on the wait for the PING's ACK.
  options.keepalive_timeout = absl::Milliseconds(200);
  HoldServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  // Raw bytes: this client never answers the PING.
  const RawBytesResult result = SendRawBytes(
      server.port(),
      absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                   EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "")),
      options.max_connection_idle + options.keepalive_timeout + kSlack);
  ASSERT_TRUE(result.connected);
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.closed_by_peer);
  // GOAWAY(2^31-1), PING, GOAWAY(0), all NO_ERROR.
  std::vector<std::string> goaways;
  bool ping_between = false;
  for (const RawFrame& frame : result.frames) {
    if (frame.type == NGHTTP2_GOAWAY) goaways.push_back(frame.payload);
    if (frame.type == NGHTTP2_PING && !(frame.flags & NGHTTP2_FLAG_ACK)) {
      ping_between = goaways.size() == 1;
    }
  }
  ASSERT_EQ(goaways.size(), 2u);
  EXPECT_EQ(goaways[0].substr(0, 8),
            std::string("\x7f\xff\xff\xff\0\0\0\0", 8));
  EXPECT_EQ(goaways[1].substr(0, 8), std::string(8, '\0'));
  EXPECT_TRUE(ping_between);
}

TEST(ServerKeepaliveTest, MaxConnectionAgeServesTheCallsInFlightThenCancels) {
  ServerOptions options;
  options.num_loops = 1;
  options.max_connection_age = absl::Milliseconds(300);
  options.max_connection_age_grace = absl::Milliseconds(300);
  HoldServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string error;
  std::unique_ptr<RawH2Client> client =
      RawH2Client::Connect(server.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  const int32_t stream = client->Start(HoldRequest(server.port()));
  ASSERT_GT(stream, 0);
  ASSERT_TRUE(client->RunUntil([&] { return client->goaway_received(); },
                               options.max_connection_age * 1.1 + kSlack))
      << client->error();
  EXPECT_TRUE(server.started.HasBeenNotified());
  // The call survives the GOAWAYs, and is cancelled when the grace ends.
  EXPECT_TRUE(client->RunUntil([&] { return client->closed(); },
                               options.max_connection_age_grace + kSlack))
      << client->error();
  EXPECT_TRUE(server.cancelled.WaitForNotificationWithTimeout(kHangTimeout));
  const RawResponse response = client->Response(stream);
  EXPECT_EQ(response.goaway_error_code, NGHTTP2_NO_ERROR);
  EXPECT_EQ(response.goaway_last_stream_id, stream);
}

TEST(ServerKeepaliveTest, TooManyPingsEndTheConnectionWithEnhanceYourCalm) {
  ServerOptions options;
  options.keepalive_min_time = absl::Minutes(5);
  options.max_ping_strikes = 2;
  HoldServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  // Four PINGs at once on a connection without calls: the first is free,
  // the next three are strikes, one more than max_ping_strikes.
  std::string bytes =
      absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                   EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  for (int i = 0; i < 4; ++i) {
    bytes += EncodeFrame(NGHTTP2_PING, 0, 0, "pingping");
  }
  const RawBytesResult result =
      SendRawBytes(server.port(), bytes, kHangTimeout);
  ASSERT_TRUE(result.connected);
  EXPECT_TRUE(result.closed_by_peer);
  const RawFrame* goaway = nullptr;
  for (const RawFrame& frame : result.frames) {
    if (frame.type == NGHTTP2_GOAWAY) goaway = &frame;
  }
  ASSERT_NE(goaway, nullptr);
  ASSERT_GE(goaway->payload.size(), 8u);
  EXPECT_EQ(goaway->payload.substr(4, 4),
            std::string("\0\0\0\x0b", 4));  // ENHANCE_YOUR_CALM
  EXPECT_EQ(goaway->payload.substr(8), "too_many_pings");
}

TEST(ServerKeepaliveTest, OptionsOutOfRangeAreRefusedNamingTheOption) {
  struct Case {
    std::function<void(ServerOptions*)> set;
    const char* message;
  };
  const Case cases[] = {
      {[](ServerOptions* o) { o->keepalive_time = absl::ZeroDuration(); },
       "ServerOptions::keepalive_time is 0; it must be more than zero"},
      {[](ServerOptions* o) { o->keepalive_timeout = absl::ZeroDuration(); },
       "ServerOptions::keepalive_timeout is 0; it must be more than zero"},
      {[](ServerOptions* o) { o->keepalive_timeout = -absl::Seconds(1); },
       "ServerOptions::keepalive_timeout is -1s"},
      {[](ServerOptions* o) { o->keepalive_min_time = -absl::Seconds(1); },
       "ServerOptions::keepalive_min_time is -1s; it must be at least zero"},
      {[](ServerOptions* o) { o->max_ping_strikes = -1; },
       "ServerOptions::max_ping_strikes is -1"},
      {[](ServerOptions* o) { o->max_connection_idle = absl::ZeroDuration(); },
       "ServerOptions::max_connection_idle is 0"},
      {[](ServerOptions* o) { o->max_connection_age = -absl::Seconds(2); },
       "ServerOptions::max_connection_age is -2s"},
      {[](ServerOptions* o) {
         o->max_connection_age_grace = -absl::Seconds(3);
       },
       "ServerOptions::max_connection_age_grace is -3s"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    ServerOptions options;
    c.set(&options);
    StubServer server;
    server.builder().SetOptions(options);
    const Status status = server.Start();
    EXPECT_FALSE(server.started());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
  // The edges that are allowed.
  ServerOptions edges;
  edges.keepalive_min_time = absl::ZeroDuration();
  edges.max_ping_strikes = 0;
  edges.max_connection_age_grace = absl::ZeroDuration();
  edges.keepalive_time = absl::InfiniteDuration();
  StubServer server;
  server.builder().SetOptions(edges);
  const Status status = server.Start();
  EXPECT_TRUE(server.started()) << status.ToString();
}

}  // namespace
}  // namespace h2rpc
