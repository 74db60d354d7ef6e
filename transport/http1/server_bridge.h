#ifndef H2RPC_TRANSPORT_HTTP1_SERVER_BRIDGE_H_
#define H2RPC_TRANSPORT_HTTP1_SERVER_BRIDGE_H_

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "transport/http1/bridge_parts.h"
#include "transport/http1/http1_options.h"
#include "transport/http1/request_parser.h"
#include "transport/http2/nghttp2_memory_pool.h"
#include "transport/io/byte_session.h"
#include "transport/io/scheduler.h"

namespace h2rpc::transport::http1 {

// Serves HTTP/1.1 on a server connection through the connection's HTTP/2
// session, so that every rule of the HTTP/2 path (the web protocols, CORS,
// message and header limits, the memory quota, deadlines, cancellation)
// holds for HTTP/1.1 as it is.
//
// A ByteFilter between the wire (or TLS) and the HTTP/2 server session: it
// tells the protocol from the connection's first bytes. A connection that
// opens with HTTP/2's client preface passes through untouched (a virtual
// call per read and per write). Otherwise each HTTP/1.1 request (parsed by
// RequestParser) becomes one stream of an in-memory nghttp2 client session
// whose frames feed the server session, and that stream's response goes
// back as HTTP/1.1: chunked unless it has a content-length, its HTTP/2
// trailers as the chunked body's trailer section.
//
// One request at a time: pipelined requests wait (at most
// max_buffered_input bytes, then the connection stops reading) and are
// answered in order. The response's body moves through a 256 KiB
// flow-control window that opens only as the socket takes the bytes, so a
// client that does not read stops the handler's writes. A closed
// connection cancels the call in progress. Malformed requests are answered
// with their HTTP status (400, 408, 414, 431, 505) and Connection: close.
//
// Loop thread only, as both sides of a ByteFilter. Allocates the client
// session when a connection turns out to be HTTP/1.1; per request nothing
// once the connection is warm (nghttp2 allocates from a recycling pool, and
// the buffers are kept across requests).
class ServerBridge final : public io::ByteFilter,
                           private RequestParser::Handler,
                           private io::Timer {
 public:
  // `secure`: the connection is TLS (the requests' :scheme is https).
  ServerBridge(io::Scheduler* scheduler, const Http1Options& options,
               bool secure);
  ~ServerBridge() override;
  ServerBridge(const ServerBridge&) = delete;
  ServerBridge& operator=(const ServerBridge&) = delete;

  // Whether the connection speaks HTTP/1.1 (false while undecided and for
  // HTTP/2).
  bool serves_http1() const { return mode_ == Mode::kHttp1; }

  // ByteFilter.
  void Attach(io::ByteSession* inner) override { inner_ = inner; }

  // ByteSession (called by the outer wire).
  void Start(io::Wire* wire) override;
  void Feed(absl::string_view bytes) override;
  void OnPeerClosed() override;
  void OnWireError(const Status& why) override;
  absl::string_view PendingOutput() override;
  size_t PendingOutputPieces(iovec* pieces, size_t max) override;
  void ConsumeOutput(size_t n) override;
  bool ExpectsLargeInput() const override {
    return mode_ == Mode::kHttp2 && inner_->ExpectsLargeInput();
  }
  bool PausesInputWhileOutputBlocked() const override {
    return inner_->PausesInputWhileOutputBlocked();
  }
  bool WantsInput() const override;

  // Wire (called by the inner session).
  void RequestFlush() override;
  void ShutdownWrite() override;
  void CloseWire(bool flush_first) override;
  bool CarriesOutput() const override { return outer_->CarriesOutput(); }
  const std::shared_ptr<const PeerIdentity>& peer_identity() const override {
    return outer_->peer_identity();
  }
  bool GetTlsDetails(io::TlsDetails* details) const override {
    return outer_->GetTlsDetails(details);
  }
  int error_number() const override { return outer_->error_number(); }

 private:
  enum class Mode { kUndecided, kHttp2, kHttp1 };
  enum class TimerPurpose { kNone, kIdle, kHeader, kLinger };
  struct Field {
    size_t name_begin, name_size, value_begin, value_size;
  };

  // Protocol detection and the client session.
  void FeedUndecided(absl::string_view bytes);
  void StartHttp1();

  // Requests.
  void Http1Input(absl::string_view bytes);
  void ParseRequests(absl::string_view bytes);
  void OnRequestHead(const RequestHead& head) override;
  void OnRequestBody(absl::string_view bytes) override;
  void OnRequestComplete() override;
  // The request's :path and :authority from its target and Host; false if
  // they are not valid.
  bool TargetToPath(const RequestHead& head, absl::string_view* path,
                    absl::string_view* authority);
  static ssize_t ReadRequestBody(nghttp2_session* session, int32_t stream_id,
                                 uint8_t* buf, size_t length,
                                 uint32_t* data_flags,
                                 nghttp2_data_source* source, void* user_data);

  // Between the client session and the server session.
  void SendToInner();
  void PumpInner();
  // Returns the flow-control credit of the response body bytes that have
  // left (or were dropped) to the server session.
  void ReturnCredit();

  // Responses (client session callbacks).
  static int OnHeader(nghttp2_session* session, const nghttp2_frame* frame,
                      const uint8_t* name, size_t namelen, const uint8_t* value,
                      size_t valuelen, uint8_t flags, void* user_data);
  static int OnFrameReceived(nghttp2_session* session,
                             const nghttp2_frame* frame, void* user_data);
  static int OnDataChunk(nghttp2_session* session, uint8_t flags,
                         int32_t stream_id, const uint8_t* data, size_t len,
                         void* user_data);
  static int OnStreamClose(nghttp2_session* session, int32_t stream_id,
                           uint32_t error_code, void* user_data);
  void WriteResponseHead(bool end_stream);
  void WriteTrailers();
  void WriteBody(absl::string_view bytes);
  void EndResponseBody();
  void AbortResponse(uint32_t error_code);
  // After a response ended: the next request, or the connection's end.
  void FinishExchange();
  // Answers `status` with `message` as a text body and ends the connection.
  void AnswerError(int status, absl::string_view message);
  void AppendStatusLine(int status);

  // The connection's end: write what is left, half-close, then close when
  // the peer does (or close_linger later).
  void BeginClosing();
  void MaybeShutdownWrite();
  void CloseInner(absl::string_view why);
  void Arm(TimerPurpose purpose, absl::Duration after);
  void OnTimer() override;

  io::Scheduler* const scheduler_;
  const Http1Options options_;
  const bool secure_;
  io::ByteSession* inner_ = nullptr;
  io::Wire* outer_ = nullptr;
  Mode mode_ = Mode::kUndecided;
  TimerPurpose timer_purpose_ = TimerPurpose::kNone;
  std::string undecided_;      // the first bytes, while they match the preface
  bool inner_closed_ = false;  // the inner session called CloseWire
  bool outer_closed_ = false;
  bool pumping_ = false;

  // HTTP/1.1 state, from StartHttp1().
  RequestParser parser_;
  // The client session's allocator: its stream objects and frames come
  // back from free lists once the connection is warm.
  http2::Nghttp2MemoryPool pool_{64 * 1024};
  nghttp2_session* client_ = nullptr;
  std::vector<nghttp2_nv> request_fields_;
  // Bytes after the last complete request, parsed once it is answered.
  std::string pending_input_;
  std::string parse_buffer_;
  // The request in flight: its stream (-1: none) and the body bytes the
  // client session has not taken yet.
  int32_t stream_id_ = -1;
  // complete(): the request is parsed to its end.
  PendingBody request_body_;
  // The request was answered before its end: the rest of its body is read
  // and dropped (dropped_body_ bytes so far).
  bool dropping_body_ = false;
  size_t dropped_body_ = 0;
  bool head_request_ = false;
  int version_minor_ = 1;
  uint32_t requests_ = 0;
  // The response in flight.
  int response_status_ = 0;
  std::string response_storage_;
  std::vector<Field> response_fields_;
  bool response_head_written_ = false;
  bool response_chunked_ = false;
  bool trailers_written_ = false;
  bool response_done_ = false;
  // Response body bytes written to out_ whose flow-control credit the
  // client session has not returned yet.
  size_t unconsumed_body_ = 0;
  // HTTP/1.1 output.
  std::string out_;
  size_t out_sent_ = 0;
  // No request after the one in flight (Connection: close, the request
  // limit, the server's GOAWAY, an error).
  bool close_after_response_ = false;
  // Ending: the last output is queued; half-close once it is written.
  bool closing_ = false;
  bool write_shut_ = false;
};

}  // namespace h2rpc::transport::http1

#endif  // H2RPC_TRANSPORT_HTTP1_SERVER_BRIDGE_H_
