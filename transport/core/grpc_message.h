#ifndef H2RPC_TRANSPORT_CORE_GRPC_MESSAGE_H_
#define H2RPC_TRANSPORT_CORE_GRPC_MESSAGE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace h2rpc::transport {

// Percent-encoding of the `grpc-message` header value (PROTOCOL-HTTP2.md):
// every byte outside 0x20-0x7E, and '%' itself, is sent as "%XX" with
// upper-case hex digits; every other byte is sent unchanged. A message is
// usually UTF-8 text, but any bytes round-trip.

// Returns the number of bytes PercentEncode writes for `message`: its size
// plus two for every byte that needs escaping. Does not allocate.
size_t PercentEncodedLength(absl::string_view message);

// Writes the percent-encoding of `message` to `out`, which must have room for
// exactly PercentEncodedLength(message) bytes (no terminator is written).
// Does not allocate, so callers can encode into pre-sized storage.
void PercentEncode(absl::string_view message, char* out);

// Decodes a received `grpc-message` value. Never fails: each "%XX" with two
// hex digits (either case) becomes the byte 0xXX, and a '%' not followed by
// two hex digits is kept as is, as are all other bytes. For example "%41"
// becomes "A", "%zz" stays "%zz" and "%%41" becomes "%A".
std::string PercentDecode(absl::string_view encoded);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_GRPC_MESSAGE_H_
