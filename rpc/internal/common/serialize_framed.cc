#include "rpc/internal/common/serialize_framed.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "transport/compression/thread_codecs.h"
#include "transport/core/large_buffer_cache.h"
#include "transport/core/message_framer.h"

namespace h2rpc::internal {
namespace {

// Appends the prefix of an uncompressed message of `size` bytes and room for
// the message to `*out`; returns where the message goes. An empty `*out` too
// small for a large message takes its storage from
// transport::LargeBufferCache::Global().
char* AppendUncompressedFrame(size_t size, std::string* out) {
  const size_t start = out->size();
  const size_t framed_size = transport::kMessagePrefixSize + size;
  if (start == 0 && out->capacity() < framed_size &&
      framed_size >= transport::LargeBufferCache::kMinCapacity) {
    transport::LargeBufferCache::Global().Take(framed_size, out);
  }
  out->resize(start + framed_size);
  transport::EncodeMessagePrefix(
      /*compressed=*/false, static_cast<uint32_t>(size), out->data() + start);
  return out->data() + start + transport::kMessagePrefixSize;
}

}  // namespace

Status SerializeFramed(const google::protobuf::MessageLite& message,
                       CompressionAlgorithm compression,
                       size_t max_send_message_size, std::string* out) {
  const size_t size = message.ByteSizeLong();
  Status status = transport::CheckSendMessageSize(size, max_send_message_size);
  if (!status.ok()) return status;
  if (size > kMaxSerializedMessageSize) {
    // Protobuf would abort the process rather than serialize it.
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("sent message of ", size, " bytes exceeds the limit of ",
                     kMaxSerializedMessageSize,
                     " (the largest message protobuf serializes)"));
  }
  if (compression != CompressionAlgorithm::kIdentity) {
    thread_local std::string serialized;
    if (serialized.capacity() > transport::compression::kMaxRetainedScratch) {
      std::string().swap(serialized);
    }
    serialized.resize(size);
    message.SerializeWithCachedSizesToArray(
        reinterpret_cast<uint8_t*>(serialized.data()));
    return transport::compression::AppendCompressedFramedMessage(
        serialized, compression, max_send_message_size, out);
  }
  message.SerializeWithCachedSizesToArray(
      reinterpret_cast<uint8_t*>(AppendUncompressedFrame(size, out)));
  return status;
}

Status AppendFramed(absl::string_view serialized,
                    CompressionAlgorithm compression,
                    size_t max_send_message_size, std::string* out) {
  const size_t size = serialized.size();
  Status status = transport::CheckSendMessageSize(size, max_send_message_size);
  if (!status.ok()) return status;
  if (size > UINT32_MAX) {
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("sent message of ", size, " bytes exceeds the limit of ",
                     UINT32_MAX, " (the largest gRPC length prefix)"));
  }
  if (compression != CompressionAlgorithm::kIdentity) {
    return transport::compression::AppendCompressedFramedMessage(
        serialized, compression, max_send_message_size, out);
  }
  char* body = AppendUncompressedFrame(size, out);
  if (size > 0) std::memcpy(body, serialized.data(), size);
  return status;
}

Status SerializeFramed(ConstMessageRef message,
                       CompressionAlgorithm compression,
                       size_t max_send_message_size, std::string* out) {
  if (message.bytes() != nullptr) {
    return AppendFramed(message.bytes()->bytes(), compression,
                        max_send_message_size, out);
  }
  return SerializeFramed(*message.message(), compression, max_send_message_size,
                         out);
}

size_t FramedMessageSize(ConstMessageRef message) {
  return message.bytes() != nullptr ? message.bytes()->size()
                                    : message.message()->GetCachedSize();
}

}  // namespace h2rpc::internal
