// Connection-level behaviour every session shares (Session), driven frame
// by frame through a server session: the handshake deadline, fatal errors
// with their GOAWAY and linger, floods, max_connection_idle, a failed
// submit, output in pieces, the output queue's bound on adopted bodies
// (from write_buffer_limit), keepalive PINGs and their timeout, PING
// enforcement, connection age and the graceful double-GOAWAY sequence.
#include "transport/http2/session.h"

#include <nghttp2/nghttp2.h>
#include <sys/uio.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/raw_frames.h"
#include "transport/http2/bdp_estimator.h"
#include "transport/http2/client_session.h"
#include "transport/http2/server_session.h"
#include "transport/http2/stream_base.h"
#include "transport/http2/testing/server_session_fixture.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2 {
namespace {

using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::EncodeLiteralHeaderBlock;
using ::h2rpc::testing::GoAwayErrorCode;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kClientPreface;
using ::h2rpc::testing::ParseFrames;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::RawHeaders;
using testing::EchoDispatcher;
using testing::Framed;
using ::testing::HasSubstr;

// The last stream id of a graceful shutdown's first GOAWAY.
constexpr uint32_t kShutdownNotice = (1u << 31) - 1;

uint32_t ReadUint32(absl::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 |
         uint32_t{p[3]};
}

struct GoAway {
  uint32_t last_stream_id;
  uint32_t error_code;
  std::string debug_data;
};

// The GOAWAY frames in `frames`, in order.
std::vector<GoAway> GoAwaysIn(const std::vector<RawFrame>& frames) {
  std::vector<GoAway> goaways;
  for (const RawFrame& frame : frames) {
    if (frame.type != NGHTTP2_GOAWAY || frame.payload.size() < 8) continue;
    goaways.push_back({ReadUint32(frame.payload) & 0x7fffffffu,
                       ReadUint32(absl::string_view(frame.payload).substr(4)),
                       frame.payload.substr(8)});
  }
  return goaways;
}

// The opaque data of the PINGs (not ACKs) in `frames`, in order.
std::vector<std::string> PingsIn(const std::vector<RawFrame>& frames) {
  std::vector<std::string> pings;
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_PING && (frame.flags & NGHTTP2_FLAG_ACK) == 0) {
      pings.push_back(frame.payload);
    }
  }
  return pings;
}

// Index of the first frame of `type` (not an ACK), or frames.size().
size_t IndexOf(const std::vector<RawFrame>& frames, uint8_t type) {
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].type == type && (frames[i].flags & NGHTTP2_FLAG_ACK) == 0) {
      return i;
    }
  }
  return frames.size();
}

std::string PingAck(absl::string_view opaque) {
  return EncodeFrame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, opaque);
}
std::string Ping(absl::string_view opaque = "12345678") {
  return EncodeFrame(NGHTTP2_PING, 0, 0, opaque);
}

class SessionTest : public testing::ServerSessionFixture {
 protected:
  void HoldCall(uint32_t stream_id) {
    Feed(EncodeFrame(
        NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, stream_id,
        EncodeLiteralHeaderBlock(GrpcRequestHeaders("/test.Echo/Hold", 1))));
  }
  std::vector<GoAway> GoAways() const { return GoAwaysIn(frames_); }
  std::vector<std::string> Pings() const { return PingsIn(frames_); }
  // The frames after the GOAWAY (none may follow it).
  size_t FramesAfterGoAway() const {
    for (size_t i = 0; i < frames_.size(); ++i) {
      if (frames_[i].type == NGHTTP2_GOAWAY) return frames_.size() - i - 1;
    }
    return 0;
  }
};

TEST_F(SessionTest, APeerThatNeverSendsSettingsIsDroppedAtTheHandshakeTimeout) {
  options_.handshake_timeout = absl::Seconds(5);
  options_.close_linger = absl::Seconds(1);
  StartSession();
  Feed(kClientPreface);  // and no SETTINGS
  Advance(absl::Seconds(5) - absl::Nanoseconds(1));
  EXPECT_FALSE(GoAwayErrorCode(frames_).has_value());
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_NO_ERROR);
  // The GOAWAY is out: the write side is shut, and the connection lingers
  // until the linger ends.
  EXPECT_TRUE(wire_->write_shut());
  EXPECT_FALSE(wire_->closed());
  Advance(absl::Seconds(1));
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.closed);
}

TEST_F(SessionTest, WhatABurstLeftCachedIsTrimmedOnceTheConnectionStaysIdle) {
  Handshake();
  for (uint32_t id = 1; id <= 99; id += 2) HoldCall(id);
  ASSERT_EQ(dispatcher_.calls.size(), 50u);
  for (auto& call : dispatcher_.calls) call->Finish(Status());
  Take();
  const size_t burst = session_->nghttp2_cached_bytes();
  EXPECT_GT(burst, Session::kIdleCachedBytes);
  Advance(Session::kIdleTrimDelay - absl::Milliseconds(1));
  EXPECT_EQ(session_->nghttp2_cached_bytes(), burst);
  Advance(absl::Milliseconds(1));
  EXPECT_LE(session_->nghttp2_cached_bytes(), Session::kIdleCachedBytes);
}

