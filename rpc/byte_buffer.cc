#include "rpc/byte_buffer.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"

namespace h2rpc {

bool ByteBuffer::Parse(google::protobuf::MessageLite* message) const {
  ByteBufferReader reader(*this);
  return message->ParseFromZeroCopyStream(&reader);
}

Status ByteBuffer::Serialize(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  if (size > static_cast<size_t>(INT_MAX)) {
    return Status(StatusCode::kInternal,
                  absl::StrCat("a message of ", size,
                               " bytes is larger than protobuf serializes"));
  }
  storage_.resize(size);
  message.SerializeWithCachedSizesToArray(
      reinterpret_cast<uint8_t*>(storage_.data()));
  return Status();
}

ByteBufferReader::ByteBufferReader(const ByteBuffer& buffer)
    : bytes_(buffer.bytes()) {}

bool ByteBufferReader::Next(const void** data, int* size) {
  const size_t offset = static_cast<size_t>(byte_count_);
  if (offset == bytes_.size()) return false;
  const size_t n = std::min<size_t>(bytes_.size() - offset, INT_MAX);
  *data = bytes_.data() + offset;
  *size = static_cast<int>(n);
  byte_count_ += static_cast<int64_t>(n);
  return true;
}

void ByteBufferReader::BackUp(int count) {
  // Only after Next(), and no more than it returned (the interface's rule).
  byte_count_ -= count;
}

bool ByteBufferReader::Skip(int count) {
  const size_t left = bytes_.size() - static_cast<size_t>(byte_count_);
  if (static_cast<size_t>(count) > left) {
    byte_count_ = static_cast<int64_t>(bytes_.size());
    return false;
  }
  byte_count_ += count;
  return true;
}

}  // namespace h2rpc
