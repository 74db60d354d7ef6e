#ifndef H2RPC_TRANSPORT_HTTP1_CLIENT_BRIDGE_H_
#define H2RPC_TRANSPORT_HTTP1_CLIENT_BRIDGE_H_

#include <http_parser.h>
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "transport/http1/bridge_parts.h"
#include "transport/http1/http1_options.h"
#include "transport/http2/nghttp2_memory_pool.h"
#include "transport/io/byte_session.h"

namespace h2rpc::transport::http1 {

// Carries a client connection's calls over HTTP/1.1, so that a channel
// whose calls are Connect unary calls (ChannelOptions::connect_http1) can
// reach servers that speak HTTP/1.1 only. The mirror of ServerBridge: a
// ByteFilter between the wire (or TLS) and the HTTP/2 client session, with
// an in-memory nghttp2 *server* session that takes the client session's
// streams. It advertises one concurrent stream, so the client session's
// nghttp2 queues the other calls; each stream's request, once complete,
// goes out as one HTTP/1.1 request (its body with a content-length), and
// the answer, parsed with http_parser, comes back as that stream's
// response (a chunked body's trailer section as its trailers).
//
// An answer that ends the connection (Connection: close, HTTP/1.0) sends
// the client session a GOAWAY, so later calls go to a new connection. A
// call cancelled while its request is out ends the connection, the only
// way HTTP/1.1 cancels. A malformed answer, or one that stops short, fails
// its call and ends the connection.
//
// Loop thread only. Allocates the request's head and body buffers (reused
// across calls) and what nghttp2 takes from its pool.
class ClientBridge final : public io::ByteFilter {
 public:
  // `options.max_header_bytes` bounds an answer's header section and
  // `options.max_buffered_input` the answer's body bytes held for the
  // client session (past it the connection reads no more until they move).
  explicit ClientBridge(const Http1Options& options);
  ~ClientBridge() override;
  ClientBridge(const ClientBridge&) = delete;
  ClientBridge& operator=(const ClientBridge&) = delete;

  // ByteFilter.
  void Attach(io::ByteSession* inner) override { inner_ = inner; }

  // ByteSession (called by the outer wire).
  void Start(io::Wire* wire) override;
  void Feed(absl::string_view bytes) override;
  void OnPeerClosed() override;
  void OnWireError(const Status& why) override;
  absl::string_view PendingOutput() override;
  void ConsumeOutput(size_t n) override;
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
  // The client session's requests (server session callbacks).
  static int OnBeginHeaders(nghttp2_session* session,
                            const nghttp2_frame* frame, void* user_data);
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
  // The request is complete: writes it.
  void WriteRequest();

  // The answers (http_parser callbacks).
  static int OnResponseHeaderField(http_parser* parser, const char* at,
                                   size_t size);
  static int OnResponseHeaderValue(http_parser* parser, const char* at,
                                   size_t size);
  static int OnResponseHeadersComplete(http_parser* parser);
  static int OnResponseBody(http_parser* parser, const char* at, size_t size);
  static int OnResponseComplete(http_parser* parser);
  static ssize_t ReadResponseBody(nghttp2_session* session, int32_t stream_id,
                                  uint8_t* buf, size_t length,
                                  uint32_t* data_flags,
                                  nghttp2_data_source* source, void* user_data);
  // Adds the field being parsed to `fields` (names lowercased).
  bool AddField(const char* at, size_t size, bool value);

  void SendToInner();
  void PumpInner();
  // The call in flight fails (RST_STREAM with `error_code`) and the
  // connection ends: GOAWAY to the client session, then the wire closes.
  void Fail(uint32_t error_code);
  // No more calls on this connection: GOAWAY to the client session, which
  // takes new calls elsewhere and closes the connection once idle.
  void EndConnection();

  const Http1Options options_;
  io::ByteSession* inner_ = nullptr;
  io::Wire* outer_ = nullptr;
  http2::Nghttp2MemoryPool pool_{64 * 1024};
  nghttp2_session* server_ = nullptr;
  bool pumping_ = false;
  bool inner_closed_ = false;
  bool outer_closed_ = false;
  // No request after the one in flight: the client session got GOAWAY.
  bool ending_ = false;
  // A callback asked for EndConnection (it sends, so it runs after).
  bool end_requested_ = false;

  // The request being gathered, then written.
  int32_t stream_id_ = -1;
  std::string method_, path_, authority_;
  std::string request_fields_;  // "name: value\r\n" lines
  std::string request_body_;
  bool request_sent_ = false;

  // The answer being parsed.
  http_parser parser_;
  http_parser_settings settings_;
  std::string response_storage_;
  struct Field {
    size_t name_begin, name_size, value_begin, value_size;
  };
  std::vector<Field> response_fields_;
  std::vector<Field> response_trailers_;
  bool in_trailers_ = false;
  bool value_next_ = false;
  // complete(): the answer is parsed to its end.
  PendingBody response_body_;
  bool response_keep_alive_ = true;
  std::vector<nghttp2_nv> nv_;

  // HTTP/1.1 output.
  std::string out_;
  size_t out_sent_ = 0;
};

}  // namespace h2rpc::transport::http1

#endif  // H2RPC_TRANSPORT_HTTP1_CLIENT_BRIDGE_H_
