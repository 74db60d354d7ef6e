// A server session driven frame by frame: raw client bytes in, parsed frames
// out, time on a fake clock.
#include "transport/http2/server_session.h"

#include <nghttp2/nghttp2.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "test/util/raw_frames.h"
#include "transport/http2/testing/server_session_fixture.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2 {
namespace {

using ::h2rpc::testing::DecodeHeaderBlocks;
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::EncodeLiteralHeaderBlock;
using ::h2rpc::testing::FindHeader;
using ::h2rpc::testing::GoAwayDebugData;
using ::h2rpc::testing::GoAwayErrorCode;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::RawHeaders;
using ::h2rpc::testing::RstStreamErrorCode;
using ::h2rpc::testing::SetHeader;
using testing::Framed;

constexpr char kEcho[] = "/test.Echo/Echo";
constexpr char kHold[] = "/test.Echo/Hold";

std::string Uint32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

class ServerSessionTest : public testing::ServerSessionFixture {
 protected:
  // A request on `stream_id`: HEADERS, then one DATA frame with `body`.
  void Request(uint32_t stream_id, const RawHeaders& headers,
               absl::string_view body, bool end_stream = true) {
    const uint8_t end = end_stream ? NGHTTP2_FLAG_END_STREAM : 0;
    std::string bytes = EncodeFrame(
        NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | (body.empty() ? end : 0),
        stream_id, EncodeLiteralHeaderBlock(headers));
    if (!body.empty()) {
      bytes += EncodeFrame(NGHTTP2_DATA, end, stream_id, body);
    }
    Feed(bytes);
  }
  void Request(uint32_t stream_id, absl::string_view path,
               absl::string_view body, bool end_stream = true) {
    Request(stream_id, GrpcRequestHeaders(path, 1), body, end_stream);
  }

