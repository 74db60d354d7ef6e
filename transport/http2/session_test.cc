// Connection-level behaviour every session shares (Session), driven frame
// by frame through a server session: the handshake deadline, fatal errors
// with their GOAWAY and linger, floods, the idle timeout, a failed submit.
#include "transport/http2/session.h"

#include <nghttp2/nghttp2.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/raw_frames.h"
#include "transport/http2/server_session.h"
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
using testing::Framed;

class SessionTest : public testing::ServerSessionFixture {
 protected:
  void HoldCall(uint32_t stream_id) {
    Feed(EncodeFrame(
        NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, stream_id,
        EncodeLiteralHeaderBlock(GrpcRequestHeaders("/test.Echo/Hold", 1))));
  }
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
  options_.idle_timeout = absl::Seconds(10);
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
  EXPECT_EQ(GoAwayErrorCode(frames_), NGHTTP2_NO_ERROR);
  EXPECT_TRUE(wire_->write_shut());
  wire_->PeerCloses();
  EXPECT_TRUE(wire_->closed());
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

}  // namespace
}  // namespace h2rpc::transport::http2
