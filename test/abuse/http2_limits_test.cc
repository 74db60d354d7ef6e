// Attacks on an h2rpc server at the HTTP/2 level, each made of hand-made
// frames: too many streams, oversized header lists, floods that must end in
// a GOAWAY rather than a bare close, and connections that never finish the
// handshake or sit idle.

#include <nghttp2/nghttp2.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/util/raw_frames.h"
#include "test/util/raw_h2_client.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::DecodeHeaderBlocks;
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::EncodeLiteralHeaderBlock;
using ::h2rpc::testing::FindHeader;
using ::h2rpc::testing::GoAwayDebugData;
using ::h2rpc::testing::GoAwayErrorCode;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kClientPreface;
using ::h2rpc::testing::PercentDecode;
using ::h2rpc::testing::RawBytesResult;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawHeaders;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::RstStreamErrorCode;
using ::h2rpc::testing::SendRawBytes;
using ::h2rpc::testing::SettingValue;
using ::testing::HasSubstr;
using ::testing::Optional;

constexpr char kEcho[] = "/h2rpc.test.Abuse/Echo";
constexpr char kLong[] = "/h2rpc.test.Abuse/Long";

std::string EchoMessage(absl::string_view text) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(text));
  return GrpcFrame(request.SerializeAsString());
}

// The client preface and an empty SETTINGS frame, then an ACK of the
// server's SETTINGS (which it queues before reading anything).
std::string Handshake() {
  return absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                      EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
}

bool ClosedCleanlyWithGoAway(const RawBytesResult& result, uint32_t code) {
  return result.closed_by_peer && GoAwayErrorCode(result.frames) == code;
}

class Http2LimitsTest : public ::testing::Test {
 protected:
  void StartServer(const ServerOptions& options) {
    Status status;
    server_ =
        Server::Builder()
            .SetOptions(options)
            .AddListeningPort("127.0.0.1:0", &port_)
            .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                kEcho,
                [](ServerContext*, const SimpleRequest* request,
                   SimpleResponse* response, UnaryDone done) {
                  *response->mutable_payload() = request->payload();
                  done(Status());
                })
            .RegisterUnary<SimpleRequest, SimpleResponse>(
                kLong,
                [](ServerContext*, const SimpleRequest&, SimpleResponse*) {
                  // The call's own length: longer than the idle
                  // timeouts the tests set.
                  absl::SleepFor(absl::Milliseconds(600));
                  return Status();
                })
            .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  // A fresh connection gets a normal answer.
  void ExpectServerStillServes() {
    std::string error;
    std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
    ASSERT_NE(client, nullptr) << error;
    ExpectEchoWorks(client.get());
  }

  void ExpectEchoWorks(RawH2Client* client) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(kEcho, port_);
    request.body = EchoMessage("still alive");
    const RawResponse response = client->Call(request);
    EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string("0")))
        << response.DebugString();
  }

  // Writing `bytes` to a fresh connection makes the server send GOAWAY
  // with `code` and then close cleanly (FIN, not a reset); other
  // connections are still served.
  void ExpectGoAwayThenClose(const std::string& bytes, uint32_t code) {
    const RawBytesResult result = SendRawBytes(port_, bytes, absl::Seconds(20));
    ASSERT_TRUE(result.connected);
    EXPECT_FALSE(result.timed_out);
    EXPECT_TRUE(ClosedCleanlyWithGoAway(result, code))
        << "closed " << result.closed_by_peer << " reset "
        << result.reset_by_peer << " goaway "
        << GoAwayErrorCode(result.frames).value_or(0xffffffffu);
    ExpectServerStillServes();
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
};

// ---------------------------------------------------------------------------
// MAX_CONCURRENT_STREAMS

TEST_F(Http2LimitsTest, StreamPastTheLimitIsRefusedAloneOthersComplete) {
  ServerOptions options;
  options.connection.max_concurrent_streams = 4;
  StartServer(options);
  // Five request HEADERS without END_STREAM: the fifth is one too many.
  // Then the four admitted streams send their message and finish.
  const std::string headers =
      EncodeLiteralHeaderBlock(GrpcRequestHeaders(kEcho, port_));
  std::string bytes = Handshake();
  for (uint32_t id = 1; id <= 9; id += 2) {
    bytes +=
        EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, headers);
  }
  for (uint32_t id = 1; id <= 7; id += 2) {
    bytes += EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, id,
                         EchoMessage(absl::StrCat("stream ", id)));
  }
  const RawBytesResult result = SendRawBytes(
      port_, bytes, absl::Seconds(20), [](const std::vector<RawFrame>& frames) {
        int ended = 0;
        for (const RawFrame& frame : frames) {
          if (frame.type == NGHTTP2_HEADERS &&
              (frame.flags & NGHTTP2_FLAG_END_STREAM)) {
            ++ended;
          }
        }
        return ended == 4;
      });
  ASSERT_FALSE(result.timed_out);
  EXPECT_FALSE(result.closed_by_peer || result.reset_by_peer);
  // The limit advertised is the configured one.
  EXPECT_THAT(
      SettingValue(result.frames, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS),
      Optional(4u));
  EXPECT_THAT(RstStreamErrorCode(result.frames, 9),
              Optional(uint32_t{NGHTTP2_REFUSED_STREAM}));
  EXPECT_EQ(GoAwayErrorCode(result.frames), absl::nullopt);
  std::map<uint32_t, std::vector<RawHeaders>> blocks;
  ASSERT_TRUE(DecodeHeaderBlocks(result.frames, &blocks));
  for (uint32_t id = 1; id <= 7; id += 2) {
    ASSERT_EQ(blocks[id].size(), 2u) << "stream " << id;
    EXPECT_THAT(FindHeader(blocks[id][1], "grpc-status"),
                Optional(std::string("0")))
        << "stream " << id;
    EXPECT_EQ(RstStreamErrorCode(result.frames, id), absl::nullopt);
  }
  EXPECT_TRUE(blocks[9].empty());
}

