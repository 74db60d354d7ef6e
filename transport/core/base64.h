#ifndef H2RPC_TRANSPORT_CORE_BASE64_H_
#define H2RPC_TRANSPORT_CORE_BASE64_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace h2rpc::transport {

// Standard-alphabet base64 (RFC 4648 section 4) as gRPC uses it for `-bin`
// metadata: sent unpadded, accepted padded or unpadded. Neither function
// allocates.

// Length of the unpadded encoding of `size` bytes.
constexpr size_t Base64UnpaddedLength(size_t size) {
  return size / 3 * 4 + (size % 3 == 0 ? 0 : size % 3 + 1);
}

// Upper bound of the decoded length of `encoded_size` base64 characters
// (exact for unpadded input whose length is not a multiple of 4, at most two
// bytes over otherwise). Size decode buffers with it.
constexpr size_t Base64MaxDecodedLength(size_t encoded_size) {
  return encoded_size / 4 * 3 + 2;
}

// Writes exactly Base64UnpaddedLength(in.size()) characters to `out`, without
// padding and without a terminating NUL.
void Base64EncodeUnpadded(absl::string_view in, char* out);

// Decodes `in` (padded or unpadded) into `out`, which has room for
// Base64MaxDecodedLength(in.size()) bytes. Returns the decoded length, or -1
// if `in` is not valid base64: a character outside the alphabet (including
// the URL-safe '-' and '_' and any whitespace), padding anywhere but the end,
// more than two '=', a padded length that is not a multiple of 4, or a length
// that leaves a single dangling character. Empty input decodes to zero bytes.
//
// Non-zero trailing bits in the last character ("AB" rather than the
// canonical "AA") are accepted and ignored, as gRPC's own decoders do. On
// failure `out` may hold partial output; nothing is written past the decoded
// length of the valid prefix.
ptrdiff_t Base64Decode(absl::string_view in, char* out);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_BASE64_H_