  // The header blocks sent on `stream_id`, decoded.
  std::vector<RawHeaders> Blocks(uint32_t stream_id) {
    std::map<uint32_t, std::vector<RawHeaders>> blocks;
    EXPECT_TRUE(DecodeHeaderBlocks(frames_, &blocks));
    return blocks[stream_id];
  }
  // The grpc-status (and grpc-message) the stream ended with, "" if none.
  std::string GrpcStatus(uint32_t stream_id) {
    const std::vector<RawHeaders> blocks = Blocks(stream_id);
    if (blocks.empty()) return "";
    return FindHeader(blocks.back(), "grpc-status").value_or("");
  }
  std::string DataOn(uint32_t stream_id) {
    std::string data;
    for (const RawFrame& frame : frames_) {
      if (frame.type == NGHTTP2_DATA && frame.stream_id == stream_id) {
        data += frame.payload;
      }
    }
    return data;
  }
  bool WindowUpdateOn(uint32_t stream_id) {
    for (const RawFrame& frame : frames_) {
      if (frame.type == NGHTTP2_WINDOW_UPDATE && frame.stream_id == stream_id) {
        return true;
      }
    }
    return false;
  }
};

TEST_F(ServerSessionTest, AdvertisesItsSettingsFirst) {
  options_.max_concurrent_streams = 7;
  StartSession();
  ASSERT_FALSE(frames_.empty());
  EXPECT_EQ(frames_[0].type, NGHTTP2_SETTINGS);
  EXPECT_EQ(::h2rpc::testing::SettingValue(
                frames_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS),
            7u);
}

TEST_F(ServerSessionTest, UnaryEchoIsHeadersDataTrailers) {
  Handshake();
  Request(1, kEcho, Framed("hello"));
  const std::vector<RawHeaders> blocks = Blocks(1);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(FindHeader(blocks[0], ":status"), "200");
  EXPECT_EQ(FindHeader(blocks[0], "content-type"), "application/grpc");
  EXPECT_EQ(DataOn(1), Framed("hello"));
  EXPECT_EQ(FindHeader(blocks[1], "grpc-status"), "0");
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  EXPECT_EQ(dispatcher_.calls[0]->messages, std::vector<std::string>{"hello"});
}

TEST_F(ServerSessionTest, UnknownMethodIsOneTrailersOnlyFrame) {
  Handshake();
  Request(1, "/test.Echo/Nope", Framed("x"));
  int header_frames = 0;
  for (const RawFrame& frame : frames_) {
    if (frame.stream_id != 1) continue;
    EXPECT_NE(frame.type, NGHTTP2_DATA);
    if (frame.type == NGHTTP2_HEADERS) {
      ++header_frames;
      EXPECT_TRUE(frame.flags & NGHTTP2_FLAG_END_STREAM);
    }
  }
  EXPECT_EQ(header_frames, 1);
  const std::vector<RawHeaders> blocks = Blocks(1);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(FindHeader(blocks[0], ":status"), "200");
  EXPECT_EQ(FindHeader(blocks[0], "grpc-status"), "12");
}

TEST_F(ServerSessionTest, EveryReceivedHeaderErrorHasItsAnswer) {
  options_.max_header_list_size = 1024;
  Handshake();
  struct Case {
    const char* what;
    RawHeaders headers;
    const char* http_status;
    const char* grpc_status;
  };
  RawHeaders get = GrpcRequestHeaders(kEcho, 1);
  SetHeader(&get, ":method", "GET");
  RawHeaders text = GrpcRequestHeaders(kEcho, 1);
  SetHeader(&text, "content-type", "text/plain");
  RawHeaders timeout = GrpcRequestHeaders(kEcho, 1);
  SetHeader(&timeout, "grpc-timeout", "12parsecs");
  RawHeaders encoding = GrpcRequestHeaders(kEcho, 1);
  SetHeader(&encoding, "grpc-encoding", "snappy");
  RawHeaders big = GrpcRequestHeaders(kEcho, 1);
  SetHeader(&big, "x-big", std::string(2000, 'b'));
  RawHeaders bad_bin = GrpcRequestHeaders(kEcho, 1);
  SetHeader(&bad_bin, "x-data-bin", "!!!not base64!!!");
  const std::vector<Case> cases = {
      {"GET", get, "405", "13"},
      {"text/plain", text, "415", "13"},
      {"malformed grpc-timeout", timeout, "200", "13"},
      {"unknown grpc-encoding", encoding, "200", "12"},
      {"header list over the limit", big, "200", "8"},
      {"invalid base64 metadata", bad_bin, "200", "13"},
  };
  uint32_t stream_id = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Request(stream_id, c.headers, Framed("x"));
    const std::vector<RawHeaders> blocks = Blocks(stream_id);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_EQ(FindHeader(blocks[0], ":status"), c.http_status);
    EXPECT_EQ(FindHeader(blocks[0], "grpc-status"), c.grpc_status);
    EXPECT_TRUE(FindHeader(blocks[0], "grpc-message").has_value());
    stream_id += 2;
  }
  EXPECT_TRUE(dispatcher_.calls.empty());
  // Refusals are per stream: the connection still serves.
  Request(stream_id, kEcho, Framed("still here"));
  EXPECT_EQ(GrpcStatus(stream_id), "0");
  EXPECT_FALSE(GoAwayErrorCode(frames_).has_value());
}

