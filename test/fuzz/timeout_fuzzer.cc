// Fuzzes the grpc-timeout codec. Invariants:
//  * DecodeGrpcTimeout never crashes; whatever it accepts re-encodes to at
//    most 9 bytes that decode to a duration >= the original (never shorter).
//  * EncodeGrpcTimeout of any duration built from the input produces 1-8
//    digits plus a unit, which decodes to >= the duration when that fits in
//    99999999 hours.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/core/timeout.h"

namespace {

using h2rpc::transport::DecodeGrpcTimeout;
using h2rpc::transport::EncodeGrpcTimeout;
using h2rpc::transport::kMaxGrpcTimeoutLength;

void Check(bool condition) {
  if (!condition) abort();
}

// Encodes `d` and checks the result.
void CheckEncode(absl::Duration d) {
  // Keep the GrpcTimeoutText alive: view() points into it.
  const h2rpc::transport::GrpcTimeoutText encoded = EncodeGrpcTimeout(d);
  const absl::string_view text = encoded.view();
  Check(text.size() >= 2 && text.size() <= kMaxGrpcTimeoutLength);
  const absl::optional<absl::Duration> decoded = DecodeGrpcTimeout(text);
  Check(decoded.has_value());
  Check(*decoded > absl::ZeroDuration());
  if (d <= absl::Hours(99999999)) Check(*decoded >= d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const absl::optional<absl::Duration> decoded = DecodeGrpcTimeout(input);
  if (decoded.has_value()) {
    Check(size >= 2 && size <= kMaxGrpcTimeoutLength);
    Check(*decoded >= absl::ZeroDuration());
    Check(*decoded <= absl::Hours(99999999));
    CheckEncode(*decoded);
  }
  // Also treat the first 8 bytes as a count of quarter nanoseconds (the
  // resolution of absl::Duration), to reach every encoder branch.
  if (size >= sizeof(int64_t)) {
    int64_t quarters;
    std::memcpy(&quarters, data, sizeof(quarters));
    CheckEncode(absl::Nanoseconds(1) * quarters / 4);
  }
  return 0;
}
