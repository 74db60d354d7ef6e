#include "transport/http1/client_bridge.h"

#include <deque>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/http2/client_session.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http1 {
namespace {

using http2::testing::MemoryWire;
using http2::testing::RecordingCall;
using http2::testing::RecordingClientListener;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Framed(absl::string_view message) {
  std::string frame(5, '\0');
  frame[4] = static_cast<char>(message.size());
  frame.append(message.data(), message.size());
  return frame;
}

class ClientBridgeTest : public ::testing::Test {
 protected:
  ClientBridgeTest() {
    session_ = std::make_unique<http2::ClientSession>(
        &scheduler_, "test-server", options_, &listener_);
    bridge_ = std::make_unique<ClientBridge>(Http1Options());
    bridge_->Attach(session_.get());
    wire_ = std::make_unique<MemoryWire>(bridge_.get());
    wire_->Start();
    // Nothing goes out before a call: the HTTP/2 handshake stays inside.
    EXPECT_EQ(wire_->TakeOutput(), "");
  }
  ~ClientBridgeTest() override {
    if (!listener_.closed) {
      session_->Close(Status(StatusCode::kUnavailable, "test over"));
    }
  }

  // Starts a gRPC call with one request message; returns what it wrote.
  RecordingCall& Start(absl::string_view request = "ping") {
    RecordingCall& call = calls_.emplace_back();
    call.stream.description.method_path = call.path;
    call.stream.description.authority = "test-server";
    call.stream.outgoing().buffer() = Framed(request);
    call.stream.outgoing().set_end_of_data();
    session_->StartCall(&call.stream);
    return call;
  }

  // A chunked gRPC answer carrying `message` and grpc-status `code`.
  static std::string Answer(absl::string_view message, int code,
                            absl::string_view connection = "") {
    const std::string body = Framed(message);
    return absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\n",
                        connection, "Transfer-Encoding: chunked\r\n\r\n",
                        absl::Hex(body.size()), "\r\n", body,
                        "\r\n0\r\ngrpc-status: ", code, "\r\n\r\n");
  }

  io::FakeScheduler scheduler_;
  http2::ConnectionOptions options_;
  std::deque<RecordingCall> calls_;
  RecordingClientListener listener_;
  std::unique_ptr<http2::ClientSession> session_;
  std::unique_ptr<ClientBridge> bridge_;
  std::unique_ptr<MemoryWire> wire_;
};

TEST_F(ClientBridgeTest, ACallIsOneRequestAndItsAnswer) {
  RecordingCall& call = Start("ping");
  const std::string request = wire_->TakeOutput();
  EXPECT_THAT(request, StartsWith("POST /test.Echo/Echo HTTP/1.1\r\n"
                                  "host: test-server\r\n"));
  EXPECT_THAT(request, HasSubstr("content-type: application/grpc\r\n"));
  EXPECT_THAT(request, HasSubstr("content-length: 9\r\n\r\n"));
  EXPECT_THAT(request, ::testing::EndsWith(Framed("ping")));
  wire_->Feed(Answer("pong", 0));
  wire_->TakeOutput();
  ASSERT_TRUE(call.closed);
  EXPECT_TRUE(call.status.ok()) << call.status.ToString();
  EXPECT_THAT(call.messages, ElementsAre("pong"));
}

TEST_F(ClientBridgeTest, CallsTakeTurns) {
  RecordingCall& first = Start("1");
  RecordingCall& second = Start("2");
  const std::string output = wire_->TakeOutput();
  // One request out; the second waits for the first's answer.
  EXPECT_EQ(output.find("POST", 1), std::string::npos) << output;
  wire_->Feed(Answer("one", 0));
  const std::string next = wire_->TakeOutput();
  EXPECT_THAT(next, StartsWith("POST /test.Echo/Echo HTTP/1.1\r\n"));
  wire_->Feed(Answer("two", 0));
  wire_->TakeOutput();
  EXPECT_THAT(first.messages, ElementsAre("one"));
  EXPECT_THAT(second.messages, ElementsAre("two"));
  EXPECT_TRUE(second.closed && second.status.ok());
}

TEST_F(ClientBridgeTest, ConnectionCloseSendsTheCallsElsewhere) {
  RecordingCall& call = Start();
  wire_->TakeOutput();
  wire_->Feed(Answer("last", 0, "Connection: close\r\n"));
  wire_->TakeOutput();
  EXPECT_TRUE(call.closed && call.status.ok());
  EXPECT_TRUE(listener_.draining);
}

TEST_F(ClientBridgeTest, AMalformedAnswerFailsTheCallAndTheConnection) {
  RecordingCall& call = Start();
  wire_->TakeOutput();
  wire_->Feed("HTTP/1.1 200 OK\r\nBad Header\r\n\r\n");
  wire_->TakeOutput();
  ASSERT_TRUE(call.closed);
  EXPECT_EQ(call.status.code(), StatusCode::kInternal)
      << call.status.ToString();
  EXPECT_TRUE(wire_->closed());
}

TEST_F(ClientBridgeTest, BytesNoRequestAskedForEndTheConnection) {
  wire_->Feed("HTTP/1.1 200 OK\r\n\r\n");
  EXPECT_TRUE(wire_->closed());
}

TEST_F(ClientBridgeTest, AnAnswerCutShortFailsTheCall) {
  RecordingCall& call = Start();
  wire_->TakeOutput();
  // A message of 10 bytes, 3 of them sent, of a body of 100.
  wire_->Feed(
      absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\n"
                   "Content-Length: 100\r\n\r\n",
                   absl::string_view("\0\0\0\0\x0a", 5), "hel"));
  wire_->PeerCloses();
  ASSERT_TRUE(call.closed);
  EXPECT_EQ(call.status.code(), StatusCode::kUnavailable)
      << call.status.ToString();
}

}  // namespace
}  // namespace h2rpc::transport::http1