// RFC 9113 section 8: a malformed request is reset with PROTOCOL_ERROR and
// never reaches the rpc layer; the connection goes on.
TEST_F(ServerSessionTest, MalformedRequestsAreResetWithProtocolError) {
  Handshake();
  const RawHeaders request = GrpcRequestHeaders(kEcho, 1);
  auto with = [&request](RawHeaders more) {
    RawHeaders headers = request;
    headers.insert(headers.end(), more.begin(), more.end());
    return headers;
  };
  RawHeaders pseudo_after_regular = with({});
  std::swap(pseudo_after_regular.front(), pseudo_after_regular.back());
  RawHeaders without_path;
  for (const auto& field : request) {
    if (field.first != ":path") without_path.push_back(field);
  }
  const RawHeaders kMalformed[] = {
      with({{"X-Upper", "v"}}),
      with({{"connection", "close"}}),
      with({{"x-ctl", std::string("a\x01z")}}),
      with({{"te", "gzip"}}),
      with({{":foo", "1"}}),
      pseudo_after_regular,
      without_path,
  };
  uint32_t stream_id = 1;
  for (const RawHeaders& headers : kMalformed) {
    Request(stream_id, headers, Framed("hello"));
    EXPECT_EQ(RstStreamErrorCode(frames_, stream_id), NGHTTP2_PROTOCOL_ERROR)
        << stream_id;
    EXPECT_TRUE(Blocks(stream_id).empty()) << stream_id;
    stream_id += 2;
  }
  EXPECT_TRUE(dispatcher_.calls.empty());
  // Valid headers, then what only a later frame shows: a body longer than
  // its content-length, trailers that carry a pseudo-header. The calls
  // dispatched are cancelled.
  Request(stream_id, with({{"content-length", "1"}}), Framed("hello"));
  EXPECT_EQ(RstStreamErrorCode(frames_, stream_id), NGHTTP2_PROTOCOL_ERROR);
  stream_id += 2;
  Request(stream_id, request, Framed("hello"), /*end_stream=*/false);
  Feed(EncodeFrame(NGHTTP2_HEADERS,
                   NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM,
                   stream_id, EncodeLiteralHeaderBlock({{":path", "/x"}})));
  EXPECT_EQ(RstStreamErrorCode(frames_, stream_id), NGHTTP2_PROTOCOL_ERROR);
  ASSERT_EQ(dispatcher_.calls.size(), 2u);
  for (const auto& call : dispatcher_.calls) {
    EXPECT_TRUE(call->cancelled);
    EXPECT_FALSE(call->half_closed);
  }
  // The connection still serves.
  stream_id += 2;
  Request(stream_id, kEcho, Framed("again"));
  EXPECT_EQ(GrpcStatus(stream_id), "0");
  EXPECT_FALSE(GoAwayErrorCode(frames_).has_value());
}

// What a stream whose handler holds it costs the session (its ServerStream,
// nghttp2's stream, the header block's leftovers): at most 2 KiB of heap.
TEST_F(ServerSessionTest, AHeldStreamCostsTheSessionAtMostTwoKiB) {
  Handshake();
  constexpr uint32_t kStreams = 200;
  dispatcher_.calls.reserve(kStreams + 1);
  const auto hold = [this](uint32_t stream_id) {
    Feed(EncodeFrame(
        NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, stream_id,
        EncodeLiteralHeaderBlock(GrpcRequestHeaders("/test.Echo/Hold", 1))));
  };
  hold(1);  // the session's first stream warms its tables
  const int64_t before = ::h2rpc::testing::LiveHeapBytes();
  for (uint32_t i = 0; i < kStreams; ++i) hold(3 + 2 * i);
  const int64_t per_stream =
      (::h2rpc::testing::LiveHeapBytes() - before) / kStreams;
  ASSERT_EQ(dispatcher_.calls.size(), kStreams + 1);
  EXPECT_LE(per_stream, 2048);
  EXPECT_GT(per_stream, 0);
}

TEST_F(ServerSessionTest, TheClientsTimeoutRunsOnTheSchedulersClock) {
  Handshake();
  RawHeaders headers = GrpcRequestHeaders(kHold, 1);
  SetHeader(&headers, "grpc-timeout", "100m");
  Request(1, headers, Framed("x"), /*end_stream=*/false);
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  Advance(absl::Milliseconds(99));
  EXPECT_EQ(GrpcStatus(1), "");
  EXPECT_FALSE(dispatcher_.calls[0]->cancelled);
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(GrpcStatus(1), "4");  // DEADLINE_EXCEEDED
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
}

TEST_F(ServerSessionTest, ClientResetCancelsTheCall) {
  Handshake();
  Request(1, kHold, Framed("x"), /*end_stream=*/false);
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  Feed(EncodeFrame(NGHTTP2_RST_STREAM, 0, 1, Uint32(NGHTTP2_CANCEL)));
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
  EXPECT_EQ(GrpcStatus(1), "");
}