TEST_F(SessionTest, AConnectionBusyAgainBeforeTheTrimDelayKeepsItsCache) {
  Handshake();
  for (uint32_t id = 1; id <= 99; id += 2) HoldCall(id);
  for (auto& call : dispatcher_.calls) call->Finish(Status());
  Take();
  Advance(Session::kIdleTrimDelay / 2);
  HoldCall(101);
  ASSERT_EQ(dispatcher_.calls.size(), 51u);
  const size_t busy = session_->nghttp2_cached_bytes();
  EXPECT_GT(busy, Session::kIdleCachedBytes);
  Advance(Session::kIdleTrimDelay);
  EXPECT_EQ(session_->nghttp2_cached_bytes(), busy);
  // Idle again: trimmed a delay later.
  dispatcher_.calls.back()->Finish(Status());
  Take();
  Advance(Session::kIdleTrimDelay);
  EXPECT_LE(session_->nghttp2_cached_bytes(), Session::kIdleCachedBytes);
}

TEST_F(SessionTest, AProtocolErrorSendsGoAwayThenWaitsForThePeerToClose) {
  Handshake();
  HoldCall(1);
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  // A frame larger than SETTINGS_MAX_FRAME_SIZE is a connection error
  // (RFC 9113 section 4.2) nghttp2 answers itself.
  Feed(EncodeFrame(NGHTTP2_DATA, 0, 1, std::string(20000, 'x')));
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_FRAME_SIZE_ERROR);
  EXPECT_EQ(FramesAfterGoAway(), 0u);
  EXPECT_TRUE(wire_->write_shut());
  EXPECT_TRUE(session_->closed());
  // What the peer still sends is dropped, not processed.
  HoldCall(3);
  EXPECT_EQ(dispatcher_.calls.size(), 1u);
  EXPECT_FALSE(wire_->closed());
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
}

TEST_F(SessionTest, ALingerEndsAtCloseLingerIfThePeerNeverCloses) {
  options_.close_linger = absl::Seconds(2);
  Handshake();
  Feed(EncodeFrame(NGHTTP2_DATA, 0, 0, "x"));  // DATA on stream 0
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(wire_->write_shut());
  Advance(absl::Seconds(2) - absl::Nanoseconds(1));
  EXPECT_FALSE(wire_->closed());
  Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.closed);
}

TEST_F(SessionTest, AFloodOfPingsIsAnsweredWithEnhanceYourCalm) {
  // nghttp2's own bound on queued ACKs, not PING enforcement.
  options_.keepalive.max_ping_strikes = 0;
  Handshake();
  // The peer never reads: PING ACKs pile up in nghttp2's queue.
  std::string pings;
  for (int i = 0; i < 2000; ++i) {
    pings += EncodeFrame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
  }
  wire_->Feed(pings);
  Take();
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_EQ(FramesAfterGoAway(), 0u);
}

TEST_F(SessionTest, AnIdleConnectionIsShutDownGracefully) {
  options_.keepalive.max_connection_idle = absl::Seconds(10);
  Handshake();
  HoldCall(1);
  // Not idle while a stream is open.
  Advance(absl::Seconds(30));
  EXPECT_FALSE(GoAwayErrorCode(frames_).has_value());
  dispatcher_.calls[0]->Finish(Status());
  Take();
  Feed(EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, ""));
  Advance(absl::Seconds(10) - absl::Nanoseconds(1));
  EXPECT_FALSE(GoAwayErrorCode(frames_).has_value());
  Advance(absl::Nanoseconds(1));
  // The graceful sequence: GOAWAY(2^31-1) and a PING, then, once the PING
  // is answered, the final GOAWAY.
  ASSERT_EQ(GoAways().size(), 1u);
  EXPECT_EQ(GoAways()[0].last_stream_id, kShutdownNotice);
  EXPECT_EQ(GoAways()[0].error_code, NGHTTP2_NO_ERROR);
  ASSERT_EQ(Pings().size(), 1u);
  EXPECT_FALSE(wire_->write_shut());
  Feed(PingAck(Pings()[0]));
  ASSERT_EQ(GoAways().size(), 2u);
  EXPECT_EQ(GoAways()[1].last_stream_id, 1u);
  EXPECT_TRUE(wire_->write_shut());
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
}

TEST_F(SessionTest, TheIdleClockRestartsWithEachIdlePeriod) {
  options_.keepalive.max_connection_idle = absl::Seconds(10);
  Handshake();
  // Calls 8 s apart, each ending at once: the connection is never idle for
  // 10 s, though the first idle period began long before the last call.
  uint32_t stream_id = 1;
  for (int i = 0; i < 5; ++i) {
    Advance(absl::Seconds(8));
    HoldCall(stream_id);
    dispatcher_.calls.back()->Finish(Status());
    Take();
    Feed(EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, stream_id, ""));
    stream_id += 2;
  }
  Advance(absl::Seconds(10) - absl::Nanoseconds(1));
  EXPECT_TRUE(GoAways().empty());
  Advance(absl::Nanoseconds(1));
  ASSERT_EQ(GoAways().size(), 1u);
  EXPECT_EQ(GoAways()[0].last_stream_id, kShutdownNotice);
}

TEST_F(SessionTest, AFailedSubmitEndsTheConnectionWithInternalError) {
  Handshake();
  HoldCall(1);
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  EXPECT_FALSE(session_->Submitted(NGHTTP2_ERR_NOMEM, "nghttp2_submit_test"));
  Take();
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_INTERNAL_ERROR);
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
  EXPECT_TRUE(session_->Submitted(0, "nghttp2_submit_test"));
}

