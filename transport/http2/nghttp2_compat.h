#ifndef H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_
#define H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_

// nghttp2 1.60 replaced the ssize_t-based APIs with `*2` versions taking
// nghttp2_ssize and deprecated the old ones. Debian 12 ships 1.52. h2rpc
// calls the functions below, which pick the right API at compile time.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>

namespace h2rpc::transport::http2 {

#if NGHTTP2_VERSION_NUM >= 0x013c00
using Nghttp2Ssize = nghttp2_ssize;
using Nghttp2DataProvider = nghttp2_data_provider2;
using Nghttp2SendCallback = nghttp2_send_callback2;
using Nghttp2DataReadCallback = nghttp2_data_source_read_callback2;

inline void SetSendCallback(nghttp2_session_callbacks* cbs,
                            Nghttp2SendCallback cb) {
  nghttp2_session_callbacks_set_send_callback2(cbs, cb);
}
inline Nghttp2Ssize MemRecv(nghttp2_session* s, const uint8_t* in, size_t len) {
  return nghttp2_session_mem_recv2(s, in, len);
}
inline int32_t SubmitRequest(nghttp2_session* s, const nghttp2_nv* nva,
                             size_t nvlen, const Nghttp2DataProvider* data,
                             void* stream_user_data) {
  return nghttp2_submit_request2(s, nullptr, nva, nvlen, data,
                                 stream_user_data);
}
inline int SubmitData(nghttp2_session* s, uint8_t flags, int32_t stream_id,
                      const Nghttp2DataProvider* data) {
  return nghttp2_submit_data2(s, flags, stream_id, data);
}
#else
using Nghttp2Ssize = ssize_t;
using Nghttp2DataProvider = nghttp2_data_provider;
using Nghttp2SendCallback = nghttp2_send_callback;
using Nghttp2DataReadCallback = nghttp2_data_source_read_callback;

inline void SetSendCallback(nghttp2_session_callbacks* cbs,
                            Nghttp2SendCallback cb) {
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
inline int SubmitData(nghttp2_session* s, uint8_t flags, int32_t stream_id,
                      const Nghttp2DataProvider* data) {
  return nghttp2_submit_data(s, flags, stream_id, data);
}
#endif

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_NGHTTP2_COMPAT_H_