TEST_F(ServerSessionTest, GracefulShutdownWaitsForOpenStreams) {
  Handshake();
  Request(1, kHold, Framed("x"));
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  session_->GracefulShutdown();
  Take();
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_NO_ERROR);
  EXPECT_FALSE(wire_->closed());
  // Until the client has answered the PING that follows the first GOAWAY,
  // a new stream is served: the client may have sent it before it saw the
  // GOAWAY.
  Request(3, kEcho, Framed("in flight"));
  EXPECT_EQ(GrpcStatus(3), "0");
  std::string ping;
  for (const RawFrame& frame : frames_) {
    if (frame.type == NGHTTP2_PING && !(frame.flags & NGHTTP2_FLAG_ACK)) {
      ping = frame.payload;
    }
  }
  ASSERT_EQ(ping.size(), 8u);
  Feed(EncodeFrame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, ping));
  // After the final GOAWAY, a new stream is not served.
  Request(5, kEcho, Framed("late"));
  EXPECT_EQ(dispatcher_.calls.size(), 2u);
  EXPECT_EQ(GrpcStatus(5), "");

  dispatcher_.calls[0]->Finish(Status(StatusCode::kAborted, "done"));
  Take();
  EXPECT_EQ(GrpcStatus(1), "10");
  // Everything is written: the server half-closes and waits for the
  // client to close its side.
  EXPECT_TRUE(wire_->write_shut());
  EXPECT_FALSE(dispatcher_.closed);
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.closed);
}

TEST_F(ServerSessionTest, HeldMessagesWithholdFlowControlCredit) {
  options_.initial_stream_window = 1024;
  dispatcher_.hold_messages = true;
  Handshake();
  Request(1, kHold, Framed(std::string(900, 'm')), /*end_stream=*/false);
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  ASSERT_EQ(dispatcher_.calls[0]->messages.size(), 1u);
  EXPECT_FALSE(WindowUpdateOn(1));
  dispatcher_.calls[0]->ReleaseHeldMessages();
  Take();
  EXPECT_TRUE(WindowUpdateOn(1));
}

TEST_F(ServerSessionTest, MessagesPastTheStreamWindowAreAProtocolError) {
  options_.initial_stream_window = 1024;
  dispatcher_.hold_messages = true;
  Handshake();
  Request(1, kHold, Framed(std::string(900, 'm')), /*end_stream=*/false);
  // The window is not reopened: 200 more bytes overflow it.
  Feed(EncodeFrame(NGHTTP2_DATA, 0, 1, std::string(200, 'o')));
  // nghttp2 answers a stream flow-control violation with RST_STREAM.
  EXPECT_EQ(RstStreamErrorCode(frames_, 1), NGHTTP2_FLOW_CONTROL_ERROR);
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
}

TEST_F(ServerSessionTest, ExpectsLargeInputWhileALargeMessageArrives) {
  Handshake();
  EXPECT_FALSE(session_->ExpectsLargeInput());
  const std::string body = Framed(std::string(200 << 10, 'l'));
  Request(1, kEcho, body.substr(0, 16384), /*end_stream=*/false);
  EXPECT_TRUE(session_->ExpectsLargeInput());
  size_t offset = 16384;
  // Until less than io::ByteSession::kLargeInputBytes of it is to come.
  while (body.size() - offset > 16384) {
    Feed(EncodeFrame(NGHTTP2_DATA, 0, 1, body.substr(offset, 16384)));
    offset += 16384;
    EXPECT_EQ(session_->ExpectsLargeInput(),
              body.size() - offset >= io::ByteSession::kLargeInputBytes)
        << offset;
  }
  Feed(EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1,
                   body.substr(offset)));
  EXPECT_FALSE(session_->ExpectsLargeInput());
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  ASSERT_EQ(dispatcher_.calls[0]->messages.size(), 1u);
  EXPECT_EQ(dispatcher_.calls[0]->messages[0].size(), 200u << 10);
  // A small message after it expects nothing large.
  Request(3, kEcho, Framed("small"));
  EXPECT_FALSE(session_->ExpectsLargeInput());
}

TEST_F(ServerSessionTest, HeldMessagesCountAgainstTheMemoryShare) {
  dispatcher_.hold_messages = true;
  Handshake();
  const std::string message = Framed(std::string(900, 'm'));
  Request(1, kHold, message + message, /*end_stream=*/false);
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  ASSERT_EQ(dispatcher_.calls[0]->messages.size(), 2u);
  // Both messages' wire bytes, prefixes included, while they are held.
  size_t before = quota_.used();
  dispatcher_.calls[0]->ReleaseHeldMessages();
  EXPECT_EQ(before - quota_.used(), 2 * message.size());

  // Held when the connection closes: given back with it.
  Request(1 + 2, kHold, message, /*end_stream=*/false);
  before = quota_.used();
  session_->Close(Status(StatusCode::kUnavailable, "test"));
  EXPECT_EQ(before - quota_.used(), message.size());
  // The rest (nghttp2's memory) goes with the connection.
  session_.reset();
  EXPECT_EQ(quota_.used(), 0u);
}