TEST_F(SessionTest, APeerClosingFirstEndsTheConnection) {
  Handshake();
  HoldCall(1);
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
}

TEST_F(SessionTest, OutputIsTakenInPiecesAndWaitsForThePeersWindows) {
  Handshake();
  const std::string message = Framed(std::string(100000, 'z'));
  std::string request = EncodeFrame(
      NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
      EncodeLiteralHeaderBlock(GrpcRequestHeaders("/test.Echo/Echo", 1)));
  for (size_t at = 0; at < message.size(); at += 16384) {
    const bool last = at + 16384 >= message.size();
    request += EncodeFrame(NGHTTP2_DATA, last ? NGHTTP2_FLAG_END_STREAM : 0, 1,
                           message.substr(at, 16384));
  }
  wire_->Feed(request);
  const auto echoed = [this] {
    output_ += wire_->TakeOutput(/*max_write=*/7);
    frames_ = ParseFrames(output_);
    std::string data;
    for (const RawFrame& frame : frames_) {
      if (frame.type == NGHTTP2_DATA && frame.stream_id == 1) {
        data += frame.payload;
      }
    }
    return data;
  };
  // The client's windows (65535, the default) stop the echo...
  EXPECT_EQ(echoed().size(), 65535u);
  // ...until it opens them.
  const std::string increment = {0, 1, 0, 0};  // 65536
  wire_->Feed(
      absl::StrCat(EncodeFrame(NGHTTP2_WINDOW_UPDATE, 0, 0, increment),
                   EncodeFrame(NGHTTP2_WINDOW_UPDATE, 0, 1, increment)));
  const std::string all = echoed();
  EXPECT_EQ(all.size(), message.size());
  EXPECT_TRUE(all == message);
}

// A response of 32 KiB (lent to the output queue: a finished body in a
// buffer of `capacity` bytes) and its trailers, produced in one round; the
// call ends, so the stream clears its body while the queue still holds its
// bytes. Whether the queue adopted the buffer (the bytes stay where they
// are) or copied them (past its bound, from write_buffer_limit).
class AdoptionTest : public SessionTest {
 protected:
  bool QueueAdoptsABodyOf(size_t capacity) {
    Handshake();
    HoldCall(1);
    EXPECT_EQ(dispatcher_.calls.size(), 1u);
    if (dispatcher_.calls.size() != 1) return false;
    EchoDispatcher::Call& call = *dispatcher_.calls[0];
    OutgoingData& outgoing = call.stream()->outgoing();
    const std::string message = Framed(std::string(32 << 10, 'r'));
    outgoing.buffer().reserve(capacity);
    outgoing.buffer().assign(message);
    EXPECT_GE(outgoing.buffer().capacity(), capacity);
    const char* const body = outgoing.buffer().data();
    const size_t size = outgoing.buffer().size();
    EXPECT_TRUE(outgoing.ChargeAppended().ok());
    call.stream()->ResumeSend();
    call.Finish(Status());
    iovec pieces[64];
    const size_t count = session_->PendingOutputPieces(pieces, 64);
    EXPECT_TRUE(call.released);
    EXPECT_TRUE(outgoing.buffer().empty());
    bool in_body = false;
    for (size_t i = 0; i < count; ++i) {
      const char* const at = static_cast<const char*>(pieces[i].iov_base);
      if (at >= body && at < body + size) in_body = true;
    }
    // Whatever the queue did, the peer gets the message.
    Take();
    std::string data;
    for (const RawFrame& frame : frames_) {
      if (frame.type == NGHTTP2_DATA && frame.stream_id == 1) {
        data += frame.payload;
      }
    }
    EXPECT_TRUE(data == message);
    return in_body;
  }
};

TEST_F(AdoptionTest, TheDefaultWriteBufferLimitAdopts2MiBBodies) {
  // 16 x 256 KiB: 4 MiB of adopted buffers.
  EXPECT_TRUE(QueueAdoptsABodyOf(2 << 20));
}

TEST_F(AdoptionTest, ASmallerWriteBufferLimitCopiesFromThem) {
  // 16 x 64 KiB: 1 MiB.
  options_.write_buffer_limit = 64 << 10;
  EXPECT_FALSE(QueueAdoptsABodyOf(2 << 20));
}

TEST_F(AdoptionTest, ASmallerWriteBufferLimitAdoptsWhatFitsItsBound) {
  options_.write_buffer_limit = 64 << 10;
  EXPECT_TRUE(QueueAdoptsABodyOf(512 << 10));
}

// Keepalive (server side; the rules are the same for clients).

class KeepaliveTest : public SessionTest {
 protected:
  KeepaliveTest() {
    options_.keepalive.time = absl::Seconds(10);
    options_.keepalive.timeout = absl::Seconds(3);
  }
  // A frame that is not a PING, to show the peer is alive.
  void PeerSendsSomething() {
    Feed(EncodeFrame(NGHTTP2_WINDOW_UPDATE, 0, 0, std::string("\0\0\0\1", 4)));
  }
};

