// Fuzzes the grpc-message percent-encoding. Invariants:
//  * PercentEncode writes exactly PercentEncodedLength bytes, all printable
//    ASCII, and PercentDecode restores the input exactly.
//  * PercentDecode of arbitrary input never crashes and never grows it.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "transport/core/grpc_message.h"

namespace {

void Check(bool condition) {
  if (!condition) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using h2rpc::transport::PercentDecode;
  using h2rpc::transport::PercentEncode;
  using h2rpc::transport::PercentEncodedLength;

  const absl::string_view input(reinterpret_cast<const char*>(data), size);

  // Round trip. A guard byte past the end catches overlong writes.
  const size_t length = PercentEncodedLength(input);
  Check(length >= size && length <= 3 * size);
  std::string encoded(length + 1, '\x5A');
  PercentEncode(input, &encoded[0]);
  Check(encoded[length] == '\x5A');
  encoded.resize(length);
  for (char c : encoded) Check(c >= 0x20 && c <= 0x7E);
  Check(PercentDecode(encoded) == input);

  // Arbitrary input as a received grpc-message.
  const std::string decoded = PercentDecode(input);
  Check(decoded.size() <= size);
  return 0;
}