TEST_F(ServerSessionTest, Nghttp2sOwnMemoryCountsAgainstTheMemoryShare) {
  options_.max_concurrent_streams = 1;
  dispatcher_.hold_messages = true;
  StartSession();
  const size_t idle = quota_.used();
  EXPECT_GT(idle, 0u) << "nghttp2's session state";
  // 100 streams opened and refused: their state and RST_STREAMs wait in
  // nghttp2 until the output is taken.
  Feed(absl::StrCat(::h2rpc::testing::kClientPreface,
                    EncodeFrame(NGHTTP2_SETTINGS, 0, 0, "")));
  std::string requests;
  for (uint32_t id = 1; id < 200; id += 2) {
    requests +=
        EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id,
                    EncodeLiteralHeaderBlock(GrpcRequestHeaders(kHold, 1)));
  }
  wire_->Feed(requests);
  const size_t flooded = quota_.used();
  EXPECT_GT(flooded, idle + 100 * 100) << "about 100 bytes a stream at least";
  Take();
  EXPECT_LT(quota_.used(), flooded);
  session_->Close(Status(StatusCode::kUnavailable, "test"));
}

TEST_F(ServerSessionTest, StreamsPastTheAcknowledgedLimitEndTheConnection) {
  options_.max_concurrent_streams = 1;
  dispatcher_.hold_messages = true;
  Handshake();
  Request(1, kHold, "", /*end_stream=*/false);
  uint32_t id = 3;
  for (uint32_t i = 0; i < ServerSession::kMaxRefusedStreams; ++i, id += 2) {
    Request(id, kHold, "", /*end_stream=*/false);
    ASSERT_EQ(RstStreamErrorCode(frames_, id), NGHTTP2_REFUSED_STREAM) << id;
  }
  EXPECT_EQ(GoAwayErrorCode(frames_), absl::nullopt);
  EXPECT_EQ(dispatcher_.calls.size(), 1u);
  // One more.
  Request(id, kHold, "", /*end_stream=*/false);
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_EQ(GoAwayDebugData(frames_), "too_many_refused_streams");
  EXPECT_EQ(RstStreamErrorCode(frames_, id), absl::nullopt);
}

TEST_F(ServerSessionTest, StreamsRefusedBeforeTheAcknowledgementDoNotCount) {
  options_.max_concurrent_streams = 1;
  dispatcher_.hold_messages = true;
  StartSession();
  // The client has not seen the limit yet: its SETTINGS, no ACK.
  Feed(absl::StrCat(::h2rpc::testing::kClientPreface,
                    EncodeFrame(NGHTTP2_SETTINGS, 0, 0, "")));
  Request(1, kHold, "", /*end_stream=*/false);
  uint32_t id = 3;
  for (uint32_t i = 0; i < 2 * ServerSession::kMaxRefusedStreams;
       ++i, id += 2) {
    Request(id, kHold, "", /*end_stream=*/false);
    ASSERT_EQ(RstStreamErrorCode(frames_, id), NGHTTP2_REFUSED_STREAM) << id;
  }
  EXPECT_EQ(GoAwayErrorCode(frames_), absl::nullopt);
  // Once it acknowledges, the count starts.
  Feed(EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  Request(id, kHold, "", /*end_stream=*/false);
  EXPECT_EQ(RstStreamErrorCode(frames_, id), NGHTTP2_REFUSED_STREAM);
  EXPECT_EQ(GoAwayErrorCode(frames_), absl::nullopt);
}

// A call on `stream_id` that declares a 256 KiB message and sends 80 KiB of
// it (MemoryRefusalTest: the 512 KiB memory_quota_share grants one such
// message; for any other, the 80 KiB waiting for memory pass a quarter of
// the 256 KiB connection_window).
std::string PartialCall(uint32_t stream_id) {
  std::string bytes =
      EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, stream_id,
                  EncodeLiteralHeaderBlock(GrpcRequestHeaders(kHold, 1)));
  std::string body = std::string(1, '\0') + Uint32(256 << 10);
  body.resize(80 << 10, 'm');
  for (size_t at = 0; at < body.size(); at += 16384) {
    bytes += EncodeFrame(NGHTTP2_DATA, 0, stream_id, body.substr(at, 16384));
  }
  return bytes;
}

