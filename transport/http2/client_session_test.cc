// A client session driven frame by frame: calls started on it, raw server
// bytes in, parsed frames out, time on a fake clock.
#include "transport/http2/client_session.h"

#include <nghttp2/nghttp2.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/raw_frames.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2 {
namespace {

using ::h2rpc::testing::DecodeHeaderBlocks;
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::EncodeLiteralHeaderBlock;
using ::h2rpc::testing::FindHeader;
using ::h2rpc::testing::ParseFrames;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::RawHeaders;
using ::h2rpc::testing::RstStreamErrorCode;
using testing::Framed;
using ::testing::HasSubstr;
using testing::MemoryWire;
using testing::RecordingCall;
using testing::RecordingClientListener;

std::string Uint32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

const RawHeaders kResponseHeaders = {{":status", "200"},
                                     {"content-type", "application/grpc"}};

RawHeaders Trailers(absl::string_view code, absl::string_view message = "") {
  RawHeaders trailers = {{"grpc-status", std::string(code)}};
  if (!message.empty())
    trailers.push_back({"grpc-message", std::string(message)});
  return trailers;
}

class ClientSessionTest : public ::testing::Test {
 protected:
  ClientSessionTest() {
    session_ = std::make_unique<ClientSession>(&scheduler_, "test-server",
                                               options_, &listener_);
    wire_ = std::make_unique<MemoryWire>(session_.get());
    wire_->Start();
    Take();
    // The server's side of the handshake.
    Feed(absl::StrCat(EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                      EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "")));
  }
  ~ClientSessionTest() override {
    if (!listener_.closed) {
      session_->Close(Status(StatusCode::kUnavailable, "test over"));
    }
  }

  // A call that outlives the session's streams (closed by the fixture).
  RecordingCall& NewCall() { return calls_.emplace_back(); }
  // Starts `call` with one request message and half-closes.
  void Start(RecordingCall* call, absl::string_view request = "ping") {
    call->stream.description.method_path = call->path;
    call->stream.description.authority = "test-server";
    call->stream.outgoing().buffer() = Framed(request);
    call->stream.outgoing().set_end_of_data();
    session_->StartCall(&call->stream);
    Take();
  }
  void Feed(absl::string_view bytes) {
    wire_->Feed(bytes);
    Take();
  }
  void Advance(absl::Duration duration) {
    scheduler_.AdvanceBy(duration);
    Take();
  }
  void Take() {
    output_ += wire_->TakeOutput();
    frames_ = ParseFrames(output_);
  }
  void Headers(uint32_t stream_id, const RawHeaders& headers, bool end_stream) {
    Feed(EncodeFrame(
        NGHTTP2_HEADERS,
        NGHTTP2_FLAG_END_HEADERS | (end_stream ? NGHTTP2_FLAG_END_STREAM : 0),
        stream_id, EncodeLiteralHeaderBlock(headers)));
  }
  void Data(uint32_t stream_id, absl::string_view payload,
            bool end_stream = false) {
    Feed(EncodeFrame(NGHTTP2_DATA, end_stream ? NGHTTP2_FLAG_END_STREAM : 0,
                     stream_id, payload));
  }

  io::FakeScheduler scheduler_;
  ConnectionOptions options_;
  std::deque<RecordingCall> calls_;
  RecordingClientListener listener_;
  std::unique_ptr<ClientSession> session_;
  std::unique_ptr<MemoryWire> wire_;
  std::string output_;
  std::vector<RawFrame> frames_;
};

