#ifndef H2RPC_TRANSPORT_HTTP2_SERVER_SESSION_H_
#define H2RPC_TRANSPORT_HTTP2_SERVER_SESSION_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/compression_algorithm.h"
#include "base/metadata.h"
#include "base/status.h"
#include "transport/core/grpc_web.h"
#include "transport/core/header_list.h"
#include "transport/core/http_message_check.h"
#include "transport/core/memory_quota.h"
#include "transport/core/message_deframer.h"
#include "transport/core/received_headers.h"
#include "transport/core/response_setup.h"
#include "transport/http2/session.h"
#include "transport/http2/stream_base.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/scheduler.h"

namespace h2rpc::transport::http2 {

class ServerSession;

// One incoming RPC on a server connection. Created by the connection when a
// valid gRPC request's headers arrive, handed to the ServerDispatcher, and
// used by the rpc layer on the loop thread to answer. Reference-counted
// between the transport (until nghttp2 closes the stream) and the rpc layer
// (until Release()); outlives its connection if need be.
class ServerStream final : private io::Timer {
 public:
  // Events of the stream, on the loop thread.
  class Observer {
   public:
    // A complete request message, decompressed if it arrived compressed
    // (`compressed`); the view is valid during the call only. A non-OK
    // return finishes the stream with that status.
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
    // The client half-closed: no more messages.
    virtual void OnHalfClose() = 0;
    // The call ended without Finish(): client reset (CANCEL), deadline,
    // connection lost, or a request the transport refused. Finish() and
    // SendMessage() are no-ops from now on.
    virtual void OnCancel() = 0;

   protected:
    ~Observer() = default;
  };

  ServerStream(const ServerStream&) = delete;
  ServerStream& operator=(const ServerStream&) = delete;

  // Request facts, valid until Release().
  absl::string_view method() const { return method_; }
  absl::string_view authority() const { return authority_; }
  const std::string& peer() const;
  // What TLS established about the client; null on plaintext.
  const std::shared_ptr<const PeerIdentity>& peer_identity() const;
  // The connection the request arrived on, as ServerSession::id(); 0 once
  // the connection is gone.
  uint64_t connection_id() const;
  const Metadata& client_metadata() const { return client_metadata_; }
  // On the loop's monotonic clock; InfiniteFuture when the client sent no
  // grpc-timeout.
  io::MonotonicTime deadline() const { return deadline_; }
  // The client's grpc-previous-rpc-attempts: how many attempts of this call
  // came before (a retried call); 0 when absent or malformed.
  int previous_rpc_attempts() const { return previous_rpc_attempts_; }
  // The request's grpc-encoding (identity when it sent none).
  CompressionAlgorithm receive_encoding() const { return receive_encoding_; }
  // The encodings the client's grpc-accept-encoding lists (identity
  // always): the only ones the response may use.
  CompressionAlgorithmSet client_accepted_encodings() const {
    return client_accepted_encodings_;
  }
  // True once the call ended without this side's Finish (see
  // Observer::OnCancel). Safe from any thread.
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Loop thread: how the call ended: the code of Finish or Abort, or
  // CANCELLED when it was cancelled first; OK until then.
  StatusCode end_code() const { return end_code_; }
  // Bytes of the request messages received, on the wire (compressed if
  // they were), prefixes not included.
  uint64_t received_message_bytes() const { return delivered_.total; }

  // Set by the dispatcher.
  Observer* observer = nullptr;

