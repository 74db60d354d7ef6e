// Keepalive and PING enforcement between h2rpc and stock gRPC C++ 1.51, both
// in this process, through a TCP proxy (test/util/tcp_proxy.h) that counts
// the PINGs, their ACKs and the GOAWAYs on the wire:
//   - an h2rpc Channel pinging a gRPC C++ server with default enforcement
//     (a PING per 5 minutes, 2 strikes) is told GOAWAY ENHANCE_YOUR_CALM
//     "too_many_pings", its call fails with UNAVAILABLE, and the channel
//     doubles its keepalive_time for its next connections;
//   - with the server's enforcement relaxed to the client's keepalive_time
//     (or pings permitted without calls) the connection is kept across many
//     keepalive periods;
//   - a gRPC C++ client pinging an h2rpc Server too often is told the same
//     by h2rpc's default enforcement, and its call fails with UNAVAILABLE.
// gRPC's rule does not depend on the keepalive time as long as it is below
// the server's minimum interval (5 minutes), so the h2rpc client pings every
// 200 ms rather than the 10 s of the issue; gRPC C++ clients send at most
// one PING per second with calls open.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/internal/channel_core_access.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/tcp_proxy.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::TcpProxy;
using ::h2rpc::testing::WaitFor;

constexpr char kFullDuplexCall[] = "/grpc.testing.TestService/FullDuplexCall";
constexpr uint32_t kEnhanceYourCalm = 0xb;
// On top of the expected times, for a loaded (sanitized) machine; only
// ever waited for when something is wrong.
constexpr absl::Duration kSlack = absl::Seconds(10);
// The h2rpc client's keepalive_time against the gRPC C++ server.
constexpr absl::Duration kKeepaliveTime = absl::Milliseconds(200);

// Whether the counters show GOAWAY ENHANCE_YOUR_CALM "too_many_pings" sent
// to the client.
bool ToldTooManyPings(const TcpProxy::Counters& counters) {
  for (const TcpProxy::GoAway& goaway : counters.to_client.goaways) {
    if (goaway.error_code == kEnhanceYourCalm &&
        goaway.debug_data == "too_many_pings") {
      return true;
    }
  }
  return false;
}

absl::Duration KeepaliveTime(Channel& channel) {
  return internal::ChannelCoreAccess::Core(channel).keepalive_time();
}

// TestService on gRPC C++: FullDuplexCall echoes until the client
// half-closes or the call ends.
class GrpcppEchoService final : public grpc::testing::TestService::Service {
 public:
  grpc::Status FullDuplexCall(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse,
                               StreamingOutputCallRequest>* stream) override {
    StreamingOutputCallRequest request;
    StreamingOutputCallResponse response;
    while (stream->Read(&request)) {
      *response.mutable_payload() = request.payload();
      if (!stream->Write(response)) break;
    }
    if (context->IsCancelled()) ++cancelled;
    return grpc::Status::OK;
  }

  // Calls that ended cancelled.
  std::atomic<int> cancelled{0};
};

// A gRPC C++ server on 127.0.0.1 with `args` as channel arguments
// (GRPC_ARG_... names and int values).
class GrpcppServer {
 public:
  explicit GrpcppServer(
      std::initializer_list<std::pair<const char*, int>> args = {}) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    for (const auto& [name, value] : args) {
      builder.AddChannelArgument(name, value);
    }
    builder.RegisterService(&service);
    server_ = builder.BuildAndStart();
  }
  ~GrpcppServer() {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now());
    }
  }

  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }

  GrpcppEchoService service;

 private:
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

using H2rpcStream =
    ClientReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>;

// Opens FullDuplexCall on `channel` and makes one round trip, so that the
// call is established before the test waits.
std::unique_ptr<H2rpcStream> OpenStream(Channel& channel,
                                        ClientContext* context) {
  auto stream = channel.BidiStreamingCall<StreamingOutputCallRequest,
                                          StreamingOutputCallResponse>(
      context, kFullDuplexCall);
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body("hello");
  StreamingOutputCallResponse response;
  if (!stream->Write(request) || !stream->Read(&response)) return nullptr;
  return stream;
}