TEST_F(KeepaliveTest, PingsAfterTimeWithoutAFrame) {
  Handshake();
  HoldCall(1);
  Advance(absl::Seconds(10) - absl::Nanoseconds(1));
  EXPECT_TRUE(Pings().empty());
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(Pings().size(), 1u);
}

TEST_F(KeepaliveTest, NoPingWhileFramesKeepArriving) {
  Handshake();
  HoldCall(1);
  for (int i = 0; i < 60; ++i) {
    Advance(absl::Seconds(9));
    PeerSendsSomething();
  }
  EXPECT_TRUE(Pings().empty());
  EXPECT_FALSE(wire_->closed());
}

TEST_F(KeepaliveTest, NoPingWithoutStreamsUnlessPermitted) {
  Handshake();
  Advance(absl::Hours(1));
  EXPECT_TRUE(Pings().empty());
  // A stream opens: the PING is due `time` after its HEADERS.
  HoldCall(1);
  Advance(absl::Seconds(10));
  EXPECT_EQ(Pings().size(), 1u);
}

TEST_F(KeepaliveTest, PermitWithoutCallsPingsAnIdleConnection) {
  options_.keepalive.permit_without_calls = true;
  Handshake();
  Advance(absl::Seconds(10));
  EXPECT_EQ(Pings().size(), 1u);
}

TEST_F(KeepaliveTest, NoAnswerWithinTimeoutClosesTheConnectionAndCancelsCalls) {
  Handshake();
  HoldCall(1);
  Advance(absl::Seconds(10));
  ASSERT_EQ(Pings().size(), 1u);
  Advance(absl::Seconds(3) - absl::Nanoseconds(1));
  EXPECT_FALSE(wire_->closed());
  EXPECT_FALSE(dispatcher_.calls[0]->cancelled);
  Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.closed);
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
}

TEST_F(KeepaliveTest, AnAckKeepsTheConnection) {
  Handshake();
  HoldCall(1);  // read now
  io::MonotonicTime last_read = scheduler_.Now();
  for (size_t i = 0; i < 5; ++i) {
    // The PING is due `time` after the last frame from the peer.
    Advance(last_read + absl::Seconds(10) - scheduler_.Now() -
            absl::Nanoseconds(1));
    EXPECT_EQ(Pings().size(), i);
    Advance(absl::Nanoseconds(1));
    ASSERT_EQ(Pings().size(), i + 1);
    // Answered a second later: still open past the timeout.
    Advance(absl::Seconds(1));
    Feed(PingAck(Pings().back()));
    last_read = scheduler_.Now();
    Advance(absl::Seconds(3));
    EXPECT_FALSE(wire_->closed());
  }
  EXPECT_FALSE(dispatcher_.calls[0]->cancelled);
}

// A client session on a fake clock whose server's SETTINGS (and the ACK of
// its own) have arrived, with one call started.
struct ClientWithOneCall {
  explicit ClientWithOneCall(const ConnectionOptions& options)
      : session(&scheduler, "test-server", options, &listener), wire(&session) {
    wire.Start();
    wire.Feed(
        absl::StrCat(EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                     EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "")));
    call.stream.description.method_path = call.path;
    call.stream.description.authority = "test-server";
    call.stream.outgoing().buffer() = Framed("request");
    call.stream.outgoing().set_end_of_data();
    session.StartCall(&call.stream);
  }

  io::FakeScheduler scheduler;
  testing::RecordingClientListener listener;
  testing::RecordingCall call;
  ClientSession session;
  testing::MemoryWire wire;
};

