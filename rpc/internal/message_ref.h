#ifndef H2RPC_RPC_INTERNAL_MESSAGE_REF_H_
#define H2RPC_RPC_INTERNAL_MESSAGE_REF_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "rpc/byte_buffer.h"

namespace h2rpc::internal {

// What a call reads a message into: a protobuf message (parsed) or a
// ByteBuffer (the serialized bytes, copied), or nothing. Two pointers,
// passed by value; converts implicitly from either pointer, so the typed
// reactors and streams take both.
class MessageRef {
 public:
  MessageRef() = default;
  MessageRef(std::nullptr_t) {}  // NOLINT: implicit, as a pointer
  MessageRef(google::protobuf::MessageLite* message)  // NOLINT
      : message_(message) {}
  MessageRef(ByteBuffer* bytes) : bytes_(bytes) {}  // NOLINT

  explicit operator bool() const {
    return message_ != nullptr || bytes_ != nullptr;
  }
  // Parses `serialized` into the message or copies it into the buffer;
  // false if it does not parse.
  bool Read(absl::string_view serialized) const {
    if (bytes_ != nullptr) {
      bytes_->Assign(serialized);
      return true;
    }
    return message_->ParseFromArray(serialized.data(),
                                    static_cast<int>(serialized.size()));
  }

 private:
  google::protobuf::MessageLite* message_ = nullptr;
  ByteBuffer* bytes_ = nullptr;
};

// What a call writes: a protobuf message (serialized when written) or a
// ByteBuffer (sent as is), or nothing.
class ConstMessageRef {
 public:
  ConstMessageRef() = default;
  ConstMessageRef(std::nullptr_t) {}                             // NOLINT
  ConstMessageRef(const google::protobuf::MessageLite* message)  // NOLINT
      : message_(message) {}
  ConstMessageRef(const ByteBuffer* bytes) : bytes_(bytes) {}  // NOLINT

  explicit operator bool() const {
    return message_ != nullptr || bytes_ != nullptr;
  }
  // Exactly one of these is non-null unless the reference is empty.
  const google::protobuf::MessageLite* message() const { return message_; }
  const ByteBuffer* bytes() const { return bytes_; }

 private:
  const google::protobuf::MessageLite* message_ = nullptr;
  const ByteBuffer* bytes_ = nullptr;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_MESSAGE_REF_H_