  // Loop thread, before the response headers go out (ignored after): the
  // response's grpc-encoding. The rpc layer compresses the messages it
  // appends to outgoing() accordingly, and must pick an encoding in
  // client_accepted_encodings().
  void set_send_encoding(CompressionAlgorithm encoding) {
    if (!headers_sent_) send_encoding_ = encoding;
  }
  CompressionAlgorithm send_encoding() const { return send_encoding_; }
  // Loop thread. Sends the response headers with a copy of `metadata` (may
  // be null) now, instead of with the first message or Finish.
  void SendInitialMetadata(const Metadata* metadata);
  // Loop thread. Appends a framed message (see message_framer.h) and sends
  // it (after the response headers if not yet sent).
  OutgoingData& outgoing() { return outgoing_; }
  void ResumeSend();
  // Inside Observer::OnMessage: keeps the message's bytes (as received, so
  // compressed if it was) counted against the peer's flow-control windows
  // until ReleaseMessage(returned value), so a reader that falls behind
  // stops the sender (see ReceiveWindow). The returned bytes (the message's
  // wire size, its prefix included: at least what the rpc layer's queue
  // keeps of it) also count against the connection's memory quota share
  // until then (MemoryQuotaShare::ForceReserve): they are held already,
  // within the windows, and count so that grants to other messages and new
  // calls see them.
  size_t HoldMessage();
  // Loop thread: the application is done with a held message.
  void ReleaseMessage(size_t held_bytes);
  // Loop thread. Ends the call: trailers with `status` and a copy of
  // `trailing` metadata (may be null), or a Trailers-Only response if
  // nothing was sent yet.
  void Finish(const Status& status, const Metadata* trailing);
  bool finished() const { return finished_; }
  // Loop thread. Ends the call from the server's side with
  // RST_STREAM(CANCEL) (the client sees CANCELLED) and cancels it for the
  // rpc layer (Observer::OnCancel). No-op once finished or cancelled.
  void ResetWithCancel();
  // Loop thread. Finishes with `status` on the transport's or the rpc
  // layer's initiative (a bad request message, the deadline) and cancels the
  // call for the rpc layer (Observer::OnCancel).
  void Abort(const Status& status);

  // Loop thread. The rpc layer is done with the stream.
  void Release();

 private:
  friend class ServerSession;
  ServerStream(ServerSession* connection, io::Scheduler* scheduler)
      : connection_(connection), scheduler_(scheduler) {}
  ~ServerStream() = default;
  void OnTimer() override;
  void Unref();
  // Marks the call cancelled and tells the observer, once.
  void Cancel();
  // Submits the response headers, or ends the call with INTERNAL when the
  // initial metadata is invalid.
  void SubmitResponseHeaders();
  // Submits a Trailers-Only response with `status`, the initial metadata and
  // `trailing`; invalid metadata turns it into INTERNAL naming the key.
  void SubmitTrailersOnly(const Status& status, const Metadata* trailing);
  // Gives back up to `bytes` of held_charged_ to the connection's share
  // (connection_ set).
  void ReleaseHeldCharge(size_t bytes);
  // Connect unary: appends received body bytes, within
  // max_receive_message_size and the connection's memory share.
  Status AppendConnectBody(absl::string_view bytes);
  // Connect: the details of an error, read from `status`'s (a serialized
  // google.rpc.Status) with WebOptions::connect_codec; none without one.
  std::vector<ConnectErrorDetail> ErrorDetailsOf(const Status& status) const;
  // Connect unary: empties connect_body_ and gives its charge back
  // (connection_ set).
  void ReleaseConnectBody();
  // Connect unary, at the end of the request: hands the body, decompressed
  // and converted from JSON as the request says, to the observer as the
  // call's one message, then half-closes; or aborts the call.
  void DeliverConnectRequest();
  // Connect unary: submits the whole response for a call ending with
  // `status`: the one response message, or the error as JSON, with
  // `http_status` (0: the code's).
  void SubmitConnectUnaryResponse(const Status& status,
                                  const Metadata* trailing,
                                  int http_status = 0);
  // Connect unary, OK status: turns the outgoing buffer's one framed
  // message into the response body (converted to JSON as the request
  // says); `*content_encoding` names its compression. Non-OK when the
  // buffer does not hold exactly one message, or conversion fails.
  Status TakeConnectResponseMessage(absl::string_view* content_encoding);
  // Whether the bytes the rpc layer appends are converted before they go
  // out (ConvertOutgoing).
  bool converts_outgoing() const {
    return web_text_ ||
           (protocol_ == Protocol::kConnectStream && connect_json_);
  }
  // Converts what was appended since the last call: a JSON Connect stream's
  // framed messages to JSON frames, a gRPC-Web text stream's bytes to
  // base64; charges the growth to the quota. On failure drops those bytes
  // (none was sent) and returns why.
  Status ConvertOutgoing();
  // gRPC-Web text: what was appended since the last conversion, to base64.
  void EncodeOutgoingBase64();
  // Bytes of a text body that decode to `decoded` bytes (4 per 3, rounded
  // up): flow control counts what arrived; identity for binary bodies.
  size_t ReceivedBytesFor(size_t decoded) const {
    return web_text_ ? (decoded + 2) / 3 * 4 : decoded;
  }
  // Connect stream: ends the body with the end-of-stream frame for
  // `status` and `trailing`, after the response headers if they have not
  // gone out.
  void EndConnectStream(const Status& status, const Metadata* trailing);
  // Resumes a body nghttp2 deferred for lack of data.
  void ResumeData();
  // A submit for this stream failed (`rv` from the nghttp2 call `what`):
  // resets it with INTERNAL_ERROR; the call is cancelled when nghttp2 closes
  // the stream (never re-entrantly, inside an rpc layer operation).
  void FailSubmit(int rv, const char* what);
  // Received DATA is dropped (returned at once, never delivered).
  bool ignoring_data() const {
    return finished_ || cancelled() || observer == nullptr || malformed_;
  }
  // The response headers' grpc-encoding and grpc-accept-encoding, with
  // `metadata`.
  ResponseDescription DescribeResponse(const Metadata* metadata) const;
  void Reset();

