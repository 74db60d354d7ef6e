#ifndef H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_
#define H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_

// The nghttp2 API h2rpc is written against: the ssize_t-based functions of
// nghttp2 1.52 (Debian 12), the only version built and tested, and, where
// the library has it, nghttp2_option_set_stream_reset_rate_limit (nghttp2
// 1.57; Debian backports it to 1.52.0-1+deb12u1 and later, without changing
// the version number). nghttp2 1.60 added `*2` variants taking
// nghttp2_ssize and deprecated these, which it still provides unless
// NGHTTP2_NO_SSIZE_T is defined; moving to the `*2` API belongs with
// building against such a version. The aliases and wrappers below are the
// only places that name the versioned API.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>

#if NGHTTP2_VERSION_NUM < 0x013400
#error "h2rpc needs nghttp2 1.52 or newer"
#endif

// Declared here as well, for headers of a 1.52 without the backport, and
// weak: a library without it leaves the address null (and has no limit on
// incoming RST_STREAM frames to turn off).
extern "C" void nghttp2_option_set_stream_reset_rate_limit(
    nghttp2_option* option, uint64_t burst, uint64_t rate)
    __attribute__((weak));

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

// Whether the nghttp2 the process runs has a limit on incoming RST_STREAM
// frames (nghttp2_option_set_stream_reset_rate_limit).
inline bool HasStreamResetRateLimit() {
  return nghttp2_option_set_stream_reset_rate_limit != nullptr;
}

// Turns off nghttp2's limit on incoming RST_STREAM frames (on a server
// session; a client's has none), where the library has one.
inline void DisableStreamResetRateLimit(nghttp2_option* option) {
  if (HasStreamResetRateLimit()) {
    nghttp2_option_set_stream_reset_rate_limit(option, UINT64_MAX, UINT64_MAX);
  }
}

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_
