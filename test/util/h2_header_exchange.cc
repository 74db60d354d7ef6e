#include "test/util/h2_header_exchange.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace h2rpc::testing {
namespace {

// One nghttp2 session and what it has decoded.
struct Peer {
  nghttp2_session* session = nullptr;
  HeaderExchange result;
  int header_blocks = 0;
  int32_t last_stream = 0;
  bool stream_reset = false;
};

int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* data) {
  auto* peer = static_cast<Peer*>(data);
  ++peer->header_blocks;
  peer->last_stream = frame->hd.stream_id;
  return 0;
}

int OnHeader(nghttp2_session*, const nghttp2_frame*, const uint8_t* name,
             size_t namelen, const uint8_t* value, size_t valuelen,
             uint8_t flags, void* data) {
  auto* peer = static_cast<Peer*>(data);
  DecodedField field{
      std::string(reinterpret_cast<const char*>(name), namelen),
      std::string(reinterpret_cast<const char*>(value), valuelen),
      (flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0};
  (peer->header_blocks <= 1 ? peer->result.headers : peer->result.trailers)
      .push_back(std::move(field));
  return 0;
}

int OnInvalidFrame(nghttp2_session*, const nghttp2_frame*, int error,
                   void* data) {
  auto* peer = static_cast<Peer*>(data);
  peer->result.error = absl::StrCat("invalid frame: ", nghttp2_strerror(error));
  return 0;
}

int OnStreamClose(nghttp2_session*, int32_t, uint32_t error_code, void* data) {
  auto* peer = static_cast<Peer*>(data);
  if (error_code != NGHTTP2_NO_ERROR) {
    peer->stream_reset = true;
    if (peer->result.error.empty()) {
      peer->result.error = absl::StrCat("stream closed with ",
                                        nghttp2_http2_strerror(error_code));
    }
  }
  return 0;
}

nghttp2_session* NewSession(Peer* peer, bool server) {
  nghttp2_session_callbacks* callbacks;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, OnHeader);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks,
                                                               OnInvalidFrame);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         OnStreamClose);
  nghttp2_session* session;
  if (server) {
    nghttp2_session_server_new(&session, callbacks, peer);
  } else {
    nghttp2_session_client_new(&session, callbacks, peer);
  }
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
  return session;
}

// Moves every pending byte from `from` to `to`; returns false on error.
bool Pump(Peer& from, Peer& to) {
  for (;;) {
    const uint8_t* data;
    const ssize_t n = nghttp2_session_mem_send(from.session, &data);
    if (n < 0) {
      to.result.error = absl::StrCat("mem_send: ", nghttp2_strerror(n));
      return false;
    }
    if (n == 0) return true;
    const ssize_t read = nghttp2_session_mem_recv(to.session, data, n);
    if (read < 0) {
      to.result.error = absl::StrCat("mem_recv: ", nghttp2_strerror(read));
      return false;
    }
  }
}

bool PumpBoth(Peer& client, Peer& server) {
  for (int i = 0; i < 4; ++i) {
    if (!Pump(client, server) || !Pump(server, client)) return false;
  }
  return true;
}

const nghttp2_nv kMinimalRequest[] = {
    {(uint8_t*)":method", (uint8_t*)"POST", 7, 4, NGHTTP2_NV_FLAG_NONE},
    {(uint8_t*)":scheme", (uint8_t*)"http", 7, 4, NGHTTP2_NV_FLAG_NONE},
    {(uint8_t*)":path", (uint8_t*)"/a.B/C", 5, 6, NGHTTP2_NV_FLAG_NONE},
    {(uint8_t*)":authority", (uint8_t*)"localhost", 10, 9,
     NGHTTP2_NV_FLAG_NONE},
    {(uint8_t*)"te", (uint8_t*)"trailers", 2, 8, NGHTTP2_NV_FLAG_NONE},
    {(uint8_t*)"content-type", (uint8_t*)"application/grpc", 12, 16,
     NGHTTP2_NV_FLAG_NONE},
};

HeaderExchange Finish(Peer& receiver, Peer& other, bool ok) {
  HeaderExchange result = std::move(receiver.result);
  result.accepted = ok && !receiver.stream_reset && !other.stream_reset &&
                    result.error.empty() && !result.headers.empty();
  if (result.error.empty() && other.stream_reset) result.error = "peer reset";
  nghttp2_session_del(receiver.session);
  nghttp2_session_del(other.session);
  return result;
}

}  // namespace

HeaderExchange ExchangeRequestHeaders(absl::Span<const nghttp2_nv> request) {
  Peer client, server;
  client.session = NewSession(&client, /*server=*/false);
  server.session = NewSession(&server, /*server=*/true);
  const int32_t stream =
      nghttp2_submit_request(client.session, nullptr, request.data(),
                             request.size(), nullptr, nullptr);
  if (stream < 0) {
    server.result.error =
        absl::StrCat("submit_request: ", nghttp2_strerror(stream));
    return Finish(server, client, false);
  }
  const bool ok = PumpBoth(client, server);
  return Finish(server, client, ok);
}

HeaderExchange ExchangeResponseHeaders(
    absl::Span<const nghttp2_nv> response,
    absl::optional<absl::Span<const nghttp2_nv>> trailers,
    bool end_stream_with_headers) {
  Peer client, server;
  client.session = NewSession(&client, /*server=*/false);
  server.session = NewSession(&server, /*server=*/true);
  nghttp2_submit_request(client.session, nullptr, kMinimalRequest,
                         sizeof(kMinimalRequest) / sizeof(kMinimalRequest[0]),
                         nullptr, nullptr);
  bool ok = PumpBoth(client, server);
  const int32_t stream = server.last_stream;
  const bool end_with_headers = end_stream_with_headers && !trailers;
  int rv = nghttp2_submit_headers(
      server.session,
      end_with_headers ? NGHTTP2_FLAG_END_STREAM : NGHTTP2_FLAG_NONE, stream,
      nullptr, response.data(), response.size(), nullptr);
  if (rv == 0 && trailers) {
    rv = nghttp2_submit_trailer(server.session, stream, trailers->data(),
                                trailers->size());
  }
  if (rv != 0) {
    client.result.error = absl::StrCat("submit: ", nghttp2_strerror(rv));
    ok = false;
  }
  ok = ok && PumpBoth(client, server);
  return Finish(client, server, ok);
}

}  // namespace h2rpc::testing
