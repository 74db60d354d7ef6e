#include "transport/http2/stream_base.h"

#include <algorithm>

namespace h2rpc::transport::http2 {

size_t OutgoingData::Reserve(size_t max) {
  const size_t n = std::min(max, unreserved());
  reserved_ += n;
  return n;
}

void OutgoingData::CopyReserved(size_t n, std::string* out) {
  out->append(buffer_.data() + written_, n);
  written_ += n;
  if (!end_of_data_) {
    // A stream still writing: drop what was written, keeping capacity, so a
    // long stream reuses one buffer. A finished body stays until Clear(), so
    // a refused stream can resend it. Moving the unwritten tail costs at
    // most as much as the bytes written since the last move.
    if (written_ == buffer_.size()) {
      buffer_.clear();
      reserved_ = written_ = 0;
      dropped_sent_bytes_ = true;
    } else if (written_ >= pending()) {
      buffer_.erase(0, written_);
      reserved_ -= written_;
      written_ = 0;
      dropped_sent_bytes_ = true;
    }
  }
  if (drain_listener_ != nullptr && pending() <= drain_threshold_) {
    DrainListener* listener = drain_listener_;
    drain_listener_ = nullptr;
    listener->OnOutgoingDrained();
  }
}

bool OutgoingData::Rewind() {
  if (!end_of_data_ || dropped_sent_bytes_) return false;
  reserved_ = written_ = 0;
  deferred = false;
  return true;
}

void OutgoingData::Clear() {
  buffer_.clear();
  drain_listener_ = nullptr;
  drain_threshold_ = 0;
  reserved_ = written_ = 0;
  end_of_data_ = false;
  dropped_sent_bytes_ = false;
  deferred = false;
}

void ReceivedHeaderBlock::Add(nghttp2_rcbuf* name, nghttp2_rcbuf* value) {
  nghttp2_rcbuf_incref(name);
  nghttp2_rcbuf_incref(value);
  rcbufs_.emplace_back(name, value);
  const nghttp2_vec n = nghttp2_rcbuf_get_buf(name);
  const nghttp2_vec v = nghttp2_rcbuf_get_buf(value);
  fields_.push_back(HeaderField{
      absl::string_view(reinterpret_cast<const char*>(n.base), n.len),
      absl::string_view(reinterpret_cast<const char*>(v.base), v.len)});
}

void ReceivedHeaderBlock::Release() {
  for (auto& [name, value] : rcbufs_) {
    nghttp2_rcbuf_decref(name);
    nghttp2_rcbuf_decref(value);
  }
  rcbufs_.clear();
  fields_.clear();
}

}  // namespace h2rpc::transport::http2