TEST_F(Http2LimitsTest, StreamsFreedByClosingAreAdmittedAgain) {
  ServerOptions options;
  options.connection.max_concurrent_streams = 1;
  StartServer(options);
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
  ASSERT_NE(client, nullptr) << error;
  for (int i = 0; i < 5; ++i) ExpectEchoWorks(client.get());
}

// ---------------------------------------------------------------------------
// Header lists over SETTINGS_MAX_HEADER_LIST_SIZE

TEST_F(Http2LimitsTest, OversizedRequestHeadersGetResourceExhausted) {
  ServerOptions options;
  options.connection.max_header_list_size = 8192;
  StartServer(options);
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
  ASSERT_NE(client, nullptr) << error;
  RawRequest request;
  request.headers = GrpcRequestHeaders(kEcho, port_);
  request.headers.emplace_back("x-big", std::string(10000, 'a'));
  request.body = EchoMessage("big");
  const RawResponse response = client->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_TRUE(response.IsTrailersOnly()) << response.DebugString();
  EXPECT_FALSE(response.rst_received && response.rst_error_code != 0)
      << response.DebugString();
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string("8")))
      << response.DebugString();
  EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
              HasSubstr("exceeds the limit of 8192 (max_header_list_size)"));
  // The connection is still usable.
  EXPECT_FALSE(client->closed()) << client->error();
  ExpectEchoWorks(client.get());
}

// ---------------------------------------------------------------------------
// Fatal connection errors: a GOAWAY with the right code, then a clean close

TEST_F(Http2LimitsTest, PingFloodGetsGoAwayEnhanceYourCalm) {
  StartServer(ServerOptions());
  std::string bytes = Handshake();
  for (int i = 0; i < 20000; ++i) {
    bytes += EncodeFrame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
  }
  ExpectGoAwayThenClose(bytes, NGHTTP2_ENHANCE_YOUR_CALM);
}

TEST_F(Http2LimitsTest, SettingsFloodGetsGoAwayEnhanceYourCalm) {
  StartServer(ServerOptions());
  std::string bytes = Handshake();
  for (int i = 0; i < 20000; ++i) {
    bytes += EncodeFrame(NGHTTP2_SETTINGS, 0, 0, "");
  }
  ExpectGoAwayThenClose(bytes, NGHTTP2_ENHANCE_YOUR_CALM);
}

TEST_F(Http2LimitsTest, ContinuationFloodGetsGoAwayEnhanceYourCalm) {
  StartServer(ServerOptions());
  // A HEADERS frame without END_HEADERS, then empty CONTINUATIONs for ever.
  std::string bytes = absl::StrCat(
      Handshake(),
      EncodeFrame(NGHTTP2_HEADERS, 0, 1,
                  EncodeLiteralHeaderBlock({{":method", "POST"}})));
  for (int i = 0; i < 1000; ++i) {
    bytes += EncodeFrame(NGHTTP2_CONTINUATION, 0, 1, "");
  }
  ExpectGoAwayThenClose(bytes, NGHTTP2_ENHANCE_YOUR_CALM);
}

// HEADERS then RST_STREAM(CANCEL) on `count` new streams (CVE-2023-44487),
// then a PING whose ACK shows the server read them all.
std::string RapidResets(int count, int port) {
  const std::string headers =
      EncodeLiteralHeaderBlock(GrpcRequestHeaders(kEcho, port));
  const std::string cancel("\0\0\0\x08", 4);
  std::string bytes = Handshake();
  for (uint32_t id = 1; id < 2u * count; id += 2) {
    bytes +=
        EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, headers);
    bytes += EncodeFrame(NGHTTP2_RST_STREAM, 0, id, cancel);
  }
  return bytes + EncodeFrame(NGHTTP2_PING, 0, 0, "rstsdone");
}

bool PingAcked(const std::vector<RawFrame>& frames) {
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_PING && (frame.flags & NGHTTP2_FLAG_ACK) != 0 &&
        frame.payload == "rstsdone") {
      return true;
    }
  }
  return false;
}