TEST(ClientKeepaliveTest, NoAnswerFailsTheCallsWithUnavailable) {
  ConnectionOptions options;
  options.keepalive.time = absl::Seconds(10);
  options.keepalive.timeout = absl::Seconds(3);
  options.keepalive.permit_without_calls = true;
  ClientWithOneCall client(options);
  std::string output = client.wire.TakeOutput();
  client.scheduler.AdvanceBy(absl::Seconds(10));
  output += client.wire.TakeOutput();
  ASSERT_GE(output.size(), kClientPreface.size());
  EXPECT_EQ(PingsIn(ParseFrames(output.substr(kClientPreface.size()))).size(),
            1u);
  client.scheduler.AdvanceBy(absl::Seconds(3));
  EXPECT_TRUE(client.wire.closed());
  EXPECT_TRUE(client.listener.closed);
  ASSERT_TRUE(client.call.closed);
  EXPECT_EQ(client.call.status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(client.call.status.message(),
              HasSubstr("keepalive watchdog timeout"));
  EXPECT_THAT(client.call.status.message(),
              HasSubstr("keepalive_timeout (3s)"));
}

// PING enforcement.

class PingStrikesTest : public SessionTest {
 protected:
  PingStrikesTest() {
    options_.keepalive.min_time = absl::Minutes(5);
    options_.keepalive.max_ping_strikes = 2;
  }
  // Sends an echo request on `stream_id` without ending it; the server
  // sends HEADERS and DATA back.
  void EchoMessage(uint32_t stream_id, bool first) {
    std::string bytes;
    if (first) {
      bytes = EncodeFrame(
          NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, stream_id,
          EncodeLiteralHeaderBlock(GrpcRequestHeaders("/test.Echo/Echo", 1)));
    }
    bytes += EncodeFrame(NGHTTP2_DATA, 0, stream_id, Framed("x"));
    Feed(bytes);
  }
  size_t DataFrames() const {
    size_t n = 0;
    for (const RawFrame& frame : frames_) n += frame.type == NGHTTP2_DATA;
    return n;
  }
};

TEST_F(PingStrikesTest, TooManyEarlyPingsEndTheConnectionWithTooManyPings) {
  Handshake();
  HoldCall(1);
  // The first PING is free; the next two are strikes 1 and 2.
  for (int i = 0; i < 3; ++i) {
    Advance(absl::Seconds(1));
    Feed(Ping());
  }
  EXPECT_TRUE(GoAways().empty());
  EXPECT_FALSE(session_->closed());
  // Strike 3, one more than max_ping_strikes.
  Advance(absl::Seconds(1));
  Feed(Ping());
  ASSERT_EQ(GoAways().size(), 1u);
  EXPECT_EQ(GoAways()[0].error_code, NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_EQ(GoAways()[0].debug_data, "too_many_pings");
  EXPECT_EQ(GoAways()[0].last_stream_id, 1u);
  EXPECT_EQ(FramesAfterGoAway(), 0u);
  EXPECT_TRUE(session_->closed());
  EXPECT_TRUE(wire_->write_shut());
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
}

TEST_F(PingStrikesTest, WhatFollowsTheFatalPingIsNotProcessed) {
  Handshake();
  std::string bytes;
  for (int i = 0; i < 4; ++i) bytes += Ping();
  bytes += EncodeFrame(
      NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
      EncodeLiteralHeaderBlock(GrpcRequestHeaders("/test.Echo/Hold", 1)));
  Feed(bytes);
  ASSERT_EQ(GoAways().size(), 1u);
  EXPECT_EQ(GoAways()[0].debug_data, "too_many_pings");
  EXPECT_TRUE(dispatcher_.calls.empty());
}

TEST_F(PingStrikesTest, PingsSpacedByMinTimeAreNotStrikes) {
  Handshake();
  HoldCall(1);
  for (int i = 0; i < 10; ++i) {
    Feed(Ping());
    Advance(absl::Minutes(5));
  }
  EXPECT_TRUE(GoAways().empty());
  EXPECT_FALSE(session_->closed());
}

TEST_F(PingStrikesTest, PingsInterleavedWithSentDataAreNotStrikes) {
  Handshake();
  for (int i = 0; i < 10; ++i) {
    EchoMessage(1, /*first=*/i == 0);
    ASSERT_EQ(DataFrames(), static_cast<size_t>(i + 1));
    Advance(absl::Seconds(1));
    Feed(Ping());
  }
  EXPECT_TRUE(GoAways().empty());
  EXPECT_FALSE(session_->closed());
}

TEST_F(PingStrikesTest, WithoutCallsPingsMustBeTwoHoursApart) {
  Handshake();
  // Ten minutes apart is fine while a call is open...
  HoldCall(1);
  for (int i = 0; i < 4; ++i) {
    Feed(Ping());
    Advance(absl::Minutes(10));
  }
  EXPECT_TRUE(GoAways().empty());
  // ...but not without one.
  dispatcher_.calls[0]->Finish(Status());
  Take();
  Feed(EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, ""));
  for (int i = 0; i < 3; ++i) {
    Advance(absl::Minutes(10));
    Feed(Ping());
  }
  EXPECT_TRUE(GoAways().empty());
  Advance(absl::Minutes(10));
  Feed(Ping());
  ASSERT_EQ(GoAways().size(), 1u);
  EXPECT_EQ(GoAways()[0].debug_data, "too_many_pings");
}

TEST_F(PingStrikesTest,
       PermitPingsWithoutCallsAppliesMinTimeToIdleConnections) {
  options_.keepalive.permit_pings_without_calls = true;
  Handshake();
  for (int i = 0; i < 10; ++i) {
    Feed(Ping());
    Advance(absl::Minutes(5));
  }
  EXPECT_TRUE(GoAways().empty());
}

// Connection age and the graceful shutdown sequence.

class ConnectionAgeTest : public SessionTest {
 protected:
  ConnectionAgeTest() {
    options_.keepalive.max_connection_age = absl::Seconds(100);
    options_.keepalive.max_connection_age_grace = absl::Seconds(1000);
  }
};

TEST_F(ConnectionAgeTest, AgeStartsTheGracefulSequenceAndGraceEndsIt) {
  const io::MonotonicTime start = scheduler_.Now();
  Handshake();
  HoldCall(1);
  // The age timer is the only one running: its deadline is the jittered
  // age, within 10% of max_connection_age.
  const io::MonotonicTime age = scheduler_.next_deadline();
  EXPECT_GE(age - start, absl::Seconds(90));
  EXPECT_LT(age - start, absl::Seconds(110));
  Advance(age - scheduler_.Now() - absl::Nanoseconds(1));
  EXPECT_TRUE(GoAways().empty());
  Advance(absl::Nanoseconds(1));
  // GOAWAY(2^31-1, NO_ERROR), then a PING.
  ASSERT_EQ(GoAways().size(), 1u);
  EXPECT_EQ(GoAways()[0].last_stream_id, kShutdownNotice);
  EXPECT_EQ(GoAways()[0].error_code, NGHTTP2_NO_ERROR);
  ASSERT_EQ(Pings().size(), 1u);
  EXPECT_LT(IndexOf(frames_, NGHTTP2_GOAWAY), IndexOf(frames_, NGHTTP2_PING));
  // A stream the client started before it saw the GOAWAY is served.
  HoldCall(3);
  ASSERT_EQ(dispatcher_.calls.size(), 2u);
  // The ACK: the final GOAWAY names the last stream accepted; later streams
  // are not served.
  Feed(PingAck(Pings()[0]));
  ASSERT_EQ(GoAways().size(), 2u);
  EXPECT_EQ(GoAways()[1].last_stream_id, 3u);
  EXPECT_EQ(GoAways()[1].error_code, NGHTTP2_NO_ERROR);
  HoldCall(5);
  EXPECT_EQ(dispatcher_.calls.size(), 2u);
  // The calls may go on until the grace ends...
  Advance(age + absl::Seconds(1000) - scheduler_.Now() - absl::Nanoseconds(1));
  EXPECT_FALSE(wire_->closed());
  EXPECT_FALSE(dispatcher_.calls[0]->cancelled);
  // ...then they are cancelled and the connection closed.
  Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(wire_->closed());
  EXPECT_TRUE(dispatcher_.closed);
  EXPECT_TRUE(dispatcher_.calls[0]->cancelled);
  EXPECT_TRUE(dispatcher_.calls[1]->cancelled);
}

TEST_F(ConnectionAgeTest, CallsEndingWithinTheGraceEndTheConnection) {
  Handshake();
  HoldCall(1);
  Advance(absl::Seconds(110));
  ASSERT_EQ(Pings().size(), 1u);
  Feed(PingAck(Pings()[0]));
  ASSERT_EQ(GoAways().size(), 2u);
  dispatcher_.calls[0]->Finish(Status());
  Take();
  Feed(EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, ""));
  EXPECT_TRUE(wire_->write_shut());
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
}

