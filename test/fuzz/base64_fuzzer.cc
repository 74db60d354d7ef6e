// Fuzzes transport/base64: decoding arbitrary input never writes past
// Base64MaxDecodedLength and accepts only what re-encodes to the same bytes;
// arbitrary bytes survive an encode/decode round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/string_view.h"
#include "transport/core/base64.h"

namespace {

using h2rpc::transport::Base64Decode;
using h2rpc::transport::Base64EncodeUnpadded;
using h2rpc::transport::Base64MaxDecodedLength;
using h2rpc::transport::Base64UnpaddedLength;

void Check(bool ok) {
  if (!ok) std::abort();
}

// The input decoded into a heap buffer of exactly the promised size, so
// AddressSanitizer catches any write past it.
void DecodeArbitrary(absl::string_view in) {
  const size_t room = Base64MaxDecodedLength(in.size());
  std::unique_ptr<char[]> out(new char[room]);
  const ptrdiff_t n = Base64Decode(in, out.get());
  Check(n >= -1);
  if (n < 0) return;
  Check(static_cast<size_t>(n) <= room);

  // Valid input: without its padding it is the unpadded encoding of the
  // decoded bytes, except possibly for unused trailing bits of its last
  // character.
  absl::string_view stripped = in;
  while (!stripped.empty() && stripped.back() == '=') stripped.remove_suffix(1);
  Check(in.size() - stripped.size() <= 2);
  const size_t encoded_size = Base64UnpaddedLength(static_cast<size_t>(n));
  Check(encoded_size == stripped.size());
  std::unique_ptr<char[]> encoded(new char[encoded_size]);
  Base64EncodeUnpadded(absl::string_view(out.get(), n), encoded.get());
  if (encoded_size > 0) {
    Check(std::memcmp(encoded.get(), stripped.data(), encoded_size - 1) == 0);
  }
  // And re-decoding the canonical form gives the same bytes.
  std::unique_ptr<char[]> again(new char[Base64MaxDecodedLength(encoded_size)]);
  Check(Base64Decode(absl::string_view(encoded.get(), encoded_size),
                     again.get()) == n);
  Check(n == 0 || std::memcmp(again.get(), out.get(), n) == 0);
}

void RoundTrip(absl::string_view raw) {
  const size_t encoded_size = Base64UnpaddedLength(raw.size());
  std::unique_ptr<char[]> encoded(new char[encoded_size + 2]);
  Base64EncodeUnpadded(raw, encoded.get());
  const absl::string_view unpadded(encoded.get(), encoded_size);
  Check(unpadded.find('=') == absl::string_view::npos);

  std::unique_ptr<char[]> decoded(
      new char[Base64MaxDecodedLength(encoded_size + 2)]);
  Check(Base64Decode(unpadded, decoded.get()) ==
        static_cast<ptrdiff_t>(raw.size()));
  Check(raw.empty() || std::memcmp(decoded.get(), raw.data(), raw.size()) == 0);

  // The padded form decodes to the same bytes.
  size_t padded_size = encoded_size;
  while (padded_size % 4 != 0) encoded[padded_size++] = '=';
  Check(Base64Decode(absl::string_view(encoded.get(), padded_size),
                     decoded.get()) == static_cast<ptrdiff_t>(raw.size()));
  Check(raw.empty() || std::memcmp(decoded.get(), raw.data(), raw.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view in(reinterpret_cast<const char*>(data), size);
  DecodeArbitrary(in);
  RoundTrip(in);
  return 0;
}