TEST_F(Http2LimitsTest, RapidResetGetsGoAwayEnhanceYourCalm) {
  StartServer(ServerOptions());
  // Twice the burst of resets the server allows, far faster than it
  // allows them to go on.
  const RawBytesResult result =
      SendRawBytes(port_, RapidResets(2000, port_), absl::Seconds(20));
  ASSERT_TRUE(result.connected);
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.closed_by_peer);
  EXPECT_THAT(GoAwayErrorCode(result.frames),
              Optional(uint32_t{NGHTTP2_ENHANCE_YOUR_CALM}));
  EXPECT_THAT(GoAwayDebugData(result.frames),
              Optional(std::string("too_many_resets")));
  ExpectServerStillServes();
}

TEST_F(Http2LimitsTest, ResetsWithinTheBurstAreServed) {
  StartServer(ServerOptions());
  const RawBytesResult result = SendRawBytes(port_, RapidResets(900, port_),
                                             absl::Seconds(20), PingAcked);
  ASSERT_TRUE(result.connected);
  EXPECT_TRUE(PingAcked(result.frames));
  EXPECT_EQ(GoAwayErrorCode(result.frames), absl::nullopt);
  EXPECT_FALSE(result.closed_by_peer || result.reset_by_peer);
}

TEST_F(Http2LimitsTest, UndecodableHpackGetsGoAwayCompressionError) {
  StartServer(ServerOptions());
  // Indexed field 0 does not exist (RFC 7541 section 6.1).
  const std::string bytes = absl::StrCat(
      Handshake(),
      EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, "\x80"));
  ExpectGoAwayThenClose(bytes, NGHTTP2_COMPRESSION_ERROR);
}

// ---------------------------------------------------------------------------
// Handshake and idle limits

TEST_F(Http2LimitsTest, ConnectionsThatNeverSendThePrefaceAreClosed) {
  ServerOptions options;
  options.connection.handshake_timeout = absl::Milliseconds(300);
  StartServer(options);
  // Many silent connections at once (half a preface on some): every one is
  // closed by the server, with a GOAWAY, well before the client gives up.
  constexpr int kConnections = 50;
  std::vector<RawBytesResult> results(kConnections);
  std::vector<std::thread> threads;
  for (int i = 0; i < kConnections; ++i) {
    threads.emplace_back([&, i] {
      results[i] =
          SendRawBytes(port_, i % 2 == 0 ? "" : kClientPreface.substr(0, 10),
                       absl::Seconds(30));
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const RawBytesResult& result : results) {
    ASSERT_TRUE(result.connected) << result.connect_error;
    EXPECT_FALSE(result.timed_out);
    EXPECT_TRUE(ClosedCleanlyWithGoAway(result, NGHTTP2_NO_ERROR));
  }
  ExpectServerStillServes();
}

TEST_F(Http2LimitsTest, CompletedHandshakeIsNotTimedOut) {
  ServerOptions options;
  options.connection.handshake_timeout = absl::Milliseconds(100);
  // The PINGs below come far faster than PING enforcement allows.
  options.max_ping_strikes = 0;
  StartServer(options);
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
  ASSERT_NE(client, nullptr) << error;
  // Longer than the handshake timeout, measured by the server's answers.
  const absl::Time until = absl::Now() + absl::Milliseconds(500);
  while (absl::Now() < until) {
    ASSERT_TRUE(client->Ping()) << client->error();
  }
  ExpectEchoWorks(client.get());
}

TEST_F(Http2LimitsTest, IdleConnectionIsShutDownGracefully) {
  ServerOptions options;
  options.max_connection_idle = absl::Milliseconds(200);
  // This client never answers the PING between the two GOAWAYs: the final
  // one follows after keepalive_timeout.
  options.keepalive_timeout = absl::Milliseconds(200);
  StartServer(options);
  const RawBytesResult result =
      SendRawBytes(port_, Handshake(), absl::Seconds(20));
  ASSERT_TRUE(result.connected);
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.closed_by_peer);
  EXPECT_EQ(GoAwayErrorCode(result.frames), NGHTTP2_NO_ERROR);
}

TEST_F(Http2LimitsTest, ConnectionWithAStreamOpenIsNotIdle) {
  ServerOptions options;
  options.max_connection_idle = absl::Milliseconds(100);
  StartServer(options);
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
  ASSERT_NE(client, nullptr) << error;
  // A call that lasts six idle timeouts (the handler's own duration).
  RawRequest request;
  request.headers = GrpcRequestHeaders(kLong, port_);
  request.body = EchoMessage("long");
  const RawResponse response = client->Call(request);
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string("0")))
      << response.DebugString();
  EXPECT_FALSE(client->goaway_received());
  // Idle now: the server shuts the connection down.
  EXPECT_TRUE(client->RunUntil([&] { return client->goaway_received(); },
                               absl::Seconds(20)));
}

}  // namespace
}  // namespace h2rpc