TEST_F(SessionTest, WithoutAnAckTheFinalGoAwayFollowsWithinTheBound) {
  options_.keepalive.timeout = absl::Seconds(7);  // shorter than 20 s
  Handshake();
  HoldCall(1);
  session_->GracefulShutdown();
  Take();
  ASSERT_EQ(GoAways().size(), 1u);
  ASSERT_EQ(Pings().size(), 1u);
  HoldCall(3);
  Advance(absl::Seconds(7) - absl::Nanoseconds(1));
  EXPECT_EQ(GoAways().size(), 1u);
  Advance(absl::Nanoseconds(1));
  ASSERT_EQ(GoAways().size(), 2u);
  EXPECT_EQ(GoAways()[1].last_stream_id, 3u);
  EXPECT_EQ(dispatcher_.calls.size(), 2u);
}

TEST_F(SessionTest, TheGoAwayPingBoundIsTwentySecondsAtMost) {
  options_.keepalive.timeout = absl::Minutes(5);
  Handshake();
  session_->GracefulShutdown();
  Take();
  Advance(Session::kGoAwayPingTimeout - absl::Nanoseconds(1));
  EXPECT_EQ(GoAways().size(), 1u);
  Advance(absl::Nanoseconds(1));
  EXPECT_EQ(GoAways().size(), 2u);
}

// The increments of the WINDOW_UPDATE frames for `stream_id` (0: the
// connection) in `frames`.
std::vector<uint32_t> WindowUpdatesIn(const std::vector<RawFrame>& frames,
                                      uint32_t stream_id) {
  std::vector<uint32_t> increments;
  for (const RawFrame& frame : frames) {
    if (frame.type == NGHTTP2_WINDOW_UPDATE && frame.stream_id == stream_id) {
      increments.push_back(ReadUint32(frame.payload) & 0x7fffffffu);
    }
  }
  return increments;
}
std::vector<uint32_t> ConnectionWindowUpdatesIn(
    const std::vector<RawFrame>& frames) {
  return WindowUpdatesIn(frames, 0);
}

// `bytes` of gRPC messages on `stream_id` (whole DATA frames of 16 KiB, each
// one message), fed in pieces so the receiver's window updates go out as
// they would on a wire.
std::string MessagesOf(uint32_t stream_id, size_t bytes) {
  std::string out;
  constexpr size_t kFrame = 16384;
  for (size_t sent = 0; sent < bytes; sent += kFrame) {
    out += EncodeFrame(NGHTTP2_DATA, 0, stream_id,
                       Framed(std::string(kFrame - 5, 'b')));
  }
  return out;
}

// WINDOW_UPDATEs: returned bytes are announced once they are a quarter of
// a window; held bytes never are.

class WindowUpdateTest : public SessionTest {
 protected:
  static constexpr uint32_t kWindow = 1 << 20;

  void SetUp() override {
    options_.bdp_probe = false;
    options_.initial_stream_window = kWindow;
    options_.connection_window = 4 * kWindow;
  }
  // The handshake, then forgets its frames (among them the WINDOW_UPDATE
  // that opens the connection window).
  void Start() {
    Handshake();
    output_.clear();
    frames_.clear();
  }
  std::vector<uint32_t> Updates(uint32_t stream_id) const {
    return WindowUpdatesIn(frames_, stream_id);
  }
};

