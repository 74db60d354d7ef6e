#ifndef H2RPC_TRANSPORT_HTTP1_BRIDGE_PARTS_H_
#define H2RPC_TRANSPORT_HTTP1_BRIDGE_PARTS_H_

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "transport/io/byte_session.h"

namespace h2rpc::transport::http1 {

// What both bridges (ServerBridge, ClientBridge) use between HTTP/1.1 and
// their in-memory nghttp2 session. Loop thread only.

// An nghttp2 field of `name` and `value`, which nghttp2 copies as the
// field list is submitted (into the session's pool): the views need to
// outlive the submitting call only.
inline nghttp2_nv CopiedField(absl::string_view name, absl::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

// Feeds `inner` everything `session` has to send (the in-memory half of
// the bridge talking to the real session), until it has nothing more or
// `*inner_closed` turns true (`inner` closed its wire while fed).
void FeedSessionOutput(nghttp2_session* session, io::ByteSession* inner,
                       const bool* inner_closed);

// Fields of HTTP/1.1 that are about its connection and mean nothing in
// HTTP/2 (RFC 9113 §8.2.2). `name` lowercase.
bool IsConnectionSpecific(absl::string_view name);

// An HTTP/1.1 body on its way into an nghttp2 stream: the bytes parsed and
// not yet taken by the stream's data provider (nghttp2 takes them as flow
// control allows), and whether the body has ended. Its buffer is kept
// across bodies.
class PendingBody {
 public:
  void Append(absl::string_view bytes) {
    bytes_.append(bytes.data(), bytes.size());
  }
  void set_complete() { complete_ = true; }
  bool complete() const { return complete_; }
  // Bytes parsed and not yet taken.
  size_t held() const { return bytes_.size() - taken_; }
  // Empties it for the next body.
  void Reset();
  // Drops the bytes held (their stream is gone); complete() stays.
  void DropHeld() {
    bytes_.clear();
    taken_ = 0;
  }
  // The data provider's side (nghttp2_data_source_read_callback): copies
  // up to `length` bytes to `buf` and returns how many, setting
  // NGHTTP2_DATA_FLAG_EOF in `*data_flags` once the body has ended and been
  // taken; NGHTTP2_ERR_DEFERRED while there is nothing to take yet.
  // `*drained_full`: the body held `full` bytes or more and now holds none
  // (whoever stopped reading at `full` reads again).
  ssize_t Take(uint8_t* buf, size_t length, uint32_t* data_flags, size_t full,
               bool* drained_full);

 private:
  std::string bytes_;
  size_t taken_ = 0;
  bool complete_ = false;
};

}  // namespace h2rpc::transport::http1

#endif  // H2RPC_TRANSPORT_HTTP1_BRIDGE_PARTS_H_
