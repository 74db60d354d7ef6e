#ifndef H2RPC_TRANSPORT_HTTP2_CLIENT_SESSION_H_
#define H2RPC_TRANSPORT_HTTP2_CLIENT_SESSION_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/call_setup.h"
#include "transport/core/header_list.h"
#include "transport/core/http_message_check.h"
#include "transport/core/message_deframer.h"
#include "transport/http2/session.h"
#include "transport/http2/stream_base.h"
#include "transport/io/scheduler.h"

namespace h2rpc::transport::http2 {

class ClientSession;

// One client call's stream: what it sends (headers from `description`, the
// framed messages in outgoing()) and what it receives (initial metadata,
// messages, trailing metadata and a status, through its Observer).
// Owned and reused by the rpc layer; lives on one connection's loop thread
// from StartCall() until Observer::OnClose.
class ClientStream : private io::Timer {
 public:
  // Events of the stream, on the loop thread.
  class Observer {
   public:
    // Response headers arrived (not called for a Trailers-Only response).
    // The observer may take the entries (e.g. swap them out).
    virtual void OnInitialMetadata(Metadata& metadata) {}
    // A complete response message, decompressed if it arrived compressed
    // (`compressed`); the view is valid during the call only. A non-OK
    // return cancels the stream with that status.
    virtual Status OnMessage(absl::string_view message, bool compressed) = 0;
    // Whether the next message, if it arrived compressed, may be handed
    // over as received, through OnCompressedMessage instead of OnMessage: a
    // streaming call that will queue it, so that a queued message holds its
    // wire bytes (which flow control bounds) rather than up to
    // max_receive_message_size once decompressed.
    virtual bool DefersDecompression() const { return false; }
    // A message that arrived compressed with `encoding`, as received (the
    // view is valid during the call only); the observer decompresses it, to
    // at most `max_size` bytes, before the application sees it. Called only
    // when DefersDecompression(). Non-OK as for OnMessage.
    virtual Status OnCompressedMessage(absl::string_view wire,
                                       CompressionAlgorithm encoding,
                                       size_t max_size) {
      return Status(StatusCode::kInternal,
                    "a compressed message the observer cannot take");
    }
    // The server refused the stream before processing it (REFUSED_STREAM,
    // also for streams beyond a GOAWAY's last stream id), so the call can be
    // retried transparently. Return true to take the stream back for another
    // StartCall (no OnClose follows); false closes it with UNAVAILABLE.
    virtual bool OnRefused() { return false; }
    // Exactly once, when the stream is over and no longer referenced by the
    // transport. After it returns the ClientStream may be reused. The
    // observer may take the trailing entries.
    virtual void OnClose(const Status& status, Metadata& trailing) = 0;

   protected:
    ~Observer() = default;
  };

  ClientStream() = default;
  ClientStream(const ClientStream&) = delete;
  ClientStream& operator=(const ClientStream&) = delete;

  // Set before StartCall. Strings and metadata it points at are the
  // caller's and must live until OnClose. StartCall fills
  // `accept_encodings` from the connection's options.
  CallDescription description;
  Observer* observer = nullptr;
  // Set before StartCall: the largest response message the call accepts
  // (serialized, decompressed), below the connection's
  // max_receive_message_size; 0: the connection's. Bytes.
  size_t max_receive_message_size = 0;
  // Framed request messages; set_end_of_data() half-closes after them.
  OutgoingData& outgoing() { return outgoing_; }

  // Loop thread: more data was appended to outgoing() (or it was ended).
  void ResumeSend();
  // Inside Observer::OnMessage: keeps the message's bytes (as received, so
  // compressed if it was) counted against the peer's flow-control windows
  // until ReleaseMessage(returned value), so a reader that falls behind
  // stops the sender (see ReceiveWindow).
  size_t HoldMessage() { return window_.HoldMessage(delivered_.last); }
  // Loop thread: the application is done with a held message.
  void ReleaseMessage(size_t held_bytes);
  // Bytes of the response messages this attempt received, on the wire
  // (compressed if they were), prefixes not included.
  uint64_t received_message_bytes() const { return delivered_.total; }
  // The response's grpc-encoding, once its headers arrived (identity
  // before, and when it sent none).
  CompressionAlgorithm receive_encoding() const { return receive_encoding_; }

  // Loop thread. Cancels the stream (RST_STREAM CANCEL) and closes it with
  // `status`; no-op when not started or already over.
  void Cancel(const Status& status);
  // True between StartCall and OnClose.
  bool active() const { return connection_ != nullptr; }

  // Clears per-call state, keeping buffer capacity, for the next call.
  void Reset();
  // After OnClose: makes the stream ready to start again (a retried call)
  // with the same description and the request bytes sent so far, to be
  // sent again from the start (OutgoingData::Rewind); the received side is
  // cleared. False, changing nothing, if those bytes are gone.
  [[nodiscard]] bool PrepareRetry();

 private:
  friend class ClientSession;
  void OnTimer() override;
  // Clears what one attempt on a connection left: the connection's links
  // and everything received.
  void ClearAttempt();

