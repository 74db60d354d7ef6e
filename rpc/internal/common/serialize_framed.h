#ifndef H2RPC_RPC_INTERNAL_COMMON_SERIALIZE_FRAMED_H_
#define H2RPC_RPC_INTERNAL_COMMON_SERIALIZE_FRAMED_H_

#include <climits>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "rpc/compression.h"
#include "rpc/internal/message_ref.h"
#include "rpc/status.h"

namespace h2rpc::internal {

// Largest message protobuf serializes (its sizes are ints). Bytes.
inline constexpr size_t kMaxSerializedMessageSize = INT_MAX;

// Appends `message` to `*out` as one gRPC length-prefixed message.
// Uncompressed (identity), it is serialized in place: no intermediate copy,
// and no allocation once `*out` has the capacity; an empty `*out` too small
// for a large message takes its storage from
// transport::LargeBufferCache::Global() (where OutgoingData gives it back).
// Otherwise it is serialized into the thread's scratch buffer and compressed
// into `*out` (see AppendCompressedFramedMessage: sent as is when that is
// smaller). RESOURCE_EXHAUSTED naming the size and the limit, with `*out`
// untouched and nothing serialized, if message.ByteSizeLong() is larger than
// `max_send_message_size` or than kMaxSerializedMessageSize bytes. Any
// thread; allocates only to grow `*out`, the scratch buffer, or an error.
Status SerializeFramed(const google::protobuf::MessageLite& message,
                       CompressionAlgorithm compression,
                       size_t max_send_message_size, std::string* out);

// Appends `serialized` (a message's bytes, which must not point into
// `*out`) as one gRPC length-prefixed message: copied after the prefix, or
// compressed as SerializeFramed does. The same limits and errors.
Status AppendFramed(absl::string_view serialized,
                    CompressionAlgorithm compression,
                    size_t max_send_message_size, std::string* out);

// SerializeFramed of the referenced message, or AppendFramed of the
// referenced buffer's bytes.
Status SerializeFramed(ConstMessageRef message,
                       CompressionAlgorithm compression,
                       size_t max_send_message_size, std::string* out);
// The size of the message SerializeFramed(`message`) last framed (before
// compression).
size_t FramedMessageSize(ConstMessageRef message);

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_SERIALIZE_FRAMED_H_
