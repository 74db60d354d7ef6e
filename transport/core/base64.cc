#include "transport/core/base64.h"

#include <cstdint>

namespace h2rpc::transport {
namespace {

constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Maps a character to its 6-bit value, or kInvalid.
constexpr uint8_t kInvalid = 0x80;

struct DecodeTable {
  uint8_t value[256];
  constexpr DecodeTable() : value() {
    for (int i = 0; i < 256; ++i) value[i] = kInvalid;
    for (int i = 0; i < 64; ++i) {
      value[static_cast<unsigned char>(kAlphabet[i])] = static_cast<uint8_t>(i);
    }
  }
};

constexpr DecodeTable kDecode;

inline uint32_t Lookup(char c) {
  return kDecode.value[static_cast<unsigned char>(c)];
}

}  // namespace

void Base64EncodeUnpadded(absl::string_view in, char* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  for (; n - i >= 3; i += 3) {
    const uint32_t v =
        uint32_t{p[i]} << 16 | uint32_t{p[i + 1]} << 8 | p[i + 2];
    *out++ = kAlphabet[v >> 18];
    *out++ = kAlphabet[(v >> 12) & 0x3F];
    *out++ = kAlphabet[(v >> 6) & 0x3F];
    *out++ = kAlphabet[v & 0x3F];
  }
  if (n - i == 1) {
    const uint32_t v = uint32_t{p[i]} << 16;
    *out++ = kAlphabet[v >> 18];
    *out++ = kAlphabet[(v >> 12) & 0x3F];
  } else if (n - i == 2) {
    const uint32_t v = uint32_t{p[i]} << 16 | uint32_t{p[i + 1]} << 8;
    *out++ = kAlphabet[v >> 18];
    *out++ = kAlphabet[(v >> 12) & 0x3F];
    *out++ = kAlphabet[(v >> 6) & 0x3F];
  }
}

ptrdiff_t Base64Decode(absl::string_view in, char* out) {
  size_t n = in.size();
  // Count trailing '=' (stopping at 3: already too many).
  size_t padding = 0;
  while (padding < n && padding < 3 && in[n - 1 - padding] == '=') ++padding;
  if (padding > 2) return -1;
  if (padding > 0 && n % 4 != 0) return -1;
  n -= padding;
  if (n % 4 == 1) return -1;

  const char* s = in.data();
  char* const start = out;
  size_t i = 0;
  for (; n - i >= 4; i += 4) {
    const uint32_t a = Lookup(s[i]), b = Lookup(s[i + 1]), c = Lookup(s[i + 2]),
                   d = Lookup(s[i + 3]);
    if ((a | b | c | d) & kInvalid) return -1;
    const uint32_t v = a << 18 | b << 12 | c << 6 | d;
    *out++ = static_cast<char>(v >> 16);
    *out++ = static_cast<char>(v >> 8);
    *out++ = static_cast<char>(v);
  }
  if (n - i == 2) {
    const uint32_t a = Lookup(s[i]), b = Lookup(s[i + 1]);
    if ((a | b) & kInvalid) return -1;
    *out++ = static_cast<char>((a << 18 | b << 12) >> 16);
  } else if (n - i == 3) {
    const uint32_t a = Lookup(s[i]), b = Lookup(s[i + 1]), c = Lookup(s[i + 2]);
    if ((a | b | c) & kInvalid) return -1;
    const uint32_t v = a << 18 | b << 12 | c << 6;
    *out++ = static_cast<char>(v >> 16);
    *out++ = static_cast<char>(v >> 8);
  }
  return out - start;
}

}  // namespace h2rpc::transport
