#ifndef H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_
#define H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_

// The nghttp2 API h2rpc is written against: the ssize_t-based functions of
// nghttp2 1.52 (Debian 12), the only version built and tested, plus
// nghttp2_option_set_stream_reset_rate_limit (nghttp2 1.57, which Debian
// backports to 1.52.0-1+deb12u1 and later). nghttp2 1.60 added `*2`
// variants taking nghttp2_ssize and deprecated these, which it still
// provides unless NGHTTP2_NO_SSIZE_T is defined; moving to the `*2` API
// belongs with building against such a version. The aliases and wrappers
// below are the only places that name the versioned API.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>

#if NGHTTP2_VERSION_NUM < 0x013400
#error "h2rpc needs nghttp2 1.52 or newer"
#endif

namespace h2rpc::transport::http2 {

using Nghttp2Ssize = ssize_t;
using Nghttp2DataProvider = nghttp2_data_provider;

inline void SetSendCallback(nghttp2_session_callbacks* cbs,
                            nghttp2_send_callback cb) {
  nghttp2_session_callbacks_set_send_callback(cbs, cb);
}
inline Nghttp2Ssize MemRecv(nghttp2_session* s, const uint8_t* in, size_t len) {
  return nghttp2_session_mem_recv(s, in, len);
}
inline int32_t SubmitRequest(nghttp2_session* s, const nghttp2_nv* nva,
                             size_t nvlen, const Nghttp2DataProvider* data,
                             void* stream_user_data) {
  return nghttp2_submit_request(s, nullptr, nva, nvlen, data, stream_user_data);
}
inline int SubmitResponse(nghttp2_session* s, int32_t stream_id,
                          const nghttp2_nv* nva, size_t nvlen,
                          const Nghttp2DataProvider* data) {
  return nghttp2_submit_response(s, stream_id, nva, nvlen, data);
}

// Turns off nghttp2's limit on incoming RST_STREAM frames (on a server
// session; a client's has none).
inline void DisableStreamResetRateLimit(nghttp2_option* option) {
  nghttp2_option_set_stream_reset_rate_limit(option, UINT64_MAX, UINT64_MAX);
}

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_
