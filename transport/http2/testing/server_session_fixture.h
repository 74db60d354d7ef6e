#ifndef H2RPC_TRANSPORT_HTTP2_TESTING_SERVER_SESSION_FIXTURE_H_
#define H2RPC_TRANSPORT_HTTP2_TESTING_SERVER_SESSION_FIXTURE_H_

#include <nghttp2/nghttp2.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/util/raw_frames.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/server_session.h"
#include "transport/http2/testing/session_harness.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2::testing {

// A server session on a fake clock behind an EchoDispatcher, driven through
// a MemoryWire: tests set options_, start it, feed client bytes and read
// the frames it wrote so far in frames_.
class ServerSessionFixture : public ::testing::Test {
 protected:
  ~ServerSessionFixture() override {
    if (session_ != nullptr && !dispatcher_.closed) {
      session_->Close(Status(StatusCode::kUnavailable, "test over"));
    }
  }

  void StartSession() {
    session_ =
        std::make_unique<ServerSession>(&scheduler_, "test-peer", options_,
                                        &quota_, &dispatcher_, &dispatcher_);
    wire_ = std::make_unique<MemoryWire>(session_.get());
    wire_->Start();
    Take();
  }
  // Starts the session and completes the client's side of the handshake,
  // acknowledging the server's SETTINGS (its windows apply from then on).
  void Handshake() {
    StartSession();
    Feed(absl::StrCat(::h2rpc::testing::kClientPreface,
                      ::h2rpc::testing::EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                      ::h2rpc::testing::EncodeFrame(NGHTTP2_SETTINGS,
                                                    NGHTTP2_FLAG_ACK, 0, "")));
  }
  void Feed(absl::string_view bytes) {
    wire_->Feed(bytes);
    Take();
  }
  // Moves the fake clock, then takes what the timers produced.
  void Advance(absl::Duration duration) {
    scheduler_.AdvanceBy(duration);
    Take();
  }
  // Takes the session's output into output_ and frames_.
  void Take() {
    output_ += wire_->TakeOutput();
    frames_ = ::h2rpc::testing::ParseFrames(output_);
  }

  io::FakeScheduler scheduler_;
  ConnectionOptions options_;
  MemoryQuota quota_{64 << 20};
  EchoDispatcher dispatcher_;
  std::unique_ptr<ServerSession> session_;
  std::unique_ptr<MemoryWire> wire_;
  std::string output_;
  std::vector<::h2rpc::testing::RawFrame> frames_;
};

}  // namespace h2rpc::transport::http2::testing

#endif  // H2RPC_TRANSPORT_HTTP2_TESTING_SERVER_SESSION_FIXTURE_H_
