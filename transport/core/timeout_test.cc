#include "transport/core/timeout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport {
namespace {

constexpr int64_t kMaxValue = 99999999;

std::string Encode(absl::Duration d) {
  return std::string(EncodeGrpcTimeout(d).view());
}

// An independent reference for whole-nanosecond durations: integer arithmetic
// on nanosecond counts instead of absl::Duration division.
std::string ReferenceEncode(int64_t nanos) {
  struct Unit {
    char letter;
    int64_t nanos;
  };
  static constexpr Unit kUnits[] = {
      {'n', 1},
      {'u', 1000},
      {'m', 1000 * 1000},
      {'S', int64_t{1000} * 1000 * 1000},
      {'M', int64_t{60} * 1000 * 1000 * 1000},
      {'H', int64_t{3600} * 1000 * 1000 * 1000},
  };
  if (nanos <= 0) return "1n";
  for (const Unit& unit : kUnits) {
    const int64_t value = nanos / unit.nanos + (nanos % unit.nanos != 0);
    if (value <= kMaxValue)
      return absl::StrCat(value, std::string(1, unit.letter));
  }
  return "99999999H";
}

absl::Duration UnitDuration(char letter) {
  switch (letter) {
    case 'n':
      return absl::Nanoseconds(1);
    case 'u':
      return absl::Microseconds(1);
    case 'm':
      return absl::Milliseconds(1);
    case 'S':
      return absl::Seconds(1);
    case 'M':
      return absl::Minutes(1);
    case 'H':
      return absl::Hours(1);
  }
  ADD_FAILURE() << "bad unit " << letter;
  return absl::ZeroDuration();
}

// The next finer unit than `letter`, or '\0' for nanoseconds.
char FinerUnit(char letter) {
  switch (letter) {
    case 'u':
      return 'n';
    case 'm':
      return 'u';
    case 'S':
      return 'm';
    case 'M':
      return 'S';
    case 'H':
      return 'M';
  }
  return '\0';
}

// Checks every property EncodeGrpcTimeout promises for a positive duration
// within 99999999 hours.
void CheckEncoding(absl::Duration d) {
  SCOPED_TRACE(absl::StrCat("duration ", absl::FormatDuration(d)));
  const std::string text = Encode(d);
  ASSERT_GE(text.size(), 2u);
  ASSERT_LE(text.size(), kMaxGrpcTimeoutLength);
  const absl::optional<absl::Duration> decoded = DecodeGrpcTimeout(text);
  ASSERT_TRUE(decoded.has_value()) << text;
  // Never shorter than asked for.
  EXPECT_GE(*decoded, d) << text;
  // Rounded up by less than one unit (not more than needed).
  const char unit = text.back();
  EXPECT_LT(*decoded - d, UnitDuration(unit)) << text;
  // No leading zeros: the representation is the shortest for its value.
  EXPECT_NE(text[0], '0') << text;
  // Finest unit that fits: the next finer unit would need 9+ digits.
  const char finer = FinerUnit(unit);
  if (finer != '\0') {
    EXPECT_GT(d, kMaxValue * UnitDuration(finer)) << text;
  }
}

TEST(EncodeGrpcTimeoutTest, EveryUnit) {
  EXPECT_EQ(Encode(absl::Nanoseconds(1)), "1n");
  EXPECT_EQ(Encode(absl::Nanoseconds(1500)), "1500n");
  EXPECT_EQ(Encode(absl::Microseconds(200000)), "200000u");
  EXPECT_EQ(Encode(absl::Milliseconds(200000)), "200000m");
  EXPECT_EQ(Encode(absl::Seconds(200000)), "200000S");
  EXPECT_EQ(Encode(absl::Minutes(2000000)), "2000000M");
  EXPECT_EQ(Encode(absl::Hours(2000000)), "2000000H");
  // Exact values stay in the finest unit even when a coarser one is exact too.
  EXPECT_EQ(Encode(absl::Microseconds(99999)), "99999000n");
  EXPECT_EQ(Encode(absl::Hours(3)), "10800000m");
}

TEST(EncodeGrpcTimeoutTest, BoundaryOfEachUnit) {
  EXPECT_EQ(Encode(absl::Nanoseconds(kMaxValue)), "99999999n");
  EXPECT_EQ(Encode(absl::Nanoseconds(kMaxValue + 1)), "100000u");
  EXPECT_EQ(Encode(absl::Nanoseconds(kMaxValue + 2)), "100001u");

  EXPECT_EQ(Encode(absl::Microseconds(kMaxValue)), "99999999u");
  EXPECT_EQ(Encode(absl::Microseconds(kMaxValue) + absl::Nanoseconds(1)),
            "100000m");
  EXPECT_EQ(Encode(absl::Milliseconds(kMaxValue)), "99999999m");
  EXPECT_EQ(Encode(absl::Milliseconds(kMaxValue) + absl::Nanoseconds(1)),
            "100000S");
  EXPECT_EQ(Encode(absl::Seconds(kMaxValue)), "99999999S");
  EXPECT_EQ(Encode(absl::Seconds(kMaxValue) + absl::Nanoseconds(1)),
            "1666667M");
  EXPECT_EQ(Encode(absl::Minutes(kMaxValue)), "99999999M");
  EXPECT_EQ(Encode(absl::Minutes(kMaxValue) + absl::Nanoseconds(1)),
            "1666667H");
  EXPECT_EQ(Encode(absl::Hours(kMaxValue)), "99999999H");
}

TEST(EncodeGrpcTimeoutTest, RoundsUpWhenTheUnitCannotHoldTheValue) {
  // 100000001500ns needs 12 digits; in microseconds it is 100000001.5, which
  // still does not fit, so milliseconds: 100000.0015 rounds up to 100001.
  EXPECT_EQ(Encode(absl::Nanoseconds(100000001500)), "100001m");
  // 100000000.5us does not fit in 8 digits of u; in m it is 100000.0000005.
  EXPECT_EQ(Encode(absl::Nanoseconds(100000000500)), "100001m");
  // 1.5 hours worth of nanoseconds plus one is still exactly representable in
  // milliseconds with rounding: 5400000.000001ms -> 5400001m.
  EXPECT_EQ(Encode(absl::Minutes(90) + absl::Nanoseconds(1)), "5400001m");
  // Just over 99999999 minutes: 1666666.65 hours rounds up to 1666667.
  EXPECT_EQ(Encode(absl::Minutes(kMaxValue) + absl::Seconds(1)), "1666667H");
}

TEST(EncodeGrpcTimeoutTest, SubNanosecondRoundsUp) {
  // absl::Duration has quarter-nanosecond resolution.
  EXPECT_EQ(Encode(absl::Nanoseconds(0.25)), "1n");
  EXPECT_EQ(Encode(absl::Nanoseconds(1.25)), "2n");
}

TEST(EncodeGrpcTimeoutTest, NonPositiveIsOneNanosecond) {
  EXPECT_EQ(Encode(absl::ZeroDuration()), "1n");
  EXPECT_EQ(Encode(absl::Nanoseconds(-1)), "1n");
  EXPECT_EQ(Encode(absl::Hours(-5)), "1n");
  EXPECT_EQ(Encode(-absl::InfiniteDuration()), "1n");
}

TEST(EncodeGrpcTimeoutTest, ClampsHugeValues) {
  EXPECT_EQ(Encode(absl::Hours(kMaxValue) + absl::Nanoseconds(1)), "99999999H");
  EXPECT_EQ(Encode(absl::Hours(kMaxValue + 1)), "99999999H");
  EXPECT_EQ(Encode(absl::Seconds(INT64_MAX)), "99999999H");
  EXPECT_EQ(Encode(absl::InfiniteDuration()), "99999999H");
}

TEST(EncodeGrpcTimeoutTest, DoesNotAllocate) {
  const absl::Duration inputs[] = {
      absl::ZeroDuration(),     absl::Nanoseconds(1),
      absl::Milliseconds(1234), absl::Hours(kMaxValue),
      absl::InfiniteDuration(), absl::Nanoseconds(100000001500),
  };
  size_t total_size = 0;
  h2rpc::testing::AllocationCounter counter;
  for (absl::Duration d : inputs) {
    GrpcTimeoutText text = EncodeGrpcTimeout(d);
    total_size += text.view().size();
  }
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_GT(total_size, 0u);
}

TEST(EncodeGrpcTimeoutTest, CopiesOwnTheirText) {
  GrpcTimeoutText a = EncodeGrpcTimeout(absl::Seconds(5));
  GrpcTimeoutText b = a;  // Copies hold their own storage.
  a = EncodeGrpcTimeout(absl::Hours(3000));
  EXPECT_EQ(a.view(), "10800000S");
  EXPECT_EQ(b.view(), "5000000u");
}

TEST(EncodeGrpcTimeoutTest, DeterministicSweepMatchesReference) {
  // 10^5 hours in nanoseconds, the top of the range swept.
  constexpr int64_t kLimit = int64_t{100000} * 3600 * 1000 * 1000 * 1000;
  std::vector<int64_t> nanos;
  const int64_t unit_nanos[] = {1,
                                1000,
                                1000 * 1000,
                                int64_t{1000} * 1000 * 1000,
                                int64_t{60} * 1000 * 1000 * 1000,
                                int64_t{3600} * 1000 * 1000 * 1000};
  // Around every unit boundary that lies in range.
  for (int64_t unit : unit_nanos) {
    for (int64_t multiple : {int64_t{1}, kMaxValue, kMaxValue + 1}) {
      if (multiple > kLimit / unit) continue;
      for (int64_t delta = -3; delta <= 3; ++delta) {
        nanos.push_back(multiple * unit + delta);
      }
    }
  }
  // Around every power of ten from 1ns to 10^17ns.
  int64_t power = 1;
  for (int exponent = 0; exponent <= 17; ++exponent, power *= 10) {
    for (int64_t delta = -2; delta <= 2; ++delta)
      nanos.push_back(power + delta);
  }
  // Dense low range.
  for (int64_t n = 1; n <= 20000; ++n) nanos.push_back(n);
  for (int64_t n : nanos) {
    if (n <= 0 || n > kLimit) continue;
    const absl::Duration d = absl::Nanoseconds(n);
    ASSERT_EQ(Encode(d), ReferenceEncode(n)) << n << "ns";
    CheckEncoding(d);
  }
}

TEST(EncodeGrpcTimeoutTest, PseudoRandomDurationsSatisfyProperties) {
  std::mt19937_64 rng(20240601);
  // Log-uniform over 1ns .. 10^5 hours, so every unit gets many samples.
  const double max_log = std::log(1e5 * 3600 * 1e9);
  std::uniform_real_distribution<double> log_dist(0.0, max_log);
  for (int i = 0; i < 200000; ++i) {
    const int64_t n =
        std::max<int64_t>(1, static_cast<int64_t>(std::exp(log_dist(rng))));
    const absl::Duration d = absl::Nanoseconds(n);
    ASSERT_EQ(Encode(d), ReferenceEncode(n)) << n << "ns";
    if (i % 16 == 0) CheckEncoding(d);
    if (::testing::Test::HasFailure()) return;
  }
  // Quarter-nanosecond durations, which the reference cannot express.
  std::uniform_int_distribution<int64_t> quarters(1, int64_t{1} << 62);
  for (int i = 0; i < 20000; ++i) {
    CheckEncoding(absl::Nanoseconds(1) * quarters(rng) / 4);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(DecodeGrpcTimeoutTest, EveryUnit) {
  EXPECT_EQ(DecodeGrpcTimeout("1n"), absl::Nanoseconds(1));
  EXPECT_EQ(DecodeGrpcTimeout("2u"), absl::Microseconds(2));
  EXPECT_EQ(DecodeGrpcTimeout("3m"), absl::Milliseconds(3));
  EXPECT_EQ(DecodeGrpcTimeout("4S"), absl::Seconds(4));
  EXPECT_EQ(DecodeGrpcTimeout("5M"), absl::Minutes(5));
  EXPECT_EQ(DecodeGrpcTimeout("6H"), absl::Hours(6));
}

TEST(DecodeGrpcTimeoutTest, LargestValueOfEachUnit) {
  EXPECT_EQ(DecodeGrpcTimeout("99999999n"), absl::Nanoseconds(kMaxValue));
  EXPECT_EQ(DecodeGrpcTimeout("99999999u"), absl::Microseconds(kMaxValue));
  EXPECT_EQ(DecodeGrpcTimeout("99999999m"), absl::Milliseconds(kMaxValue));
  EXPECT_EQ(DecodeGrpcTimeout("99999999S"), absl::Seconds(kMaxValue));
  EXPECT_EQ(DecodeGrpcTimeout("99999999M"), absl::Minutes(kMaxValue));
  EXPECT_EQ(DecodeGrpcTimeout("99999999H"), absl::Hours(kMaxValue));
}

TEST(DecodeGrpcTimeoutTest, ZeroAndLeadingZeros) {
  EXPECT_EQ(DecodeGrpcTimeout("0S"), absl::ZeroDuration());
  EXPECT_EQ(DecodeGrpcTimeout("00000001m"), absl::Milliseconds(1));
  EXPECT_EQ(DecodeGrpcTimeout("00000000H"), absl::ZeroDuration());
}

TEST(DecodeGrpcTimeoutTest, RejectsHostileInput) {
  const std::string kHostile[] = {
      "",
      "n",
      "H",
      "1",
      "12345678",
      "123456789n",
      "000000001n",  // 9 digits even though the value is small.
      "99999999999999999999H",
      "18446744073709551616n",
      "-1S",
      "+1S",
      " 1S",
      "1S ",
      "1 S",
      "\t1S",
      "1s",
      "1h",
      "1N",
      "1U",
      "1x",
      "1SS",
      "1nn",
      "S1",
      "1.5S",
      "1e3n",
      "0x1S",
      "1,000m",
      "\xef\xbc\x91S",  // Full-width digit one.
      "1\xffS",
      "1S\n",
      "1S\r\n",
      "%31S",
      std::string("\0", 1),
      std::string("1\0", 2),
      std::string("1\0S", 3),
      std::string("1S\0", 3),
      std::string("\0"
                  "1S",
                  3),
      std::string(100, '9') + "S",
      std::string(10000, 'S'),
  };
  for (const std::string& text : kHostile) {
    EXPECT_EQ(DecodeGrpcTimeout(text), absl::nullopt)
        << "\"" << absl::CEscape(text) << "\"";
  }
}

TEST(DecodeGrpcTimeoutTest, EveryNonUnitByteIsRejectedAsUnit) {
  for (int c = 0; c < 256; ++c) {
    const std::string text =
        absl::StrCat("7", std::string(1, static_cast<char>(c)));
    const bool is_unit =
        std::string("numSMH").find(static_cast<char>(c)) != std::string::npos;
    EXPECT_EQ(DecodeGrpcTimeout(text).has_value(), is_unit) << c;
  }
}

TEST(DecodeGrpcTimeoutTest, EveryNonDigitByteIsRejectedAsDigit) {
  for (int c = 0; c < 256; ++c) {
    const std::string text =
        absl::StrCat("1", std::string(1, static_cast<char>(c)), "S");
    EXPECT_EQ(DecodeGrpcTimeout(text).has_value(), c >= '0' && c <= '9') << c;
  }
}

TEST(DecodeGrpcTimeoutTest, DoesNotAllocate) {
  h2rpc::testing::AllocationCounter counter;
  absl::optional<absl::Duration> a = DecodeGrpcTimeout("12345678m");
  absl::optional<absl::Duration> b = DecodeGrpcTimeout("bogus");
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(a, absl::Milliseconds(12345678));
  EXPECT_EQ(b, absl::nullopt);
}

}  // namespace
}  // namespace h2rpc::transport