  ServerSession* connection_;
  io::Scheduler* const scheduler_;
  int32_t stream_id_ = -1;
  int refs_ = 0;
  ServerStream* prev_ = nullptr;  // in the connection's list of open streams
  ServerStream* next_ = nullptr;
  // In the connection's list of streams whose message waits for memory.
  bool waiting_for_memory_ = false;
  ServerStream* waiting_prev_ = nullptr;
  ServerStream* waiting_next_ = nullptr;
  bool open_in_nghttp2_ = false;
  std::string method_;
  std::string authority_;
  Metadata client_metadata_;
  io::MonotonicTime deadline_ = io::MonotonicTime::InfiniteFuture();
  int previous_rpc_attempts_ = 0;
  CompressionAlgorithmSet client_accepted_encodings_;
  CompressionAlgorithm receive_encoding_ = CompressionAlgorithm::kIdentity;
  CompressionAlgorithm send_encoding_ = CompressionAlgorithm::kIdentity;
  DeliveredMessageBytes delivered_;
  // Held message bytes charged to the connection's memory share.
  size_t held_charged_ = 0;
  std::atomic<bool> cancelled_{false};
  StatusCode end_code_ = StatusCode::kOk;
  // How the request's protocol shapes the response (WebOptions).
  enum class Protocol : uint8_t {
    kGrpc,
    // gRPC-Web: the response says so in its content-type and carries its
    // trailers in its body (transport/core/grpc_web.h).
    kGrpcWeb,
    // Connect's unary form: one unframed message each way; the response,
    // headers included, goes out once the call ends
    // (transport/core/connect_protocol.h).
    kConnectUnary,
    // Connect's streaming form: messages framed as gRPC's (converted from
    // and to JSON for a JSON stream), the end of the stream as the body's
    // last frame, flagged 0x02 (transport/core/connect_protocol.h).
    kConnectStream,
  };
  Protocol protocol_ = Protocol::kGrpc;
  // A Connect request whose messages are JSON (WebOptions::connect_codec
  // converts them).
  bool connect_json_ = false;
  // A Connect unary request's body as received so far, charged to the
  // connection's memory share (connect_body_charged_ bytes). Capacity up
  // to OutgoingData::kRetainedCapacity is kept across calls.
  std::string connect_body_;
  size_t connect_body_charged_ = 0;
  // gRPC-Web's text form: bodies in base64 both ways.
  bool web_text_ = false;
  GrpcWebTextDecoder web_text_decoder_;
  // The bytes a chunk of a text body decodes to; capacity kept.
  std::string web_text_decoded_;
  // A JSON Connect stream or a gRPC-Web text one: where the outgoing bytes
  // not yet converted start, counted from the first byte appended
  // (OutgoingData::dropped()).
  uint64_t converted_end_ = 0;
  // The origin of a browser's cross-origin call that CORS allows (its
  // response carries the CORS fields); empty otherwise.
  std::string cors_origin_;
  bool headers_sent_ = false;
  bool finished_ = false;
  bool half_closed_ = false;
  // The transport ended the response itself from inside an rpc layer
  // operation (invalid metadata, a failed submit): the observer hears
  // OnCancel when nghttp2 closes the stream.
  bool cancel_on_close_ = false;
  size_t header_bytes_ = 0;
  // HTTP's rules for what the client sends; once broken, the stream is
  // reset with PROTOCOL_ERROR and nothing more of it is processed.
  HttpMessageCheck http_check_{HttpMessageCheck::Role::kRequest};
  bool malformed_ = false;
  // Copies of what the rpc layer sends: the header lists point into them
  // until nghttp2 has written the frames. Capacity is kept across calls.
  Metadata initial_metadata_;
  Metadata trailing_metadata_;
  ReceivedHeaderBlock block_;
  ReceiveWindow window_;
  MessageDeframer deframer_{MessageDeframer::Options()};
  OutgoingData outgoing_;
  HeaderList response_headers_;
  HeaderList trailers_;
};

// Routes validated requests to handlers (implemented by the rpc Server).
class ServerDispatcher {
 public:
  // Loop thread. Returns OK after taking the stream (setting its observer
  // and eventually calling Release()), or the status to answer with
  // (UNIMPLEMENTED for an unknown method) without taking it.
  virtual Status Dispatch(ServerStream* stream) = 0;

