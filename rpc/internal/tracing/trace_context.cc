#include "rpc/internal/tracing/trace_context.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace h2rpc::internal {
namespace {

// W3C's known trace-flags: sampled, random (Level 2).
constexpr uint8_t kKnownFlags = 0x03;
constexpr char kHex[] = "0123456789abcdef";

// Each byte's value as a lowercase hex digit; 0x10 and above: not one.
constexpr std::array<uint8_t, 256> kLowerHexValues = [] {
  std::array<uint8_t, 256> values{};
  for (auto& value : values) value = 0xff;
  for (int c = '0'; c <= '9'; ++c) values[c] = static_cast<uint8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) {
    values[c] = static_cast<uint8_t>(c - 'a' + 10);
  }
  return values;
}();

int LowerHexValue(char c) {
  const uint8_t value = kLowerHexValues[static_cast<unsigned char>(c)];
  return value < 0x10 ? value : -1;
}

// `text` (2 x N lowercase hex digits) into `out`; false if any is not one.
// Checks the digits together, once: a server parses one per traced call.
template <size_t N>
bool ParseHex(absl::string_view text, std::array<uint8_t, N>* out) {
  uint8_t invalid = 0;
  for (size_t i = 0; i < N; ++i) {
    const uint8_t high = kLowerHexValues[static_cast<uint8_t>(text[2 * i])];
    const uint8_t low = kLowerHexValues[static_cast<uint8_t>(text[2 * i + 1])];
    invalid |= high | low;
    (*out)[i] = static_cast<uint8_t>(high << 4 | (low & 0x0f));
  }
  return invalid < 0x10;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](uint8_t b) { return b == 0; });
}

template <size_t N>
char* WriteHex(const std::array<uint8_t, N>& bytes, char* out) {
  for (uint8_t b : bytes) {
    *out++ = kHex[b >> 4];
    *out++ = kHex[b & 0xf];
  }
  return out;
}

absl::string_view TrimSpacesAndTabs(absl::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
    value.remove_suffix(1);
  }
  return value;
}

bool LowerAlpha(char c) { return c >= 'a' && c <= 'z'; }
bool Digit(char c) { return c >= '0' && c <= '9'; }
bool KeyChar(char c) {
  return LowerAlpha(c) || Digit(c) || c == '_' || c == '-' || c == '*' ||
         c == '/' || c == '@';
}
// W3C's nblk-chr: printable ASCII but ',' and '='.
bool ValueChar(char c) { return c >= 0x21 && c <= 0x7e && c != ',' && c != '='; }

// One list member: empty (spaces and tabs) or key=value.
bool ValidMember(absl::string_view member) {
  member = TrimSpacesAndTabs(member);
  if (member.empty()) return true;
  const size_t equals = member.find('=');
  if (equals == absl::string_view::npos || equals == 0 || equals > 256) {
    return false;
  }
  const absl::string_view key = member.substr(0, equals);
  const absl::string_view value = member.substr(equals + 1);
  if (!LowerAlpha(key[0]) && !Digit(key[0])) return false;
  if (!std::all_of(key.begin(), key.end(), KeyChar)) return false;
  if (value.empty() || value.size() > 256) return false;
  // Spaces inside a value are allowed, not at its end (trimmed above).
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return c == ' ' || ValueChar(c); });
}

std::mt19937_64& ThreadGenerator() {
  thread_local std::mt19937_64 generator([] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }());
  return generator;
}

template <size_t N>
std::array<uint8_t, N> RandomNonZero() {
  std::array<uint8_t, N> bytes{};
  do {
    for (size_t i = 0; i < N; i += 8) {
      uint64_t random = ThreadGenerator()();
      for (size_t j = i; j < std::min(N, i + 8); ++j) {
        bytes[j] = static_cast<uint8_t>(random);
        random >>= 8;
      }
    }
  } while (AllZero(bytes));
  return bytes;
}

}  // namespace

bool ParseTraceparent(absl::string_view value, TraceContext* context) {
  value = TrimSpacesAndTabs(value);
  if (value.size() < kTraceparentSize || value[2] != '-' ||
      value[35] != '-' || value[52] != '-') {
    return false;
  }
  const int version_high = LowerHexValue(value[0]);
  const int version_low = LowerHexValue(value[1]);
  if (version_high < 0 || version_low < 0) return false;
  const int version = version_high << 4 | version_low;
  if (version == 0xff) return false;
  // Version 00 is exactly 55 characters; a later one may add fields after
  // a dash.
  if (version == 0 ? value.size() != kTraceparentSize
                   : value.size() > kTraceparentSize &&
                         value[kTraceparentSize] != '-') {
    return false;
  }
  TraceContext parsed;
  std::array<uint8_t, 1> flags{};
  if (!ParseHex(value.substr(3, 32), &parsed.trace_id) ||
      !ParseHex(value.substr(36, 16), &parsed.span_id) ||
      !ParseHex(value.substr(53, 2), &flags) || !parsed.valid()) {
    return false;
  }
  parsed.flags = flags[0] & kKnownFlags;
  *context = parsed;
  return true;
}

void FormatTraceparent(const TraceContext& context, char* out) {
  *out++ = '0';
  *out++ = '0';
  *out++ = '-';
  out = WriteHex(context.trace_id, out);
  *out++ = '-';
  out = WriteHex(context.span_id, out);
  *out++ = '-';
  WriteHex(std::array<uint8_t, 1>{context.flags}, out);
}

bool ValidTracestate(absl::string_view value) {
  if (value.size() > kMaxTracestateSize) return false;
  size_t members = 0;
  while (true) {
    const size_t comma = value.find(',');
    if (++members > kMaxTracestateMembers) return false;
    if (!ValidMember(value.substr(0, comma))) return false;
    if (comma == absl::string_view::npos) return true;
    value.remove_prefix(comma + 1);
  }
}

TraceId NewTraceId() { return RandomNonZero<16>(); }
SpanId NewSpanId() { return RandomNonZero<8>(); }

TraceContext NewSpanContext(const TraceContext& parent, double probability) {
  TraceContext span;
  if (parent.valid()) {
    span.trace_id = parent.trace_id;
    span.flags = parent.flags;
  } else {
    span.trace_id = NewTraceId();
    span.flags = SampledByRatio(span.trace_id, probability) ? kSampledFlag : 0;
  }
  span.span_id = NewSpanId();
  return span;
}

bool SampledByRatio(const TraceId& trace_id, double probability) {
  if (probability >= 1) return true;
  if (!(probability > 0)) return false;
  uint64_t low = 0;
  for (size_t i = 8; i < 16; ++i) low = low << 8 | trace_id[i];
  low &= ~(uint64_t{1} << 63);
  const auto bound =
      static_cast<uint64_t>(std::ldexp(probability, 63));  // < 2^63
  return low < bound;
}

}  // namespace h2rpc::internal