ChannelOptions KeepaliveChannel() {
  ChannelOptions options;
  options.keepalive_time = kKeepaliveTime;
  // keepalive_timeout stays at its default (20 s), far longer than
  // keepalive_time: PINGs must still come keepalive_time after the last
  // ACK, not keepalive_timeout after the last PING.
  return options;
}

TEST(GrpcppKeepaliveTest, DefaultEnforcementSaysTooManyPingsAndTheTimeDoubles) {
  GrpcppServer server;
  ASSERT_TRUE(server.ok());
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  std::shared_ptr<Channel> channel =
      CreateChannel(proxy.target(), KeepaliveChannel());

  for (int connection = 0; connection < 2; ++connection) {
    SCOPED_TRACE(connection);
    const absl::Duration keepalive_time = KeepaliveTime(*channel);
    EXPECT_EQ(keepalive_time, kKeepaliveTime * (1 << connection));
    ClientContext context;
    context.set_timeout(kHangTimeout);  // a guard against a hang only
    std::unique_ptr<H2rpcStream> stream = OpenStream(*channel, &context);
    ASSERT_NE(stream, nullptr);
    // The first PING is free, the next two are strikes, the third strike is
    // one too many: four PINGs, keepalive_time apart.
    ASSERT_TRUE(proxy.WaitUntil(
        [&](const TcpProxy::Counters& c) {
          return static_cast<int>(c.to_client.goaways.size()) > connection &&
                 ToldTooManyPings(c);
        },
        4 * (keepalive_time + absl::Milliseconds(100)) + kSlack))
        << proxy.counters().ToString();
    const TcpProxy::GoAway goaway = proxy.counters().to_client.goaways.back();
    EXPECT_EQ(goaway.connection, connection);
    EXPECT_EQ(goaway.error_code, kEnhanceYourCalm);
    EXPECT_EQ(goaway.debug_data, "too_many_pings");
    EXPECT_GE(proxy.counters().to_server.pings, 4 * (connection + 1));

    // The call ends with the connection.
    StreamingOutputCallResponse response;
    EXPECT_FALSE(stream->Read(&response));
    const Status status = stream->Finish();
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
    EXPECT_TRUE(WaitFor(
        [&] { return server.service.cancelled.load() == connection + 1; }));
    // And the channel pings half as often on its next connection.
    EXPECT_EQ(KeepaliveTime(*channel), 2 * keepalive_time);
  }
  EXPECT_EQ(proxy.counters().accepted, 2);
}

TEST(GrpcppKeepaliveTest, RelaxedEnforcementKeepsTheConnection) {
  // PINGs may come every 100 ms (half the client's keepalive_time); the
  // default two strikes stay, so a client pinging sooner would be told off.
  GrpcppServer server(
      {{GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
        static_cast<int>(absl::ToInt64Milliseconds(kKeepaliveTime / 2))}});
  ASSERT_TRUE(server.ok());
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  std::shared_ptr<Channel> channel =
      CreateChannel(proxy.target(), KeepaliveChannel());
  ClientContext context;
  context.set_timeout(kHangTimeout);  // a guard against a hang only
  std::unique_ptr<H2rpcStream> stream = OpenStream(*channel, &context);
  ASSERT_NE(stream, nullptr);

  constexpr int kPings = 8;
  ASSERT_TRUE(proxy.WaitUntil(
      [&](const TcpProxy::Counters& c) {
        return c.to_server.pings >= kPings && c.to_client.ping_acks >= kPings;
      },
      kPings * (kKeepaliveTime + absl::Milliseconds(100)) + kSlack))
      << proxy.counters().ToString();
  const TcpProxy::Counters counters = proxy.counters();
  EXPECT_TRUE(counters.to_client.goaways.empty());
  EXPECT_EQ(counters.accepted, 1);
  EXPECT_EQ(counters.open, 1);
  EXPECT_EQ(KeepaliveTime(*channel), kKeepaliveTime);

  // The call still works, and ends well.
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body("still here");
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.payload().body(), "still here");
  EXPECT_TRUE(stream->WritesDone());
  const Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(server.service.cancelled.load(), 0);
}

