#include "transport/http2/stream_base.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "transport/core/large_buffer_cache.h"

namespace h2rpc::transport::http2 {

OutgoingData::~OutgoingData() {
  GiveLentBuffer();
  set_quota(nullptr);
}

size_t OutgoingData::Reserve(size_t max) {
  const size_t n = std::min(max, unreserved());
  reserved_ += n;
  return n;
}

Status OutgoingData::ChargeAppended() {
  const size_t waiting = pending();
  if (quota_ == nullptr || waiting <= charged_) return Status();
  const size_t bytes = waiting - charged_;
  if (quota_->TryReserve(bytes)) {
    charged_ += bytes;
    return Status();
  }
  // Appended since the last charge, and the stream not resumed since: none
  // of these bytes was handed to nghttp2.
  const size_t dropped = std::min(bytes, unreserved());
  buffer_.resize(buffer_.size() - dropped);
  if (buffer_.capacity() > kRetainedCapacity &&
      buffer_.size() <= kRetainedCapacity) {
    buffer_.shrink_to_fit();
  }
  return quota_->Refusal(
      absl::StrCat("a message of ", bytes, " bytes to send"));
}

void OutgoingData::set_quota(MemoryQuotaShare* quota) {
  if (quota_ != nullptr && charged_ > 0) quota_->Release(charged_);
  charged_ = 0;
  quota_ = quota;
}

void OutgoingData::ReleaseWritten() {
  if (charged_ <= pending()) return;
  quota_->Release(charged_ - pending());
  charged_ = pending();
}

void OutgoingData::EmptyBuffer() {
  if (buffer_.capacity() > kRetainedCapacity) {
    LargeBufferCache::Global().Give(&buffer_);
  } else {
    buffer_.clear();
  }
}

void OutgoingData::SendReserved(size_t n, OutputQueue* queue) {
  const absl::string_view bytes(buffer_.data() + written_, n);
  if (n >= OutputQueue::kMinLentBytes && end_of_data_ &&
      buffer_.capacity() > kRetainedCapacity &&
      (borrower_ == nullptr || borrower_ == queue)) {
    queue->AppendLent(this, bytes);
  } else {
    queue->Append(bytes);
  }
  written_ += n;
  if (!end_of_data_ && !retain_written_) {
    // A stream still writing: drop what was written, keeping capacity up to
    // kRetainedCapacity, so a long stream reuses one buffer. A finished (or
    // retained) body stays until Clear(), so it can be sent again. Moving
    // the unwritten tail costs at most as much as the bytes written since
    // the last move.
    if (written_ == buffer_.size()) {
      dropped_ += written_;
      EmptyBuffer();
      reserved_ = written_ = 0;
      dropped_sent_bytes_ = true;
    } else if (written_ >= pending()) {
      dropped_ += written_;
      buffer_.erase(0, written_);
      reserved_ -= written_;
      written_ = 0;
      dropped_sent_bytes_ = true;
    }
  }
  ReleaseWritten();
  if (drain_listener_ != nullptr && pending() <= drain_threshold_) {
    DrainListener* listener = drain_listener_;
    drain_listener_ = nullptr;
    listener->OnOutgoingDrained();
  }
}

void OutgoingData::TakeBackLent() {
  if (borrower_ != nullptr) borrower_->CopyLent(this);
}

void OutgoingData::GiveLentBuffer() {
  if (borrower_ != nullptr) borrower_->Adopt(this, &buffer_);
}

bool OutgoingData::Rewind() {
  if (dropped_sent_bytes_) return false;
  reserved_ = written_ = 0;
  messages_taken_ = 0;
  deferred = false;
  return true;
}

void OutgoingData::Clear() {
  if (quota_ != nullptr && charged_ > 0) quota_->Release(charged_);
  charged_ = 0;
  GiveLentBuffer();
  EmptyBuffer();
  drain_listener_ = nullptr;
  drain_threshold_ = 0;
  reserved_ = written_ = 0;
  dropped_ = 0;
  message_bytes_ = 0;
  messages_ = messages_taken_ = 0;
  end_of_data_ = false;
  retain_written_ = false;
  dropped_sent_bytes_ = false;
  deferred = false;
}

void ReceivedHeaderBlock::Add(nghttp2_rcbuf* name, nghttp2_rcbuf* value) {
  nghttp2_rcbuf_incref(name);
  nghttp2_rcbuf_incref(value);
  rcbufs_.emplace_back(name, value);
  fields_.push_back(HeaderField{RcbufView(name), RcbufView(value)});
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