TEST_F(ClientSessionTest, SendsThePrefaceTheRequestAndItsMessage) {
  RecordingCall& call = NewCall();
  Start(&call, "ping");
  EXPECT_EQ(output_.substr(0, 24), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  frames_ = ParseFrames(absl::string_view(output_).substr(24));
  std::map<uint32_t, std::vector<RawHeaders>> blocks;
  ASSERT_TRUE(DecodeHeaderBlocks(frames_, &blocks));
  ASSERT_EQ(blocks[1].size(), 1u);
  EXPECT_EQ(FindHeader(blocks[1][0], ":path"), "/test.Echo/Echo");
  EXPECT_EQ(FindHeader(blocks[1][0], "te"), "trailers");
  std::string data;
  bool ended = false;
  for (const RawFrame& frame : frames_) {
    if (frame.type != NGHTTP2_DATA || frame.stream_id != 1) continue;
    data += frame.payload;
    ended = frame.flags & NGHTTP2_FLAG_END_STREAM;
  }
  EXPECT_EQ(data, Framed("ping"));
  EXPECT_TRUE(ended);
}

TEST_F(ClientSessionTest, AResponseWithTrailersEndsTheCall) {
  RecordingCall& call = NewCall();
  Start(&call);
  Headers(1, kResponseHeaders, false);
  EXPECT_TRUE(call.got_initial_metadata);
  Data(1, Framed("pong"));
  EXPECT_EQ(call.messages, std::vector<std::string>{"pong"});
  EXPECT_FALSE(call.closed);
  Headers(1, Trailers("0"), true);
  EXPECT_TRUE(call.closed);
  EXPECT_TRUE(call.status.ok()) << call.status.ToString();
}

TEST_F(ClientSessionTest, ATrailersOnlyResponseCarriesTheStatus) {
  RecordingCall& call = NewCall();
  Start(&call);
  RawHeaders headers = kResponseHeaders;
  headers.push_back({"grpc-status", "5"});
  headers.push_back({"grpc-message", "no%20such%20thing"});
  Headers(1, headers, true);
  EXPECT_TRUE(call.closed);
  EXPECT_FALSE(call.got_initial_metadata);
  EXPECT_EQ(call.status.code(), StatusCode::kNotFound);
  EXPECT_EQ(call.status.message(), "no such thing");
}

// RFC 9113 section 8: a malformed response is reset with PROTOCOL_ERROR and
// fails its call with INTERNAL; the connection goes on.
TEST_F(ClientSessionTest, MalformedResponsesFailTheCallWithProtocolError) {
  auto with = [](RawHeaders more) {
    RawHeaders headers = kResponseHeaders;
    headers.insert(headers.end(), more.begin(), more.end());
    return headers;
  };
  struct Case {
    RawHeaders headers;
    std::string data;          // DATA after the headers, if any
    RawHeaders trailers;       // sent when not empty
    bool trailers_end = true;  // END_STREAM on the trailers
  };
  const Case kCases[] = {
      {with({{"X-Upper", "v"}}), "", {}},
      {with({{"connection", "close"}}), "", {}},
      {with({{"x-ctl", std::string("a\x01z")}}), "", {}},
      {with({{":path", "/x"}}), "", {}},
      {{{"content-type", "application/grpc"}}, "", {}},
      {{{":status", "101"}}, "", {}},
      {with({{"content-length", "1"}}), Framed("pong"), {}},
      {kResponseHeaders, Framed("pong"), {{":status", "200"}}},
      {kResponseHeaders, Framed("pong"), Trailers("0"), false},
  };
  uint32_t stream_id = 1;
  for (const Case& c : kCases) {
    RecordingCall& call = NewCall();
    Start(&call);
    Headers(stream_id, c.headers, false);
    if (!c.data.empty()) Data(stream_id, c.data);
    if (!c.trailers.empty()) Headers(stream_id, c.trailers, c.trailers_end);
    EXPECT_TRUE(call.closed) << stream_id;
    EXPECT_EQ(call.status.code(), StatusCode::kInternal)
        << stream_id << ": " << call.status.ToString();
    EXPECT_THAT(call.status.message(),
                HasSubstr("malformed response from test-server: "))
        << stream_id;
    EXPECT_EQ(RstStreamErrorCode(ParseFrames(output_.substr(24)), stream_id),
              NGHTTP2_PROTOCOL_ERROR)
        << stream_id;
    stream_id += 2;
  }
  RecordingCall& call = NewCall();
  Start(&call);
  Headers(stream_id, kResponseHeaders, false);
  Data(stream_id, Framed("pong"));
  Headers(stream_id, Trailers("0"), true);
  EXPECT_TRUE(call.status.ok()) << call.status.ToString();
  EXPECT_FALSE(listener_.closed);
}

TEST_F(ClientSessionTest, TheDeadlineRunsOnTheSchedulersClockAndResets) {
  RecordingCall& call = NewCall();
  call.stream.description.deadline = scheduler_.Now() + absl::Seconds(1);
  Start(&call);
  std::map<uint32_t, std::vector<RawHeaders>> blocks;
  ASSERT_TRUE(DecodeHeaderBlocks(ParseFrames(output_.substr(24)), &blocks));
  EXPECT_EQ(FindHeader(blocks[1][0], "grpc-timeout"), "1000000u");
  Advance(absl::Seconds(1) - absl::Nanoseconds(1));
  EXPECT_FALSE(call.closed);
  Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(call.closed);
  EXPECT_EQ(call.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(RstStreamErrorCode(ParseFrames(output_.substr(24)), 1),
            NGHTTP2_CANCEL);
}

TEST_F(ClientSessionTest, ARefusedStreamIsOfferedForATransparentRetry) {
  RecordingCall& call = NewCall();
  Start(&call);
  Feed(EncodeFrame(NGHTTP2_RST_STREAM, 0, 1, Uint32(NGHTTP2_REFUSED_STREAM)));
  EXPECT_TRUE(call.refused);
  EXPECT_TRUE(call.closed);  // the recorder declines the retry
  EXPECT_EQ(call.status.code(), StatusCode::kUnavailable);
}

TEST_F(ClientSessionTest, ALargeRequestStillQueuedWhenTheCallEndsIsCopiedBack) {
  RecordingCall& call = NewCall();
  call.stream.description.method_path = call.path;
  call.stream.description.authority = "test-server";
  std::string body(OutgoingData::kRetainedCapacity + 1, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>(i % 251);
  const std::string framed = Framed(body);
  call.stream.outgoing().buffer() = framed;
  call.stream.outgoing().set_end_of_data();
  session_->StartCall(&call.stream);
  // The wire takes only part of what is queued: the request's HEADERS and
  // some of its DATA; the rest of the first window's DATA stays lent.
  iovec pieces[64];
  ASSERT_GT(session_->PendingOutputPieces(pieces, 64), 2u);
  EXPECT_TRUE(call.stream.outgoing().lent());
  std::string written;
  for (int i = 0; i < 2; ++i) {
    written.append(static_cast<const char*>(pieces[i].iov_base),
                   pieces[i].iov_len);
  }
  session_->ConsumeOutput(written.size());

  // The server answers before reading the request (and resets the rest of
  // it, as gRPC servers do); the call ends and its buffer may be reused at
  // once (by another thread, in the rpc layer).
  RawHeaders headers = kResponseHeaders;
  headers.push_back({"grpc-status", "8"});
  wire_->Feed(absl::StrCat(
      EncodeFrame(NGHTTP2_HEADERS,
                  NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                  EncodeLiteralHeaderBlock(headers)),
      EncodeFrame(NGHTTP2_RST_STREAM, 0, 1, Uint32(NGHTTP2_NO_ERROR))));
  ASSERT_TRUE(call.closed);
  EXPECT_EQ(call.status.code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(call.stream.outgoing().lent());
  call.stream.Reset();
  call.stream.outgoing().buffer().assign(framed.size(), 'x');

  // What was queued goes out unchanged.
  written += wire_->TakeOutput();
  std::string data;
  for (const RawFrame& frame : ParseFrames(absl::string_view(written))) {
    if (frame.type == NGHTTP2_DATA && frame.stream_id == 1) {
      data += frame.payload;
    }
  }
  EXPECT_GE(data.size(), OutputQueue::kMinLentBytes);
  EXPECT_EQ(data, framed.substr(0, data.size()));
}

TEST_F(ClientSessionTest, GoAwayDrainsTheConnection) {
  RecordingCall& call = NewCall();
  Start(&call);
  Feed(EncodeFrame(NGHTTP2_GOAWAY, 0, 0,
                   absl::StrCat(Uint32(1), Uint32(NGHTTP2_NO_ERROR))));
  EXPECT_TRUE(listener_.draining);
  EXPECT_FALSE(session_->accepting_calls());
  // The stream below the last stream id still completes.
  Headers(1, kResponseHeaders, false);
  Headers(1, Trailers("0"), true);
  EXPECT_TRUE(call.closed);
  EXPECT_TRUE(call.status.ok()) << call.status.ToString();
  EXPECT_TRUE(listener_.closed);
}

TEST_F(ClientSessionTest, EveryBadResponseHasItsStatus) {
  struct Case {
    const char* what;
    std::vector<std::string> frames;  // the server's frames on stream 1
    StatusCode code;
    const char* message;
  };
  const auto headers = [](const RawHeaders& h, bool end) {
    return EncodeFrame(
        NGHTTP2_HEADERS,
        NGHTTP2_FLAG_END_HEADERS | (end ? NGHTTP2_FLAG_END_STREAM : 0), 1,
        EncodeLiteralHeaderBlock(h));
  };
  const std::vector<Case> cases = {
      {"HTTP 404",
       {headers({{":status", "404"}}, true)},
       StatusCode::kUnimplemented,
       "404"},
      {"no content-type",
       {headers({{":status", "200"}}, true)},
       StatusCode::kUnknown,
       "content-type"},
      // nghttp2 treats it as a connection error.
      {"DATA before headers",
       {EncodeFrame(NGHTTP2_DATA, 0, 1, Framed("x"))},
       StatusCode::kUnavailable,
       "(GOAWAY PROTOCOL_ERROR)"},
      {"no trailers",
       {headers(kResponseHeaders, false),
        EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, Framed("x"))},
       StatusCode::kInternal,
       "without trailers"},
      {"a truncated message",
       {headers(kResponseHeaders, false),
        EncodeFrame(NGHTTP2_DATA, 0, 1, Framed("xyz").substr(0, 6)),
        headers(Trailers("0"), true)},
       StatusCode::kInternal,
       ""},
      {"an unknown grpc-encoding",
       {headers({{":status", "200"},
                 {"content-type", "application/grpc"},
                 {"grpc-encoding", "snappy"}},
                false)},
       StatusCode::kInternal,
       "snappy"},
      {"grpc-status out of range",
       {headers(kResponseHeaders, false), headers(Trailers("99"), true)},
       StatusCode::kUnknown,
       "99"},
      {"a header list over the limit",
       {headers({{":status", "200"},
                 {"content-type", "application/grpc"},
                 {"x-big", std::string(5000, 'b')}},
                false)},
       StatusCode::kResourceExhausted,
       "max_header_list_size"},
  };
  options_.max_header_list_size = 4096;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    // A fresh session for each: stream 1 every time.
    RecordingClientListener listener;
    ClientSession session(&scheduler_, "test-server", options_, &listener);
    MemoryWire wire(&session);
    wire.Start();
    wire.Feed(EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""));
    RecordingCall call;
    call.stream.description.method_path = call.path;
    call.stream.description.authority = "test-server";
    session.StartCall(&call.stream);
    static_cast<void>(wire.TakeOutput());
    for (const std::string& frame : c.frames) {
      wire.Feed(frame);
      static_cast<void>(wire.TakeOutput());
    }
    EXPECT_TRUE(call.closed);
    EXPECT_EQ(call.status.code(), c.code) << call.status.ToString();
    EXPECT_THAT(call.status.message(), HasSubstr(c.message));
    if (!listener.closed) session.Close(Status(StatusCode::kUnavailable, ""));
  }
}

TEST_F(ClientSessionTest, ClosingFailsEveryOpenCall) {
  RecordingCall& a = NewCall();
  RecordingCall& b = NewCall();
  b.path = "/test.Echo/Other";
  Start(&a);
  Start(&b);
  wire_->PeerCloses();
  EXPECT_TRUE(listener_.closed);
  for (RecordingCall* call : {&a, &b}) {
    EXPECT_TRUE(call->closed);
    EXPECT_EQ(call->status.code(), StatusCode::kUnavailable);
    EXPECT_THAT(call->status.message(), HasSubstr("closed by peer"));
  }
}

// Records the connection-level events the channel builds its
// connectivity state on.
class LifecycleListener final : public ClientSession::Listener {
 public:
  void OnConnectionClosed(ClientSession*, const Status&) override {
    closed = true;
  }
  void OnConnectionReady(ClientSession* session) override {
    ++ready;
    // Called once the server's SETTINGS have been applied: the session
    // says so too.
    ready_saw_handshake_done = session->handshake_done();
  }
  void OnGoAwayReceived(ClientSession*, uint32_t error_code,
                        absl::string_view debug_data) override {
    goaways.emplace_back(error_code, std::string(debug_data));
  }
  void OnConnectionDraining(ClientSession*) override { ++draining; }

  bool closed = false;
  int ready = 0;
  bool ready_saw_handshake_done = false;
  int draining = 0;
  std::vector<std::pair<uint32_t, std::string>> goaways;
};

TEST(ClientSessionLifecycleTest, ReadyOnlyOnceTheServersSettingsArrive) {
  io::FakeScheduler scheduler;
  LifecycleListener listener;
  ClientSession session(&scheduler, "test-server", ConnectionOptions(),
                        &listener);
  MemoryWire wire(&session);
  wire.Start();
  static_cast<void>(wire.TakeOutput());  // our preface and SETTINGS
  EXPECT_EQ(listener.ready, 0);
  // Part of the server's SETTINGS frame is not its handshake yet.
  const std::string settings =
      EncodeFrame(NGHTTP2_SETTINGS, 0, 0,
                  absl::StrCat(std::string("\0\x03", 2), Uint32(100)));
  wire.Feed(settings.substr(0, 12));
  EXPECT_EQ(listener.ready, 0);
  wire.Feed(settings.substr(12));
  EXPECT_EQ(listener.ready, 1);
  EXPECT_TRUE(listener.ready_saw_handshake_done);
  // Later SETTINGS change nothing.
  wire.Feed(EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""));
  EXPECT_EQ(listener.ready, 1);
  session.Close(Status(StatusCode::kUnavailable, "test over"));
  EXPECT_TRUE(listener.closed);
}