TEST_F(WindowUpdateTest, AQuarterOfAStreamWindowTakenIsAnnounced) {
  Start();
  HoldCall(1);
  Feed(MessagesOf(1, kWindow / 4 - 16384));
  EXPECT_THAT(Updates(1), ::testing::IsEmpty());
  Feed(MessagesOf(1, 16384));
  EXPECT_THAT(Updates(1), ::testing::ElementsAre(kWindow / 4));
  Feed(MessagesOf(1, kWindow / 4));
  EXPECT_THAT(Updates(1), ::testing::ElementsAre(kWindow / 4, kWindow / 4));
}

TEST_F(WindowUpdateTest, AQuarterOfTheConnectionWindowTakenIsAnnounced) {
  Start();
  HoldCall(1);
  HoldCall(3);
  HoldCall(5);
  HoldCall(7);
  // 240 KiB on each of four streams: below a quarter of each stream's
  // window, and 960 KiB of the connection's 4 MiB.
  for (uint32_t stream : {1, 3, 5, 7}) {
    Feed(MessagesOf(stream, kWindow / 4 - 16384));
  }
  EXPECT_THAT(Updates(0), ::testing::IsEmpty());
  // 64 KiB more on stream 1: a quarter of the connection window.
  Feed(MessagesOf(1, 4 * 16384));
  EXPECT_THAT(Updates(0), ::testing::ElementsAre(kWindow));
  EXPECT_THAT(Updates(3), ::testing::IsEmpty());
}

TEST_F(WindowUpdateTest, HeldMessagesAreAnnouncedOnlyOnceTaken) {
  Start();
  HoldCall(1);
  dispatcher_.hold_messages = true;
  Feed(MessagesOf(1, kWindow / 2));
  EXPECT_THAT(Updates(1), ::testing::IsEmpty());
  EXPECT_THAT(Updates(0), ::testing::IsEmpty());
  ASSERT_EQ(dispatcher_.calls.size(), 1u);
  dispatcher_.calls[0]->ReleaseHeldMessages();
  Take();
  uint32_t announced = 0;
  for (uint32_t increment : Updates(1)) announced += increment;
  EXPECT_EQ(announced, kWindow / 2);
}

// Receive windows sized by BDP probing (ConnectionOptions::bdp_probe).

constexpr absl::string_view kBdpPing = "bdpprobe";

// The SETTINGS_INITIAL_WINDOW_SIZE values of the SETTINGS frames (not ACKs)
// in `frames`, in order.
std::vector<uint32_t> InitialWindowSettingsIn(
    const std::vector<RawFrame>& frames) {
  std::vector<uint32_t> values;
  for (const RawFrame& frame : frames) {
    if (frame.type != NGHTTP2_SETTINGS || (frame.flags & NGHTTP2_FLAG_ACK)) {
      continue;
    }
    const absl::string_view payload = frame.payload;
    for (size_t i = 0; i + 6 <= payload.size(); i += 6) {
      if (payload[i] == 0 &&
          payload[i + 1] == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE) {
        values.push_back(ReadUint32(payload.substr(i + 2)));
      }
    }
  }
  return values;
}

class BdpTest : public SessionTest {
 protected:
  static constexpr uint32_t kInitial = 1 << 20;

  // Opens stream 1 (a call that takes its messages at once).
  void OpenCall() {
    Handshake();
    HoldCall(1);
  }
  // Sends `bytes` of DATA on stream 1, 256 KiB per read.
  void SendData(size_t bytes) {
    for (size_t sent = 0; sent < bytes; sent += 256 << 10) {
      Feed(MessagesOf(1, std::min<size_t>(256 << 10, bytes - sent)));
    }
  }
  // The BDP PINGs the server sent so far.
  size_t BdpPings() const {
    size_t n = 0;
    for (const std::string& opaque : Pings()) n += opaque == kBdpPing;
    return n;
  }
  // Sends DATA on stream 1 a frame at a time until the server sends a BDP
  // PING (at most 8 MiB).
  void SendUntilPing() {
    const size_t pings = BdpPings();
    for (size_t sent = 0; BdpPings() == pings && sent < (8u << 20);
         sent += 16384) {
      Feed(MessagesOf(1, 16384));
    }
    ASSERT_EQ(BdpPings(), pings + 1);
  }
  // One round trip of `rtt` bringing `bytes` after the BDP PING, then its
  // ACK.
  void RoundTrip(size_t bytes, absl::Duration rtt) {
    SendUntilPing();
    Advance(rtt / 2);
    SendData(bytes);
    Advance(rtt / 2);
    Feed(PingAck(kBdpPing));
  }
};

