#ifndef H2RPC_TEST_UTIL_RAW_H2_CLIENT_H_
#define H2RPC_TEST_UTIL_RAW_H2_CLIENT_H_

// A small blocking HTTP/2 client for sending hostile or odd gRPC requests to
// a server under test. It uses its own nghttp2 session and socket (no h2rpc
// code), sends exactly the header list and body bytes it is given, and
// records what comes back frame by frame. Every wait is bounded by a timeout.
//
//   std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port, &error);
//   RawRequest request;
//   request.headers = GrpcRequestHeaders("/pkg.Service/Method", port);
//   request.body = GrpcFrame(serialized_message);
//   RawResponse response = client->Call(request);
//   EXPECT_EQ(response.Trailer("grpc-status"), "0");
//
// Single-threaded: use one client from one thread.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace h2rpc::testing {

// An ordered header list: any names and values, in any order.
using RawHeaders = std::vector<std::pair<std::string, std::string>>;

// One request on a new stream.
struct RawRequest {
  // Sent as given, in order (pseudo-headers included).
  RawHeaders headers;
  // The request body: raw bytes, gRPC length prefixes included (GrpcFrame()).
  std::string body;
  // When set, sent instead of `body` and not copied: many streams can send
  // one large body without each holding a copy.
  std::shared_ptr<const std::string> shared_body;
  // Largest payload of one DATA frame; 0: as large as flow control and the
  // peer's SETTINGS_MAX_FRAME_SIZE allow. 1 sends one byte per frame.
  size_t max_data_frame_size = 0;
  // END_STREAM after the body. Without it the stream stays half-open: the
  // body is sent, then nothing more.
  bool end_stream = true;
  // With an empty body and end_stream: END_STREAM on the HEADERS frame
  // itself (no DATA frame at all). Otherwise an empty body ends with an empty
  // DATA frame carrying END_STREAM.
  bool end_stream_on_headers = false;
  // Sends RST_STREAM(rst_error_code) once `rst_after` has passed since the
  // request was submitted, or once `rst_when` returns true (polled every few
  // milliseconds), whichever comes first, unless the stream closed before.
  absl::optional<absl::Duration> rst_after;
  std::function<bool()> rst_when;
  uint32_t rst_error_code = NGHTTP2_CANCEL;
};

// One received header block (HEADERS plus any CONTINUATION frames).
struct RawHeaderBlock {
  RawHeaders fields;
  bool end_stream = false;  // the HEADERS frame carried END_STREAM
};

// What happened to one request.
struct RawResponse {
  // Every header block received on the stream, in order: the response
  // headers, then the trailers. A Trailers-Only response is one block with
  // end_stream set.
  std::vector<RawHeaderBlock> header_blocks;
  // Concatenated DATA payloads.
  std::string body;
  int data_frames = 0;
  // Bytes of the request's body sent so far: flow control lets nghttp2
  // take them (RawRequest::body.size() once all were).
  size_t request_bytes_sent = 0;
  // The server sent END_STREAM (on HEADERS or DATA).
  bool end_stream_received = false;
  // The server sent RST_STREAM, with this error code.
  bool rst_received = false;
  uint32_t rst_error_code = 0;
  // This client sent RST_STREAM (RawRequest::rst_after / rst_when).
  bool rst_sent = false;
  // The stream closed (both sides ended or a reset), with this error code
  // (NGHTTP2_NO_ERROR for a clean close).
  bool stream_closed = false;
  uint32_t close_error_code = 0;
  // Connection-level events seen by the time the call returned.
  bool goaway_received = false;
  uint32_t goaway_error_code = 0;
  int32_t goaway_last_stream_id = 0;
  // The connection ended (EOF, reset, or an HTTP/2 protocol error) before
  // the stream closed; `error` says how.
  bool connection_closed = false;
  // The timeout passed before the stream closed.
  bool timed_out = false;
  // Why the request could not be sent, or how the connection ended.
  std::string error;

