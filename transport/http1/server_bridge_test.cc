#include "transport/http1/server_bridge.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/server_session.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http1 {
namespace {

using http2::testing::EchoDispatcher;
using http2::testing::MemoryWire;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string GrpcFrame(absl::string_view message) {
  std::string frame(5, '\0');
  frame[1] = static_cast<char>(message.size() >> 24);
  frame[2] = static_cast<char>(message.size() >> 16);
  frame[3] = static_cast<char>(message.size() >> 8);
  frame[4] = static_cast<char>(message.size());
  frame.append(message.data(), message.size());
  return frame;
}

// A gRPC-Web request for the echo dispatcher's `method`.
std::string GrpcWebRequest(absl::string_view method, absl::string_view body) {
  return absl::StrCat("POST /test.Echo/", method,
                      " HTTP/1.1\r\nHost: h\r\n"
                      "Content-Type: application/grpc-web+proto\r\n"
                      "Content-Length: ",
                      body.size(), "\r\n\r\n", body);
}

class ServerBridgeTest : public ::testing::Test {
 protected:
  ServerBridgeTest() {
    options_.web.grpc_web = true;
    options_.web.http1.max_buffered_input = 1024;
  }

  void Start() {
    session_ = std::make_unique<http2::ServerSession>(
        &scheduler_, "peer", options_, &quota_, &dispatcher_, &dispatcher_);
    bridge_ = std::make_unique<ServerBridge>(&scheduler_, options_.web.http1,
                                             /*secure=*/false);
    bridge_->Attach(session_.get());
    wire_ = std::make_unique<MemoryWire>(bridge_.get());
    wire_->Start();
  }

  io::FakeScheduler scheduler_;
  http2::ConnectionOptions options_;
  MemoryQuota quota_{64 << 20};
  EchoDispatcher dispatcher_;
  std::unique_ptr<http2::ServerSession> session_;
  std::unique_ptr<ServerBridge> bridge_;
  std::unique_ptr<MemoryWire> wire_;
};

TEST_F(ServerBridgeTest, TheHttp2PrefacePassesThrough) {
  Start();
  // Nothing goes out before the first bytes tell the protocol.
  EXPECT_EQ(wire_->TakeOutput(), "");
  wire_->Feed("PRI * HTTP/2.0\r\n\r\nSM");
  EXPECT_EQ(wire_->TakeOutput(), "");
  wire_->Feed("\r\n\r\n");
  // The server session's SETTINGS: a 9-byte frame header, type 4.
  const std::string output = wire_->TakeOutput();
  ASSERT_GE(output.size(), 9u);
  EXPECT_EQ(output[3], 4);
  EXPECT_FALSE(bridge_->serves_http1());
}

TEST_F(ServerBridgeTest, AnHttp1RequestIsAnsweredAsHttp1) {
  Start();
  wire_->Feed(GrpcWebRequest("Echo", GrpcFrame("hello")));
  EXPECT_TRUE(bridge_->serves_http1());
  const std::string output = wire_->TakeOutput();
  EXPECT_THAT(output, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(output, HasSubstr("content-type: application/grpc-web+proto"));
  EXPECT_THAT(output, HasSubstr("transfer-encoding: chunked\r\n"));
  EXPECT_THAT(output, HasSubstr("hello"));
  EXPECT_THAT(output, HasSubstr("grpc-status:0"));
  EXPECT_TRUE(absl::EndsWith(output, "\r\n0\r\n\r\n")) << output;
}

TEST_F(ServerBridgeTest, PipelinedInputPastTheBoundStopsReading) {
  Start();
  // The first call is held; the second request waits behind it.
  wire_->Feed(GrpcWebRequest("Hold", GrpcFrame("first")));
  EXPECT_TRUE(bridge_->WantsInput());
  wire_->Feed(GrpcWebRequest("Echo", GrpcFrame(std::string(2000, 's'))));
  EXPECT_FALSE(bridge_->WantsInput());
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  wire_->TakeOutput();
  dispatcher_.calls[0]->Finish(Status());
  // The answer to the first goes out, then the second is served.
  const std::string output = wire_->TakeOutput();
  EXPECT_TRUE(bridge_->WantsInput());
  EXPECT_TRUE(wire_->flush_requested());
  EXPECT_EQ(dispatcher_.calls.size(), 2u);
  const size_t first = output.find("HTTP/1.1 200");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(output.find("HTTP/1.1 200", first + 1), std::string::npos);
  EXPECT_THAT(output, HasSubstr(std::string(2000, 's')));
}

TEST_F(ServerBridgeTest, AnAnswerWaitsInAWindowUntilTheSocketTakesIt) {
  Start();
  const std::string large(1 << 20, 'L');
  wire_->Feed(GrpcWebRequest("Echo", GrpcFrame(large)));
  // Nothing taken yet: the bridge holds at most its window of the answer.
  const size_t pending = bridge_->PendingOutput().size();
  EXPECT_GT(pending, 0u);
  EXPECT_LT(pending, 300u * 1024);
  // Taken as a socket would, the whole answer arrives.
  std::string output;
  for (int i = 0; i < 100; ++i) {
    const std::string piece = wire_->TakeOutput();
    if (piece.empty()) break;
    output += piece;
  }
  EXPECT_THAT(output, HasSubstr("grpc-status:0"));
  EXPECT_GT(output.size(), large.size());
}

TEST_F(ServerBridgeTest, ASlowHeadIsAnswered408AtTheHeaderTimeout) {
  Start();
  wire_->Feed("POST /test.Echo/Echo HTTP/1.1\r\nHo");
  scheduler_.AdvanceBy(options_.web.http1.header_timeout - absl::Seconds(1));
  EXPECT_EQ(wire_->TakeOutput(), "");
  scheduler_.AdvanceBy(absl::Seconds(1));
  EXPECT_THAT(wire_->TakeOutput(), StartsWith("HTTP/1.1 408 "));
  EXPECT_TRUE(wire_->write_shut());
}

TEST_F(ServerBridgeTest, AnIdleConnectionClosesAtTheIdleTimeout) {
  Start();
  wire_->Feed(GrpcWebRequest("Echo", GrpcFrame("x")));
  wire_->TakeOutput();
  scheduler_.AdvanceBy(options_.web.http1.idle_timeout - absl::Seconds(1));
  EXPECT_FALSE(wire_->closed());
  scheduler_.AdvanceBy(absl::Seconds(1));
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.closed);
}

TEST_F(ServerBridgeTest, APeerThatClosesCancelsItsCall) {
  Start();
  wire_->Feed(GrpcWebRequest("Hold", GrpcFrame("held")));
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  wire_->PeerCloses();
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
}

}  // namespace
}  // namespace h2rpc::transport::http1