 protected:
  ~ServerDispatcher() = default;
};

// The server side of an HTTP/2 connection.
class ServerSession : public Session {
 public:
  class Listener {
   public:
    // The connection closed; the owner may destroy it once this returns
    // (not from inside).
    virtual void OnConnectionClosed(ServerSession* connection) = 0;
    // The client completed its side of the HTTP/2 handshake (its preface
    // and first SETTINGS arrived; TLS, if any, is done). Once per
    // connection, from inside Feed().
    virtual void OnConnectionReady(ServerSession* connection) {}

   protected:
    ~Listener() = default;
  };

  // `memory_quota`, the server's, must outlive the connection; the
  // connection takes at most options.memory_quota_share of it.
  ServerSession(io::Scheduler* scheduler, std::string peer,
                const ConnectionOptions& options, MemoryQuota* memory_quota,
                ServerDispatcher* dispatcher, Listener* listener);
  ~ServerSession() override;

  // Never 0 and never the id of another ServerSession of the process (a
  // counter, not an address that a later connection may reuse).
  uint64_t id() const { return id_; }

  // Streams a peer may open past SETTINGS_MAX_CONCURRENT_STREAMS once it
  // has acknowledged our SETTINGS: each is refused alone
  // (RST_STREAM(REFUSED_STREAM)); one more ends the connection with GOAWAY
  // (ENHANCE_YOUR_CALM, debug data "too_many_refused_streams"). Streams
  // refused before the acknowledgement (the peer could not know the limit)
  // do not count. A fixed limit: a client that honours the limit it
  // acknowledged never reaches it.
  static constexpr uint32_t kMaxRefusedStreams = 100;

  // Calls a peer's messages may make fail for this connection's memory
  // while none of its messages reaches a handler: RESOURCE_EXHAUSTED
  // because the messages waiting for memory would hold more than a quarter
  // of connection_window. One more ends the connection with
  // GOAWAY(ENHANCE_YOUR_CALM, debug data "too_many_memory_refusals"): such
  // a peer makes the server hold memory and refuse calls, and gets no work
  // done. A message delivered on any stream starts the count again. A fixed
  // limit.
  static constexpr uint32_t kMaxMemoryRefusals = 256;

  // RST_STREAM frames a peer may send (HEADERS then RST_STREAM makes the
  // server set up calls for nothing, CVE-2023-44487): kResetBurst at once,
  // then kResetsPerSecond, on the scheduler's clock; one more ends the
  // connection with GOAWAY(ENHANCE_YOUR_CALM, debug data "too_many_resets").
  // nghttp2's defaults for its own limit of the same, which is off (it
  // would answer GOAWAY(INTERNAL_ERROR) without saying why). Fixed limits.
  static constexpr int kResetBurst = 1000;
  static constexpr int kResetsPerSecond = 33;

  // Loop thread, after the memory quota's listener heard of a release:
  // grants memory to the messages waiting for it, as far as it goes, and
  // returns their withheld flow-control credit.
  void RetryMemoryWaiters();

 private:
  friend class ServerStream;

  int OnBeginHeaders(const nghttp2_frame* frame) override;
  int OnHeader(const nghttp2_frame* frame, nghttp2_rcbuf* name,
               nghttp2_rcbuf* value) override;
  int OnFrameRecv(const nghttp2_frame* frame) override;
  int OnDataChunk(int32_t stream_id, const uint8_t* data, size_t size) override;
  int OnStreamClose(int32_t stream_id, uint32_t error_code) override;
  // ConnectionStats and ConnectionEventCounts: `stream` leaves the
  // connection, having sent its END_STREAM or not.
  void CountStreamEnd(const ServerStream& stream, bool sent_end_stream);
  bool OnEndOfData(int32_t stream_id) override;
  void OnFrameSent(const nghttp2_frame* frame) override;
  void OnPeerHandshakeDone() override { listener_->OnConnectionReady(this); }
  void OnClosed(const Status& why) override;

