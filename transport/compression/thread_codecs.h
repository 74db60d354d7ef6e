#ifndef H2RPC_TRANSPORT_COMPRESSION_THREAD_CODECS_H_
#define H2RPC_TRANSPORT_COMPRESSION_THREAD_CODECS_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "base/compression_algorithm.h"
#include "base/status.h"

namespace h2rpc::transport::compression {

// Whole-message compression for the transport and the rpc layer, with codecs
// from the calling thread's ZlibCodecPool. Every thread that compresses (an
// event loop, a worker running a synchronous handler, a user thread starting
// a unary call) compresses one message at a time, so each keeps at most one
// warm codec per kind and algorithm, reset between messages: a warm thread
// compresses and decompresses without allocating.

// Appends `message` to `*out` as one gRPC length-prefixed message: compressed
// with `algorithm` and flagged 1, or, when compression would not make it
// smaller (or `algorithm` is identity), as is and flagged 0, as gRPC does.
// The send limit applies to the uncompressed size (RESOURCE_EXHAUSTED, see
// CheckSendMessageSize). On error `*out` is left as it was. `message` must
// not point into `*out`.
Status AppendCompressedFramedMessage(absl::string_view message,
                                     CompressionAlgorithm algorithm,
                                     size_t max_send_message_size,
                                     std::string* out);

// Decompresses a received message flagged compressed with `algorithm` (not
// identity) into this thread's scratch buffer and points `*out` at the
// result, which stays valid until the next call on this thread. A message
// that would inflate beyond `max_output` bytes stops there with
// RESOURCE_EXHAUSTED naming the limit; corrupt input gives INTERNAL. The
// scratch buffer keeps its capacity up to kMaxRetainedScratch bytes.
Status DecompressMessage(absl::string_view message,
                         CompressionAlgorithm algorithm, size_t max_output,
                         absl::string_view* out);

// Scratch capacity a thread keeps between messages; a larger message's
// buffer is freed at the next call.
inline constexpr size_t kMaxRetainedScratch = 1 << 20;

}  // namespace h2rpc::transport::compression

#endif  // H2RPC_TRANSPORT_COMPRESSION_THREAD_CODECS_H_