  // The first header block's fields (empty when there is none).
  const RawHeaders& headers() const;
  // First value of `name` in the first header block.
  absl::optional<std::string> Header(absl::string_view name) const;
  // First value of `name` in the header block that ended the stream (the
  // trailers, or the only block of a Trailers-Only response); nullopt when
  // no header block carried END_STREAM.
  absl::optional<std::string> Trailer(absl::string_view name) const;
  // Exactly one header block, carrying END_STREAM, and no DATA frame.
  bool IsTrailersOnly() const;
  // Everything above, for failure messages.
  std::string DebugString() const;
};

// A blocking HTTP/2 client connection to 127.0.0.1:port.
class RawH2Client {
 public:
  // Connects and sends the client preface and SETTINGS. Returns null and
  // sets `*error` (when non-null) if the connection cannot be made within
  // `timeout`.
  static std::unique_ptr<RawH2Client> Connect(
      int port, std::string* error = nullptr,
      absl::Duration timeout = absl::Seconds(10));
  // The same over `fd`, a connected stream socket of any family (a
  // unix-domain one, say): the client owns it from here (it is closed on
  // failure too) and makes it non-blocking. port() is 0.
  static std::unique_ptr<RawH2Client> Adopt(int fd,
                                            std::string* error = nullptr);
  ~RawH2Client();
  RawH2Client(const RawH2Client&) = delete;
  RawH2Client& operator=(const RawH2Client&) = delete;

  int port() const { return port_; }

  // Sends `request` on a new stream and runs the connection until that
  // stream closes, the connection ends, or `timeout` passes. Requests are
  // independent: several may be made in turn on one connection.
  RawResponse Call(const RawRequest& request,
                   absl::Duration timeout = absl::Seconds(30));

  // Lower level, for several streams at once. Start() submits a request and
  // returns its stream id (negative on failure). RunUntil() drives the
  // connection until `done` returns true (true), or the connection ends or
  // `timeout` passes (false, unless `done` is then true); `done` is checked
  // after every event and at least every 5 ms, so it may watch other
  // threads. Response() is the stream's record so far (with the
  // connection-level fields filled in).
  int32_t Start(const RawRequest& request);
  bool RunUntil(const std::function<bool()>& done, absl::Duration timeout);
  RawResponse Response(int32_t stream_id) const;
  // Sends RST_STREAM on a stream now.
  void ResetStream(int32_t stream_id, uint32_t error_code);

  // Sends a PING and waits for its ACK: true if the connection still works.
  bool Ping(absl::Duration timeout = absl::Seconds(10));

  // The connection has ended (EOF, reset, protocol error, or the session
  // has nothing more to do); error() says how.
  bool closed() const { return closed_; }
  const std::string& error() const { return error_; }
  bool goaway_received() const { return goaway_received_; }

 private:
  struct Stream {
    int32_t id = -1;
    std::shared_ptr<const std::string> body;
    size_t offset = 0;
    size_t max_data_frame_size = 0;
    bool end_stream = true;
    absl::Time rst_at = absl::InfiniteFuture();
    std::function<bool()> rst_when;
    uint32_t rst_error_code = NGHTTP2_CANCEL;
    RawResponse response;
  };

  RawH2Client(int fd, int port);
  bool InitSession();
  // Moves pending frames to the socket as far as it takes them; false once
  // the connection is closed.
  bool Flush();
  // Reads what the socket has and feeds it to nghttp2.
  void ReadAvailable();
  void CloseWithError(std::string error);
  // Sends the RST_STREAMs that are due; returns the time of the next one.
  absl::Time FireResets();
  Stream* StreamFor(int32_t stream_id);

