#ifndef H2RPC_TRANSPORT_CORE_TIMEOUT_H_
#define H2RPC_TRANSPORT_CORE_TIMEOUT_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace h2rpc::transport {

// The `grpc-timeout` header value: 1 to 8 ASCII digits followed by one unit
// letter (H hours, M minutes, S seconds, m milliseconds, u microseconds,
// n nanoseconds), per PROTOCOL-HTTP2.md.
inline constexpr size_t kMaxGrpcTimeoutDigits = 8;
inline constexpr size_t kMaxGrpcTimeoutLength = kMaxGrpcTimeoutDigits + 1;

// A grpc-timeout value held inline, so encoding never allocates. The text
// lives as long as the object; call_setup points an nghttp2_nv at it.
class GrpcTimeoutText {
 public:
  // The encoded value, pointing into this object: do not call it on a
  // temporary (`EncodeGrpcTimeout(d).view()` dangles at the end of the
  // full expression).
  absl::string_view view() const { return absl::string_view(text_, size_); }

 private:
  friend GrpcTimeoutText EncodeGrpcTimeout(absl::Duration timeout);
  char text_[kMaxGrpcTimeoutLength] = {};
  size_t size_ = 0;
};

// Encodes `timeout` in the finest unit whose value fits in 8 digits, always
// rounding up so the peer never sees a shorter deadline than ours. A timeout
// <= 0 encodes as "1n" (the deadline has effectively passed); one too large for
// "99999999H" is clamped to it. Callers omit the header for an infinite
// deadline and fail a call whose deadline already passed before encoding.
// Never allocates.
GrpcTimeoutText EncodeGrpcTimeout(absl::Duration timeout);

// Decodes a grpc-timeout value. Returns nullopt for anything that is not
// exactly 1-8 digits followed by a valid unit: empty, 9+ digits, unknown unit,
// signs, spaces, missing digits or unit. Leading zeros count towards the 8
// digits; a zero value ("0S") is accepted and decodes to zero. Never
// allocates.
absl::optional<absl::Duration> DecodeGrpcTimeout(absl::string_view text);

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_TIMEOUT_H_
