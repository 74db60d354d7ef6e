#ifndef H2RPC_RPC_BYTE_BUFFER_H_
#define H2RPC_RPC_BYTE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "google/protobuf/message_lite.h"
#include "rpc/status.h"

namespace h2rpc {

namespace internal {
class ByteBufferAccess;
}  // namespace internal

// A message as serialized bytes (gRPC C++'s ByteBuffer): what generic calls
// and services read and write when they have no generated type for the
// method, or want to pass a message on without parsing it. Reads fill it
// with the received message (decompressed) and writes send its bytes as
// they are; neither parses anything.
//
// Storage is one contiguous buffer that keeps its capacity: a buffer read
// into again and again, or assigned again and again, allocates nothing once
// it has held a message as large. A read into a buffer copies the message
// out of the connection's buffers once; a write copies it into the
// stream's send buffer once.
//
// Move-only (Copy() copies). Not thread-safe: one thread at a time, and
// not while a read into it or a write from it is outstanding.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  explicit ByteBuffer(absl::string_view bytes) : storage_(bytes) {}
  ByteBuffer(ByteBuffer&& other) noexcept = default;
  ByteBuffer& operator=(ByteBuffer&& other) noexcept = default;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  size_t size() const { return storage_.size(); }
  bool empty() const { return storage_.empty(); }
  // The bytes, valid while the buffer is not changed.
  absl::string_view bytes() const { return storage_; }

  // Replaces the contents with a copy of `bytes` (which must not point into
  // this buffer), keeping the capacity.
  void Assign(absl::string_view bytes) {
    storage_.assign(bytes.data(), bytes.size());
  }
  // Takes `bytes` without a copy.
  void Adopt(std::string bytes) { storage_ = std::move(bytes); }
  // Empties the buffer, keeping its capacity.
  void Clear() { storage_.clear(); }
  // A copy of the contents.
  std::string ToString() const { return storage_; }
  ByteBuffer Copy() const { return ByteBuffer(bytes()); }
  void Swap(ByteBuffer* other) { storage_.swap(other->storage_); }

  // Parses the contents into `message` (through a ByteBufferReader); false
  // if they are not a valid message of its type.
  bool Parse(google::protobuf::MessageLite* message) const;
  // Replaces the contents with `message` serialized, keeping the capacity.
  // INTERNAL if it is larger than protobuf serializes (2 GiB).
  Status Serialize(const google::protobuf::MessageLite& message);

 private:
  // The channel's generic unary calls fill the storage in place.
  friend class internal::ByteBufferAccess;

  std::string storage_;
};

namespace internal {
class ByteBufferAccess {
 public:
  static std::string* Storage(ByteBuffer* buffer) { return &buffer->storage_; }
};
}  // namespace internal

// Reads a ByteBuffer as a protobuf ZeroCopyInputStream (without a copy),
// for parsers that take one. The buffer must not change while the reader
// is used.
class ByteBufferReader final
    : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit ByteBufferReader(const ByteBuffer& buffer);

  bool Next(const void** data, int* size) override;
  void BackUp(int count) override;
  bool Skip(int count) override;
  int64_t ByteCount() const override { return byte_count_; }

 private:
  const absl::string_view bytes_;
  int64_t byte_count_ = 0;  // bytes_'s returned by Next() and not backed up
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_BYTE_BUFFER_H_