  ClientSession* connection_ = nullptr;
  int32_t stream_id_ = -1;
  ClientStream* prev_ = nullptr;  // in the connection's list of open streams
  ClientStream* next_ = nullptr;
  HeaderList headers_;
  OutgoingData outgoing_;
  ReceivedHeaderBlock block_;
  ReceiveWindow window_;
  int header_blocks_ = 0;
  size_t header_bytes_ = 0;  // of the block being received, HPACK-counted
  // HTTP's rules for what the server sends.
  HttpMessageCheck http_check_{HttpMessageCheck::Role::kResponse};
  MessageDeframer deframer_{MessageDeframer::Options()};
  // The response's grpc-encoding, and the wire sizes of the messages
  // delivered.
  CompressionAlgorithm receive_encoding_ = CompressionAlgorithm::kIdentity;
  DeliveredMessageBytes delivered_;
  Metadata initial_metadata_;
  Metadata trailing_metadata_;
  // The outcome, once known (trailers, a local error, a cancel); delivered
  // when nghttp2 closes the stream.
  bool status_known_ = false;
  Status status_;
  // Counted as started in the connection's ConnectionStats, and not yet as
  // ended; whether END_STREAM arrived (the trailers).
  bool counted_ = false;
  bool eos_received_ = false;
  // A Connect unary call (description.connect_unary): its request message
  // lost its gRPC prefix (once, kept across retries); the response's HTTP
  // status and body, gathered until it ends; all its headers, before they
  // are split into initial and trailing ("trailer-") metadata. Capacity
  // kept across calls (the body's up to OutgoingData::kRetainedCapacity).
  bool connect_prefix_dropped_ = false;
  int connect_http_status_ = 0;
  std::string connect_body_;
  Metadata connect_headers_;
};

// The client side of an HTTP/2 connection: opens one stream per call. Any
// number of calls may be started; beyond the server's
// SETTINGS_MAX_CONCURRENT_STREAMS nghttp2 holds them until a stream closes.
class ClientSession : public Session {
 public:
  // Connection-level events for the owner (a Channel), on the loop thread.
  class Listener {
   public:
    // The connection is closed and every stream on it has been closed; the
    // owner may destroy it once this returns (not from inside).
    virtual void OnConnectionClosed(ClientSession* connection,
                                    const Status& why) = 0;
    // The server completed its side of the HTTP/2 handshake (its first
    // SETTINGS frame arrived and was applied): the connection is
    // established. Once per connection, from inside Feed(); the owner may
    // start calls here.
    virtual void OnConnectionReady(ClientSession* connection) {}
    // The server sent a GOAWAY (each one, before OnConnectionDraining for
    // the first): its error code and opaque debug data (valid during the
    // call only), e.g. ENHANCE_YOUR_CALM "too_many_pings".
    virtual void OnGoAwayReceived(ClientSession* connection,
                                  uint32_t error_code,
                                  absl::string_view debug_data) {}
    // The server sent GOAWAY: start new calls on another connection.
    virtual void OnConnectionDraining(ClientSession* connection) {}

   protected:
    ~Listener() = default;
  };

  ClientSession(io::Scheduler* scheduler, std::string peer,
                const ConnectionOptions& options, Listener* listener);
  ~ClientSession() override;

  // Opens a stream for `stream` and submits its headers and data. Failures
  // (deadline already passed, invalid metadata, connection unusable) close
  // the stream through its observer before this returns.
  void StartCall(ClientStream* stream);
  // More data was appended to the stream's outgoing() (or it was ended).
  void ResumeSend(ClientStream* stream);
  // Resets the stream with RST_STREAM(CANCEL) and closes it with `status`.
  // No-op if the outcome is already known.
  void CancelCall(ClientStream* stream, const Status& status);

  // False once the connection is closing or the server sent GOAWAY.
  bool accepting_calls() const { return !closed() && !draining_; }

 private:
  int OnBeginHeaders(const nghttp2_frame* frame) override;
  int OnHeader(const nghttp2_frame* frame, nghttp2_rcbuf* name,
               nghttp2_rcbuf* value) override;
  int OnFrameRecv(const nghttp2_frame* frame) override;
  int OnDataChunk(int32_t stream_id, const uint8_t* data, size_t size) override;
  int OnStreamClose(int32_t stream_id, uint32_t error_code) override;
  void OnGoAway(int32_t last_stream_id, uint32_t error_code,
                absl::string_view debug_data) override;
  void OnPeerHandshakeDone() override;
  void OnClosed(const Status& why) override;

  ClientStream* StreamFor(int32_t stream_id);
  // The stream of the header block being received (set by OnBeginHeaders,
  // forgotten when the stream closes), so that OnHeader does not look it
  // up for every field.
  int32_t header_stream_id_ = 0;
  ClientStream* header_stream_ = nullptr;
  // The largest response message `stream` accepts: its own limit, at most
  // the connection's. Bytes.
  size_t ReceiveLimit(const ClientStream& stream) const;
  // The deframer options of `stream` for messages compressed with
  // `encoding`, with the stream's limit.
  MessageDeframer::Options StreamDeframerOptions(const ClientStream& stream,
                                                 CompressionAlgorithm encoding);
  void OnResponseHeaderBlock(ClientStream* stream, bool end_stream);
  // Connect unary: the response's one header block (`end_stream`: it ends
  // the response), and the end of its body.
  void OnConnectResponseHeaders(ClientStream* stream, bool end_stream);
  void EndConnectResponse(ClientStream* stream);
  // Records the call's outcome once the server ended its response.
  void EndResponse(ClientStream* stream, Status status);
  // Records the outcome and resets the stream (with `error_code`) unless it
  // is over.
  void FailStream(ClientStream* stream, Status status,
                  uint32_t error_code = NGHTTP2_CANCEL);
  // The server broke HTTP's rules on `stream` (http_check_.error() says
  // how): the call fails with INTERNAL and the stream is reset with
  // PROTOCOL_ERROR.
  void FailMalformed(ClientStream* stream);
  void Link(ClientStream* stream);
  void Unlink(ClientStream* stream);
  // ConnectionStats: a stream counted as started ends (once), its call
  // with status OK or not.
  void CountStreamEnd(ClientStream* stream, bool call_ok);
  void Deliver(ClientStream* stream);

  Listener* const listener_;
  ClientStream* streams_ = nullptr;  // open streams, intrusive list
  bool draining_ = false;
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_CLIENT_SESSION_H_