TEST(GrpcppKeepaliveTest, PermittedPingsWithoutCallsKeepAnIdleConnection) {
  GrpcppServer server(
      {{GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1},
       {GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
        static_cast<int>(absl::ToInt64Milliseconds(kKeepaliveTime / 2))}});
  ASSERT_TRUE(server.ok());
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  ChannelOptions options = KeepaliveChannel();
  options.keepalive_permit_without_calls = true;
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target(), options);
  ASSERT_TRUE(channel->WaitForConnected(absl::Now() + kHangTimeout));

  constexpr int kPings = 6;
  ASSERT_TRUE(proxy.WaitUntil(
      [&](const TcpProxy::Counters& c) {
        return c.to_server.pings >= kPings && c.to_client.ping_acks >= kPings;
      },
      kPings * (kKeepaliveTime + absl::Milliseconds(100)) + kSlack))
      << proxy.counters().ToString();
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);
  EXPECT_TRUE(proxy.counters().to_client.goaways.empty());
  EXPECT_EQ(proxy.counters().accepted, 1);
}

// An h2rpc Server (default enforcement: a PING per 5 minutes, 2 strikes)
// with FullDuplexCall as an echo.
class H2rpcEchoServer {
 public:
  H2rpcEchoServer() {
    server_ =
        Server::Builder()
            .AddListeningPort("127.0.0.1:0", &port_)
            .RegisterBidiStreaming<StreamingOutputCallRequest,
                                   StreamingOutputCallResponse>(
                kFullDuplexCall,
                [this](ServerContext* context,
                       ServerReaderWriter<StreamingOutputCallResponse,
                                          StreamingOutputCallRequest>* stream) {
                  StreamingOutputCallRequest request;
                  StreamingOutputCallResponse response;
                  while (stream->Read(&request)) {
                    *response.mutable_payload() = request.payload();
                    if (!stream->Write(response)) break;
                  }
                  if (context->IsCancelled()) cancelled.Notify();
                  return Status();
                })
            .BuildAndStart(&status_);
  }
  ~H2rpcEchoServer() {
    if (server_ != nullptr) server_->Shutdown(absl::Now());
  }

  bool ok() const { return server_ != nullptr; }
  const Status& status() const { return status_; }
  int port() const { return port_; }

  Notification cancelled;

 private:
  std::unique_ptr<Server> server_;
  Status status_;
  int port_ = 0;
};

TEST(GrpcppKeepaliveTest, AGrpcppClientPingingTooOftenIsToldTooManyPings) {
  H2rpcEchoServer server;
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 100);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      proxy.target(), grpc::InsecureChannelCredentials(), args);
  grpc::testing::TestService::Stub stub(channel);
  grpc::ClientContext context;
  // A guard against a hang only.
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoSeconds(kHangTimeout));
  auto stream = stub.FullDuplexCall(&context);
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body("hello");
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  // A synchronous gRPC C++ client moves bytes only while a thread waits in
  // one of its calls (else only its backup poller does, every 5 s): a
  // thread waits in Read() until the call ends.
  std::atomic<bool> read_more{true};
  std::thread reader([&] { read_more = stream->Read(&response); });

  // gRPC C++ pings at most once a second with a call open: four PINGs.
  const bool told = proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return ToldTooManyPings(c); },
      4 * absl::Seconds(1) + kSlack);
  if (!told) context.TryCancel();  // ends the Read
  reader.join();
  ASSERT_TRUE(told) << proxy.counters().ToString();
  EXPECT_GE(proxy.counters().to_server.pings, 4);
  // The call ends with the connection, on both sides.
  EXPECT_FALSE(read_more.load());
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
  EXPECT_TRUE(server.cancelled.WaitForNotificationWithTimeout(kHangTimeout));
}

}  // namespace
}  // namespace h2rpc
