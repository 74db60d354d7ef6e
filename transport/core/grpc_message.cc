#include "transport/core/grpc_message.h"

namespace h2rpc::transport {
namespace {

constexpr char kUpperHex[] = "0123456789ABCDEF";

bool NeedsEscape(unsigned char c) { return c < 0x20 || c > 0x7E || c == '%'; }

// Returns the value of hex digit `c` (either case), or -1.
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

size_t PercentEncodedLength(absl::string_view message) {
  size_t length = message.size();
  for (char c : message) {
    if (NeedsEscape(static_cast<unsigned char>(c))) length += 2;
  }
  return length;
}

void PercentEncode(absl::string_view message, char* out) {
  for (char c : message) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (NeedsEscape(byte)) {
      *out++ = '%';
      *out++ = kUpperHex[byte >> 4];
      *out++ = kUpperHex[byte & 0xF];
    } else {
      *out++ = c;
    }
  }
}

std::string PercentDecode(absl::string_view encoded) {
  std::string decoded;
  decoded.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%' && i + 2 < encoded.size() &&
        HexValue(encoded[i + 1]) >= 0 && HexValue(encoded[i + 2]) >= 0) {
      decoded.push_back(static_cast<char>(HexValue(encoded[i + 1]) << 4 |
                                          HexValue(encoded[i + 2])));
      i += 2;
    } else {
      decoded.push_back(encoded[i]);
    }
  }
  return decoded;
}

}  // namespace h2rpc::transport
