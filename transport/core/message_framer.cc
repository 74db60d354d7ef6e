#include "transport/core/message_framer.h"

#include "absl/strings/str_cat.h"

namespace h2rpc::transport {

void EncodeMessagePrefix(bool compressed, uint32_t length, char* out) {
  out[0] = compressed ? 1 : 0;
  out[1] = static_cast<char>((length >> 24) & 0xFF);
  out[2] = static_cast<char>((length >> 16) & 0xFF);
  out[3] = static_cast<char>((length >> 8) & 0xFF);
  out[4] = static_cast<char>(length & 0xFF);
}

MessagePrefix DecodeMessagePrefix(const char* in) {
  const auto* u = reinterpret_cast<const unsigned char*>(in);
  MessagePrefix prefix;
  prefix.flag = u[0];
  prefix.length = (uint32_t{u[1]} << 24) | (uint32_t{u[2]} << 16) |
                  (uint32_t{u[3]} << 8) | uint32_t{u[4]};
  return prefix;
}

Status CheckSendMessageSize(size_t size, size_t max_send_message_size) {
  if (size > kMaxFramedMessageSize) {
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("sent message of ", size, " bytes exceeds the limit of ",
                     kMaxFramedMessageSize,
                     " (the 32-bit gRPC message length prefix)"));
  }
  if (size > max_send_message_size) {
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("sent message of ", size, " bytes exceeds the limit of ",
                     max_send_message_size, " (max_send_message_size)"));
  }
  return Status();
}

Status AppendFramedMessage(absl::string_view message, bool compressed,
                           size_t max_send_message_size, std::string* out) {
  Status status = CheckSendMessageSize(message.size(), max_send_message_size);
  if (!status.ok()) return status;
  char prefix[kMessagePrefixSize];
  EncodeMessagePrefix(compressed, static_cast<uint32_t>(message.size()),
                      prefix);
  out->reserve(out->size() + kMessagePrefixSize + message.size());
  out->append(prefix, kMessagePrefixSize);
  out->append(message.data(), message.size());
  return status;
}

}  // namespace h2rpc::transport