  ServerStream* StreamFor(int32_t stream_id);
  // The client broke HTTP's rules on `stream` (http_check_.error() says
  // how): RST_STREAM PROTOCOL_ERROR, and the stream is ignored from now on.
  void Malformed(ServerStream* stream);
  // The stream of the header block being received (set by OnBeginHeaders,
  // forgotten when the stream closes), so that OnHeader does not look it
  // up for every field. Null for a refused stream.
  int32_t header_stream_id_ = 0;
  ServerStream* header_stream_ = nullptr;
  // A RST_STREAM arrived: takes one of the peer's reset tokens. False when
  // none is left (see kResetBurst).
  [[nodiscard]] bool TakeResetToken();
  void OnRequestHeaders(ServerStream* stream, bool end_stream);
  // Feeds request bytes to the stream's deframer, its messages to the
  // observer (converted from JSON for a JSON Connect stream).
  Status FeedDeframer(ServerStream* stream, absl::string_view chunk);
  // Whether the server answers requests of `content_type` (gRPC, and the
  // web protocols WebOptions enable); sets the stream's protocol if so.
  bool ClassifyContentType(absl::string_view content_type,
                           ServerStream* stream) const;
  // A Connect request's headers (either form): its deadline into
  // `*timeout`, its encoding into the stream; the refusal for bad ones.
  Status ReadConnectRequest(const ReservedHeaderValues& reserved,
                            ServerStream* stream,
                            absl::optional<absl::Duration>* timeout) const;
  // A Connect GET request's :path: the method without its query, the
  // message (into the stream's body), its encoding and compression; the
  // refusal otherwise, with `*http_status` 405 for a method that may not be
  // called so.
  Status ReadConnectGet(ServerStream* stream, int* http_status);
  // Answers a request the transport itself refuses.
  void Refuse(ServerStream* stream, const Status& status, int http_status);
  // Answers a CORS preflight (an OPTIONS request) from `origin` (null: the
  // request named none): 204 with the CORS fields if `cors` allows it, 403
  // otherwise.
  void AnswerPreflight(ServerStream* stream, const CorsPolicy& cors,
                       absl::optional<absl::string_view> origin);
  ServerStream* NewStream();
  void Recycle(ServerStream* stream);
  // After a stream's deframer changed (bytes fed, a grant): drops the
  // partial message of a stream being ignored, withholds the credit of its
  // ungranted bytes, keeps the waiting list in step, and returns what may be
  // returned.
  void SettleReceive(ServerStream* stream);
  // The stream is closing: off the waiting list, its ungranted bytes
  // forgotten.
  void ForgetReceive(ServerStream* stream);
  void AddMemoryWaiter(ServerStream* stream);
  void RemoveMemoryWaiter(ServerStream* stream);
  // The status failing `stream`, whose message waits for memory while the
  // connection's waiting messages would hold `waiting_bytes`.
  Status WaitingLimitStatus(const ServerStream* stream,
                            size_t waiting_bytes) const;

  const uint64_t id_;
  ServerDispatcher* const dispatcher_;
  Listener* const listener_;
  // Streams open in nghttp2 (refused ones excluded), against
  // options().max_concurrent_streams.
  uint32_t open_streams_ = 0;
  // The peer acknowledged our SETTINGS (it knows the stream limit), and
  // the streams it opened past the limit since.
  bool settings_acked_ = false;
  uint32_t refused_after_ack_ = 0;
  // Calls failed for memory since a message last reached a handler
  // (kMaxMemoryRefusals).
  uint32_t memory_refusals_ = 0;
  // RST_STREAM frames the peer may still send (kResetBurst at most), and
  // when the last token was added (or the bucket last became full).
  int reset_tokens_ = kResetBurst;
  io::MonotonicTime reset_tokens_added_ = io::MonotonicTime::InfinitePast();
  ServerStream* streams_ = nullptr;       // open streams, intrusive list
  ServerStream* free_streams_ = nullptr;  // recycled, linked through next_
  MemoryQuotaShare memory_share_;
  // Streams whose message waits for a memory grant, oldest first.
  ServerStream* waiting_head_ = nullptr;
  ServerStream* waiting_tail_ = nullptr;
  // Received bytes of all streams that no grant covers (withheld credit);
  // while waiting, at most options().connection_window / 4.
  size_t ungranted_bytes_ = 0;
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_SERVER_SESSION_H_
