#ifndef H2RPC_TRANSPORT_HTTP2_TESTING_SESSION_HARNESS_H_
#define H2RPC_TRANSPORT_HTTP2_TESTING_SESSION_HARNESS_H_

// Drives HTTP/2 sessions with no socket and no real clock, for frame-level
// tests and fuzzers: a MemoryWire stands in for the socket driver, a
// FakeScheduler for the loop, and small transport-level call layers (an echo
// server, recording client calls) stand in for the rpc layer.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/client_session.h"
#include "transport/http2/server_session.h"
#include "transport/io/byte_session.h"

namespace h2rpc::transport::http2::testing {

// The wire of one session, in memory: bytes go in with Feed(), output
// comes out of TakeOutput(), and what the session asked of its wire is
// recorded.
class MemoryWire final : public io::Wire {
 public:
  explicit MemoryWire(io::ByteSession* session) : session_(session) {}

  void Start() { session_->Start(this); }
  // Bytes from the peer; ignored once the wire is closed.
  void Feed(absl::string_view bytes);
  // The peer closes its side.
  void PeerCloses();
  // Everything the session has to write now, as a driver's flush would
  // take it (at most `max_write` bytes per write); empty once closed or
  // shut.
  std::string TakeOutput(size_t max_write = SIZE_MAX);

  bool flush_requested() const { return flush_requested_; }
  bool write_shut() const { return write_shut_; }
  bool closed() const { return closed_; }
  // What CloseWire(flush_first = true) wrote.
  const std::string& last_words() const { return last_words_; }

  // io::Wire.
  void RequestFlush() override { flush_requested_ = true; }
  void ShutdownWrite() override { write_shut_ = true; }
  void CloseWire(bool flush_first) override;

 private:
  io::ByteSession* const session_;
  bool flush_requested_ = false;
  bool write_shut_ = false;
  bool closed_ = false;
  std::string last_words_;
};

// A server call layer: every request to "/test.Echo/Echo" is answered with
// each of its messages echoed back and OK at half-close; requests to
// "/test.Echo/Hold" are taken and left pending until cancelled (or
// finished by the test); any other method is refused UNIMPLEMENTED.
class EchoDispatcher final : public ServerDispatcher,
                             public ServerSession::Listener {
 public:
  // One taken call.
  class Call final : public ServerStream::Observer {
   public:
    Call(EchoDispatcher* dispatcher, ServerStream* stream, bool echo)
        : dispatcher_(dispatcher), stream_(stream), echo_(echo) {}
    Status OnMessage(absl::string_view message, bool compressed) override;
    void OnHalfClose() override;
    void OnCancel() override;

    ServerStream* stream() const { return stream_; }
    // Gives back the flow-control credit of every held message.
    void ReleaseHeldMessages();
    std::vector<std::string> messages;
    // Held message sizes (EchoDispatcher::hold_messages).
    std::vector<size_t> held;
    bool half_closed = false;
    bool cancelled = false;
    bool released = false;
    // Ends the call with `status` and gives the stream back.
    void Finish(const Status& status);

   private:
    void Release();
    EchoDispatcher* const dispatcher_;
    ServerStream* const stream_;
    const bool echo_;
  };

  Status Dispatch(ServerStream* stream) override;
  void OnConnectionClosed(ServerSession* session) override { closed = true; }

  // Calls keep their messages' credit (ServerStream::HoldMessage) until
  // ReleaseHeldMessages(), as a slow reader does.
  bool hold_messages = false;
  // Every call taken, in order; they live as long as the dispatcher.
  std::vector<std::unique_ptr<Call>> calls;
  bool closed = false;
};

// A client call that records what happens to it.
class RecordingCall final : public ClientStream::Observer {
 public:
  RecordingCall();
  void OnInitialMetadata(Metadata& metadata) override;
  Status OnMessage(absl::string_view message, bool compressed) override;
  bool OnRefused() override;
  void OnClose(const Status& status, Metadata& trailing) override;

  ClientStream stream;
  std::string path = "/test.Echo/Echo";
  bool got_initial_metadata = false;
  std::vector<std::string> messages;
  bool refused = false;
  bool closed = false;
  Status status;
};

// Records a client session's connection-level events.
class RecordingClientListener final : public ClientSession::Listener {
 public:
  void OnConnectionClosed(ClientSession* session, const Status& why) override {
    closed = true;
    close_status = why;
  }
  void OnConnectionDraining(ClientSession* session) override {
    draining = true;
  }
  bool closed = false;
  bool draining = false;
  Status close_status;
};

// A framed (5-byte prefixed) uncompressed gRPC message.
std::string Framed(absl::string_view message);

}  // namespace h2rpc::transport::http2::testing

#endif  // H2RPC_TRANSPORT_HTTP2_TESTING_SESSION_HARNESS_H_