TEST_F(BdpTest, AWindowLimitedSampleRaisesTheStreamWindowWithSettings) {
  OpenCall();
  EXPECT_EQ(InitialWindowSettingsIn(frames_).size(), 1u);  // at start
  RoundTrip(kInitial, absl::Milliseconds(20));
  // A whole window in one round trip: the window is the limit, so the
  // server asks for twice the sample (and keeps its connection window,
  // which is larger).
  EXPECT_THAT(InitialWindowSettingsIn(frames_),
              ::testing::ElementsAre(kInitial, 2 * kInitial));
  const size_t updates = ConnectionWindowUpdatesIn(frames_).size();
  // The peer may now send on stream 1 past the old window once it has
  // acknowledged the SETTINGS: 1.5 windows unread are accepted.
  dispatcher_.hold_messages = true;
  Feed(EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  SendData(kInitial + kInitial / 2);
  EXPECT_TRUE(GoAways().empty());
  EXPECT_EQ(ConnectionWindowUpdatesIn(frames_).size(), updates);
}

TEST_F(BdpTest, ServerWindowsNeverPassAQuarterOfTheConnectionWindow) {
  options_.connection_window = 12 << 20;
  OpenCall();
  RoundTrip(4 * kInitial, absl::Milliseconds(20));
  Feed(EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  // 4 MiB per round trip asks for 8 MiB; the server stops at a quarter of
  // its connection window, which does not grow, and pings no more.
  Advance(absl::Seconds(1));
  SendData(8 * kInitial);
  EXPECT_THAT(InitialWindowSettingsIn(frames_),
              ::testing::ElementsAre(kInitial, 3u << 20));
  EXPECT_EQ(BdpPings(), 1u);
  for (uint32_t increment : ConnectionWindowUpdatesIn(frames_)) {
    EXPECT_LE(increment, 12u << 20);
  }
  for (const GoAway& goaway : GoAways()) {
    ADD_FAILURE() << goaway.error_code << " " << goaway.debug_data;
  }
}

TEST_F(BdpTest, AfterTenIdleSecondsTheWindowGoesBack) {
  OpenCall();
  RoundTrip(kInitial, absl::Milliseconds(20));
  Feed(EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
  ASSERT_EQ(InitialWindowSettingsIn(frames_).back(), 2 * kInitial);
  Advance(BdpEstimator::kIdleReset);
  Feed(MessagesOf(1, 16384));
  EXPECT_THAT(InitialWindowSettingsIn(frames_),
              ::testing::ElementsAre(kInitial, 2 * kInitial, kInitial));
}

TEST_F(BdpTest, AFewSmallMessagesNeverPing) {
  OpenCall();
  // 15 KiB in 1 KiB messages: less than a full frame's worth, so no PING
  // however long it takes.
  for (int i = 0; i < 15; ++i) {
    Feed(EncodeFrame(NGHTTP2_DATA, 0, 1, Framed(std::string(1019, 's'))));
    Advance(absl::Seconds(1));
  }
  EXPECT_EQ(BdpPings(), 0u);
  Feed(EncodeFrame(NGHTTP2_DATA, 0, 1, Framed(std::string(1019, 's'))));
  EXPECT_EQ(BdpPings(), 1u);
}

TEST_F(BdpTest, PeersPingsAndStrayAcksAreNotSamples) {
  OpenCall();
  SendUntilPing();
  // The peer's own PING with our opaque data is answered, not taken as
  // the ACK.
  SendData(kInitial);
  Feed(Ping(kBdpPing));
  EXPECT_THAT(InitialWindowSettingsIn(frames_),
              ::testing::ElementsAre(kInitial));
  // Our ACK ends the sample.
  Feed(PingAck(kBdpPing));
  EXPECT_EQ(InitialWindowSettingsIn(frames_).size(), 2u);
}

TEST_F(BdpTest, OffMeansFixedWindowsAndNoPing) {
  options_.bdp_probe = false;
  OpenCall();
  SendData(4 * kInitial);
  EXPECT_EQ(BdpPings(), 0u);
  EXPECT_EQ(InitialWindowSettingsIn(frames_).size(), 1u);
}

TEST(ClientBdpTest, AClientGrowsItsStreamAndConnectionWindows) {
  ConnectionOptions options;
  options.connection_window = 1 << 20;
  ClientWithOneCall client(options);
  std::string output = client.wire.TakeOutput();
  client.wire.Feed(EncodeFrame(
      NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
      EncodeLiteralHeaderBlock(
          {{":status", "200"}, {"content-type", "application/grpc"}})));
  auto feed = [&](size_t bytes) {
    for (size_t sent = 0; sent < bytes; sent += 16384) {
      client.wire.Feed(MessagesOf(1, 16384));
      output += client.wire.TakeOutput();
    }
  };
  auto bdp_pings = [&] {
    const std::vector<std::string> pings =
        PingsIn(ParseFrames(output.substr(kClientPreface.size())));
    return std::count(pings.begin(), pings.end(), kBdpPing);
  };
  for (int i = 0; bdp_pings() == 0 && i < 512; ++i) feed(16384);
  ASSERT_EQ(bdp_pings(), 1);
  client.scheduler.AdvanceBy(absl::Milliseconds(10));
  feed(1 << 20);
  client.scheduler.AdvanceBy(absl::Milliseconds(10));
  client.wire.Feed(PingAck(kBdpPing));
  output += client.wire.TakeOutput();
  const std::vector<RawFrame> frames =
      ParseFrames(output.substr(kClientPreface.size()));
  // 1 MiB in one round trip: stream windows of 2 MiB, and the connection
  // window (1 MiB) raised to match with one WINDOW_UPDATE of 1 MiB.
  EXPECT_THAT(InitialWindowSettingsIn(frames),
              ::testing::ElementsAre(1u << 20, 2u << 20));
  EXPECT_THAT(ConnectionWindowUpdatesIn(frames), ::testing::Contains(1u << 20));
  EXPECT_FALSE(client.call.closed);
  client.session.Close(Status(StatusCode::kUnavailable, "test over"));
}

}  // namespace
}  // namespace h2rpc::transport::http2
