#ifndef H2RPC_TRANSPORT_CORE_MESSAGE_FRAMER_H_
#define H2RPC_TRANSPORT_CORE_MESSAGE_FRAMER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "base/status.h"

namespace h2rpc::transport {

// The sending half of gRPC message framing (PROTOCOL-HTTP2.md,
// "Length-Prefixed-Message"): every message on a stream's DATA frames is
//
//   1 byte  Compressed-Flag (0 = as is, 1 = compressed with grpc-encoding)
//   4 bytes Message-Length, big-endian, unsigned
//   Message-Length bytes of message
//
// The receiving half is MessageDeframer (transport/message_deframer.h).

// Size of the length prefix in front of every message.
inline constexpr size_t kMessagePrefixSize = 5;

// Largest length the 4-byte prefix can express.
inline constexpr size_t kMaxFramedMessageSize = 0xFFFFFFFFu;

// Writes the 5-byte prefix of a message of `length` bytes to `out`, which must
// have room for kMessagePrefixSize bytes. Never fails, never allocates.
void EncodeMessagePrefix(bool compressed, uint32_t length, char* out);

// A decoded prefix. `flag` is the raw first byte: only 0 and 1 are valid, and
// judging that (and the length) is the caller's business.
struct MessagePrefix {
  uint8_t flag;
  uint32_t length;
};

// Reads the kMessagePrefixSize bytes at `in`. Never fails, never allocates.
MessagePrefix DecodeMessagePrefix(const char* in);

// Returns OK if a message of `size` bytes may be sent under the limit
// `max_send_message_size` (bytes), else RESOURCE_EXHAUSTED naming both:
// "sent message of 5242880 bytes exceeds the limit of 4194304
// (max_send_message_size)". A size the 4-byte prefix cannot express
// (> kMaxFramedMessageSize) is refused the same way, whatever the limit.
// Allocates only to build an error.
Status CheckSendMessageSize(size_t size, size_t max_send_message_size);

// Appends `message` framed (prefix, then the bytes) to `*out`, after checking
// it with CheckSendMessageSize(); on error `*out` is left untouched. Grows
// `*out` at most once, to what the new contents need (none if its capacity
// already suffices). `message` must not point into `*out`. The caller
// compresses beforehand and passes `compressed` accordingly.
Status AppendFramedMessage(absl::string_view message, bool compressed,
                           size_t max_send_message_size, std::string* out);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_MESSAGE_FRAMER_H_
