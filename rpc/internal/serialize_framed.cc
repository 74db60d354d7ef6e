#include "rpc/internal/serialize_framed.h"

#include "transport/message_framer.h"

namespace h2rpc::internal {

Status SerializeFramed(const google::protobuf::MessageLite& message,
                       size_t max_send_message_size, std::string* out) {
  const size_t size = message.ByteSizeLong();
  Status status = transport::CheckSendMessageSize(size, max_send_message_size);
  if (!status.ok()) return status;
  const size_t start = out->size();
  out->resize(start + transport::kMessagePrefixSize + size);
  transport::EncodeMessagePrefix(
      /*compressed=*/false, static_cast<uint32_t>(size), out->data() + start);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(
      out->data() + start + transport::kMessagePrefixSize));
  return status;
}

}  // namespace h2rpc::internal
