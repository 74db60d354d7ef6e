#include "rpc/internal/common/received_messages.h"

#include <algorithm>
#include <cstring>

#include "transport/core/message_framer.h"

namespace h2rpc::internal {
namespace {

// Appends `value` as a varint (7 bits a byte, low bits first) to `out`;
// returns the bytes written (at most 10).
size_t PutVarint(uint64_t value, char* out) {
  size_t n = 0;
  while (value >= 0x80) {
    out[n++] = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out[n++] = static_cast<char>(value);
  return n;
}

// Reads a varint written by PutVarint at `*pos`, advancing it.
uint64_t GetVarint(const std::string& bytes, size_t* pos) {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
}

}  // namespace

void ReceivedMessages::Push(absl::string_view message, bool compressed,
                            size_t held_bytes, CompressionAlgorithm encoding,
                            size_t max_size) {
  uint64_t flags = compressed ? kArrivedCompressed : 0;
  if (encoding != CompressionAlgorithm::kIdentity) {
    flags |= kQueuedCompressed;
    encoding_ = encoding;
    max_size_ = max_size;
  }
  if (held_bytes != transport::kMessagePrefixSize + message.size()) {
    flags |= kExplicitHeld;
  }
  const bool own_buffer = message.size() >= kOwnBufferSize;
  if (own_buffer) flags |= kOwnBuffer;
  char header[20];
  size_t header_size = PutVarint(
      (static_cast<uint64_t>(message.size()) << kFlagBits) | flags, header);
  if (flags & kExplicitHeld) {
    header_size += PutVarint(held_bytes, header + header_size);
  }
  if (own_buffer) {
    if (own_count_ == own_buffers_.size()) {
      // Full: the ring becomes the front of a vector twice its size.
      std::rotate(own_buffers_.begin(),
                  own_buffers_.begin() + static_cast<ptrdiff_t>(own_head_),
                  own_buffers_.end());
      own_head_ = 0;
      own_buffers_.resize(std::max<size_t>(4, 2 * own_buffers_.size()));
    }
    std::string& buffer =
        own_buffers_[(own_head_ + own_count_) % own_buffers_.size()];
    transport::LargeBufferCache::Global().Take(message.size(), &buffer);
    // Writes past the size the buffer came with only (see LargeBufferCache).
    buffer.resize(message.size());
    std::memcpy(buffer.data(), message.data(), message.size());
    ++own_count_;
    message = absl::string_view();  // the record is its header alone
  }
  const size_t record_size = header_size + message.size();
  if (bytes_.size() + record_size > bytes_.capacity() && head_ > 0 &&
      head_ >= bytes_.size() - head_) {
    // Moves the live records to the front rather than growing, when they
    // are no more than the taken bytes before them: each byte taken pays
    // for at most one byte moved.
    bytes_.erase(0, head_);
    head_ = 0;
  }
  bytes_.append(header, header_size);
  bytes_.append(message.data(), message.size());
  ++count_;
}

ReceivedMessages::Record ReceivedMessages::Front() const {
  Record record;
  size_t pos = head_;
  const uint64_t first = GetVarint(bytes_, &pos);
  record.flags = first & ((1u << kFlagBits) - 1);
  const size_t length = static_cast<size_t>(first >> kFlagBits);
  record.held_bytes = (record.flags & kExplicitHeld)
                          ? static_cast<size_t>(GetVarint(bytes_, &pos))
                          : transport::kMessagePrefixSize + length;
  record.header_size = pos - head_;
  record.message =
      (record.flags & kOwnBuffer)
          ? absl::string_view(own_buffers_[own_head_].data(), length)
          : absl::string_view(bytes_.data() + pos, length);
  return record;
}

Status ReceivedMessages::TakeFront(absl::string_view* message) const {
  const Record record = Front();
  if ((record.flags & kQueuedCompressed) == 0) {
    *message = record.message;
    return Status();
  }
  return transport::compression::DecompressMessage(record.message, encoding_,
                                                   max_size_, message);
}

void ReceivedMessages::Pop() {
  const Record record = Front();
  if (record.flags & kOwnBuffer) {
    transport::LargeBufferCache::Global().Give(&own_buffers_[own_head_]);
    own_head_ = (own_head_ + 1) % own_buffers_.size();
    --own_count_;
    head_ += record.header_size;
  } else {
    head_ += record.header_size + record.message.size();
  }
  if (--count_ == 0) Drop();
}

void ReceivedMessages::Drop() {
  for (; own_count_ > 0; --own_count_) {
    transport::LargeBufferCache::Global().Give(&own_buffers_[own_head_]);
    own_head_ = (own_head_ + 1) % own_buffers_.size();
  }
  own_head_ = 0;
  if (bytes_.capacity() > kRetainedCapacity) {
    transport::LargeBufferCache::Global().Give(&bytes_);
  } else {
    bytes_.clear();
  }
  head_ = 0;
  count_ = 0;
}

}  // namespace h2rpc::internal