  static ssize_t ReadBody(nghttp2_session* session, int32_t stream_id,
                          uint8_t* buf, size_t length, uint32_t* data_flags,
                          nghttp2_data_source* source, void* user);
  static int OnBeginHeaders(nghttp2_session* session,
                            const nghttp2_frame* frame, void* user);
  static int OnHeader(nghttp2_session* session, const nghttp2_frame* frame,
                      const uint8_t* name, size_t namelen, const uint8_t* value,
                      size_t valuelen, uint8_t flags, void* user);
  static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame,
                         void* user);
  static int OnDataChunk(nghttp2_session* session, uint8_t flags,
                         int32_t stream_id, const uint8_t* data, size_t len,
                         void* user);
  static int OnStreamClose(nghttp2_session* session, int32_t stream_id,
                           uint32_t error_code, void* user);

  int fd_;
  const int port_;
  nghttp2_session* session_ = nullptr;
  std::string out_;  // bytes produced by nghttp2 not yet written
  bool closed_ = false;
  std::string error_;
  bool goaway_received_ = false;
  uint32_t goaway_error_code_ = 0;
  int32_t goaway_last_stream_id_ = 0;
  int pings_acked_ = 0;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;
};

// Request headers of a well-formed gRPC call, in the usual order: :method
// POST, :scheme http, :path, :authority 127.0.0.1:port, content-type
// application/grpc, te trailers. Tests edit or append to them.
RawHeaders GrpcRequestHeaders(absl::string_view path, int port);
// Replaces the value of every `name` in `headers` (appends when absent).
void SetHeader(RawHeaders* headers, absl::string_view name,
               absl::string_view value);
// Removes every `name` from `headers`.
void RemoveHeader(RawHeaders* headers, absl::string_view name);

// The 5-byte gRPC message prefix: flag byte and big-endian length.
std::string GrpcPrefix(uint8_t flag, uint32_t length);
// A length-prefixed gRPC message (the prefix's length is message.size()).
std::string GrpcFrame(absl::string_view message, uint8_t flag = 0);
// Splits a gRPC body into its messages; false if it is not a whole number
// of well-formed frames (flags are not checked, only returned in `flags`).
bool ParseGrpcFrames(absl::string_view body, std::vector<std::string>* messages,
                     std::vector<uint8_t>* flags = nullptr);
// Splits a body of messages (flag 0) that ends with one frame flagged
// `last_flag` (gRPC-Web's trailers: 0x80; the end of a Connect stream:
// 0x02) into the messages and that frame's payload; false for any other
// body.
bool SplitFramedBody(absl::string_view body, uint8_t last_flag,
                     std::vector<std::string>* messages, std::string* last);
// Decodes a grpc-message value (percent-encoding).
std::string PercentDecode(absl::string_view text);

// One HTTP/2 frame as found in raw bytes.
struct RawFrame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream_id = 0;
  std::string payload;
};
// Splits raw bytes received from a server into frames, stopping at an
// incomplete one.
std::vector<RawFrame> ParseFrames(absl::string_view bytes);

// What a server did with raw bytes written to a fresh connection.
struct RawBytesResult {
  bool connected = false;
  std::string connect_error;
  // The server ended the connection: FIN (closed_by_peer) or RST
  // (reset_by_peer) seen while reading.
  bool closed_by_peer = false;
  bool reset_by_peer = false;
  // The connection was still open when the timeout passed.
  bool timed_out = false;
  // Everything received, and the same parsed as HTTP/2 frames.
  std::string received;
  std::vector<RawFrame> frames;
};

// Connects to 127.0.0.1:port, writes `bytes`, then reads until the server
// closes the connection, `until` (when given) returns true for the frames
// received so far, or `timeout` passes. The client never closes or
// half-closes first, so a close seen here is the server's doing.
RawBytesResult SendRawBytes(
    int port, absl::string_view bytes,
    absl::Duration timeout = absl::Seconds(10),
    const std::function<bool(const std::vector<RawFrame>&)>& until = nullptr);

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_RAW_H2_CLIENT_H_
