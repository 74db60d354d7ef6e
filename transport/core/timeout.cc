#include "transport/core/timeout.h"

#include <cstdint>

namespace h2rpc::transport {
namespace {

// The largest value that fits in kMaxGrpcTimeoutDigits digits.
constexpr int64_t kMaxGrpcTimeoutValue = 99999999;
static_assert(kMaxGrpcTimeoutDigits == 8, "kMaxGrpcTimeoutValue is 8 nines");

struct TimeoutUnit {
  char letter;
  absl::Duration duration;
};

// Finest first: EncodeGrpcTimeout picks the first unit that fits.
// absl::Nanoseconds() etc. are constexpr, so this table needs no initializer
// code.
constexpr TimeoutUnit kUnits[] = {
    {'n', absl::Nanoseconds(1)},  {'u', absl::Microseconds(1)},
    {'m', absl::Milliseconds(1)}, {'S', absl::Seconds(1)},
    {'M', absl::Minutes(1)},      {'H', absl::Hours(1)},
};

// Fills `text` with `value` (1..kMaxGrpcTimeoutValue) followed by `unit` and
// returns the length written.
size_t FormatTimeout(int64_t value, char unit, char* text) {
  char digits[kMaxGrpcTimeoutDigits];
  size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && count < kMaxGrpcTimeoutDigits);
  for (size_t i = 0; i < count; ++i) text[i] = digits[count - 1 - i];
  text[count] = unit;
  return count + 1;
}

}  // namespace

GrpcTimeoutText EncodeGrpcTimeout(absl::Duration timeout) {
  GrpcTimeoutText result;
  if (timeout <= absl::ZeroDuration()) {
    result.size_ = FormatTimeout(1, 'n', result.text_);
    return result;
  }
  for (const TimeoutUnit& unit : kUnits) {
    // ceil(timeout / unit) <= max  <=>  timeout <= max * unit, and the right
    // side cannot overflow: 99999999 hours is far inside absl::Duration.
    if (timeout > kMaxGrpcTimeoutValue * unit.duration) continue;
    absl::Duration remainder;
    int64_t value = absl::IDivDuration(timeout, unit.duration, &remainder);
    if (remainder > absl::ZeroDuration()) ++value;  // Round up, never down.
    result.size_ = FormatTimeout(value, unit.letter, result.text_);
    return result;
  }
  // Longer than 99999999 hours (or infinite): clamp.
  result.size_ = FormatTimeout(kMaxGrpcTimeoutValue, 'H', result.text_);
  return result;
}

absl::optional<absl::Duration> DecodeGrpcTimeout(absl::string_view text) {
  if (text.size() < 2 || text.size() > kMaxGrpcTimeoutLength) {
    return absl::nullopt;
  }
  const absl::string_view digits = text.substr(0, text.size() - 1);
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return absl::nullopt;
    value = value * 10 + (c - '0');
  }
  const char letter = text.back();
  for (const TimeoutUnit& unit : kUnits) {
    if (unit.letter == letter) return value * unit.duration;
  }
  return absl::nullopt;
}

}  // namespace h2rpc::transport