TEST(ClientSessionLifecycleTest,
     AConnectionClosedBeforeTheHandshakeIsNotReady) {
  io::FakeScheduler scheduler;
  LifecycleListener listener;
  ClientSession session(&scheduler, "test-server", ConnectionOptions(),
                        &listener);
  MemoryWire wire(&session);
  wire.Start();
  static_cast<void>(wire.TakeOutput());
  wire.PeerCloses();
  EXPECT_TRUE(listener.closed);
  EXPECT_EQ(listener.ready, 0);
  EXPECT_FALSE(session.handshake_done());
}

TEST(ClientSessionLifecycleTest,
     EveryGoAwayReachesTheListenerWithItsDebugData) {
  io::FakeScheduler scheduler;
  LifecycleListener listener;
  ClientSession session(&scheduler, "test-server", ConnectionOptions(),
                        &listener);
  MemoryWire wire(&session);
  wire.Start();
  wire.Feed(EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""));
  // A graceful shutdown's first GOAWAY, then one with an error and data
  // (in one read: with no stream open the client closes after the first).
  wire.Feed(absl::StrCat(
      EncodeFrame(NGHTTP2_GOAWAY, 0, 0,
                  absl::StrCat(Uint32(0x7fffffff), Uint32(NGHTTP2_NO_ERROR))),
      EncodeFrame(NGHTTP2_GOAWAY, 0, 0,
                  absl::StrCat(Uint32(0), Uint32(NGHTTP2_ENHANCE_YOUR_CALM),
                               "too_many_pings"))));
  ASSERT_EQ(listener.goaways.size(), 2u);
  EXPECT_EQ(listener.goaways[0],
            std::make_pair(uint32_t{NGHTTP2_NO_ERROR}, std::string()));
  EXPECT_EQ(listener.goaways[1],
            std::make_pair(uint32_t{NGHTTP2_ENHANCE_YOUR_CALM},
                           std::string("too_many_pings")));
  EXPECT_EQ(listener.draining, 1);  // once per connection
  EXPECT_FALSE(session.accepting_calls());
  if (!listener.closed) {
    session.Close(Status(StatusCode::kUnavailable, "test over"));
  }
}

}  // namespace
}  // namespace h2rpc::transport::http2