class MemoryRefusalTest : public ServerSessionTest {
 protected:
  void SetUp() override {
    options_.connection_window = 256 << 10;
    options_.initial_stream_window = 128 << 10;
    options_.memory_quota_share = 512 << 10;
    options_.bdp_probe = false;
    dispatcher_.hold_messages = true;
    Handshake();
    // The one message the share grants, left unfinished.
    Feed(PartialCall(1));
    ASSERT_EQ(GrpcStatus(1), "");
  }
  // kMaxMemoryRefusals calls from `*next_id` on, each failed for memory.
  void RefuseAsManyAsAllowed(uint32_t* next_id) {
    for (uint32_t i = 0; i < ServerSession::kMaxMemoryRefusals;
         ++i, *next_id += 2) {
      Feed(PartialCall(*next_id));
      ASSERT_EQ(GrpcStatus(*next_id), "8") << *next_id;
      ASSERT_EQ(GoAwayErrorCode(frames_), absl::nullopt) << *next_id;
    }
  }
};

TEST_F(MemoryRefusalTest, RefusalsWithoutAMessageEndTheConnection) {
  uint32_t id = 3;
  RefuseAsManyAsAllowed(&id);
  // One more.
  Feed(PartialCall(id));
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_EQ(GoAwayDebugData(frames_), "too_many_memory_refusals");
}

TEST_F(MemoryRefusalTest, AMessageThatArrivesStartsTheCountAgain) {
  uint32_t id = 3;
  RefuseAsManyAsAllowed(&id);
  Request(id, kHold, Framed("a message"), /*end_stream=*/false);
  id += 2;
  ASSERT_FALSE(dispatcher_.calls.empty());
  ASSERT_EQ(dispatcher_.calls.back()->messages.size(), 1u);
  RefuseAsManyAsAllowed(&id);
  Feed(PartialCall(id));
  EXPECT_EQ(GoAwayDebugData(frames_), "too_many_memory_refusals");
}

// HEADERS then RST_STREAM(CANCEL) on `count` new streams from `*next_id`.
std::string OpenAndReset(int count, uint32_t* next_id) {
  const std::string headers =
      EncodeLiteralHeaderBlock(GrpcRequestHeaders(kHold, 1));
  std::string bytes;
  for (int i = 0; i < count; ++i, *next_id += 2) {
    bytes += EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, *next_id,
                         headers);
    bytes +=
        EncodeFrame(NGHTTP2_RST_STREAM, 0, *next_id, Uint32(NGHTTP2_CANCEL));
  }
  return bytes;
}

TEST_F(ServerSessionTest, ResetsPastTheBurstAndTheRateEndTheConnection) {
  dispatcher_.hold_messages = true;
  Handshake();
  uint32_t id = 1;
  Feed(OpenAndReset(ServerSession::kResetBurst, &id));
  EXPECT_EQ(GoAwayErrorCode(frames_), absl::nullopt);
  // A second refills kResetsPerSecond tokens, no more.
  Advance(absl::Seconds(1));
  Feed(OpenAndReset(ServerSession::kResetsPerSecond, &id));
  EXPECT_EQ(GoAwayErrorCode(frames_), absl::nullopt);
  Feed(OpenAndReset(1, &id));
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_EQ(GoAwayDebugData(frames_), "too_many_resets");
  // The last stream opened before the reset that ended the connection.
  EXPECT_EQ(
      dispatcher_.calls.size(),
      size_t{ServerSession::kResetBurst + ServerSession::kResetsPerSecond + 1});
}

TEST_F(ServerSessionTest, ResetTokensComeBackUpToTheBurst) {
  dispatcher_.hold_messages = true;
  Handshake();
  uint32_t id = 1;
  Feed(OpenAndReset(ServerSession::kResetBurst, &id));
  // Long enough for many bursts: the bucket holds one.
  Advance(absl::Minutes(10));
  Feed(OpenAndReset(ServerSession::kResetBurst, &id));
  EXPECT_EQ(GoAwayErrorCode(frames_), absl::nullopt);
  Feed(OpenAndReset(1, &id));
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
}

}  // namespace
}  // namespace h2rpc::transport::http2
