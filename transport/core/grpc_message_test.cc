#include "transport/core/grpc_message.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport {
namespace {

constexpr char kSentinel = '\x5A';

// Encodes into a buffer with guard bytes on both sides and checks that
// PercentEncode writes exactly PercentEncodedLength bytes.
std::string Encode(absl::string_view message) {
  const size_t length = PercentEncodedLength(message);
  constexpr size_t kGuard = 8;
  std::vector<char> buffer(length + 2 * kGuard, kSentinel);
  PercentEncode(message, buffer.data() + kGuard);
  for (size_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(buffer[i], kSentinel) << "wrote before the output";
    EXPECT_EQ(buffer[kGuard + length + i], kSentinel) << "wrote past the end";
  }
  return std::string(buffer.data() + kGuard, length);
}

std::string Escaped(absl::string_view s) {
  return "\"" + absl::CHexEscape(s) + "\"";
}

TEST(PercentEncodeTest, Table) {
  struct Case {
    std::string message;
    std::string encoded;
  };
  const Case kCases[] = {
      {"", ""},
      {"hello world", "hello world"},
      {" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~",
       " !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~"},
      {"%", "%25"},
      {"100%", "100%25"},
      {"%41", "%2541"},
      {"\n", "%0A"},
      {"a\tb\r\n", "a%09b%0D%0A"},
      {std::string("\0", 1), "%00"},
      {"\x1f", "%1F"},
      {"\x7f", "%7F"},
      {"\x80", "%80"},
      {"\xff", "%FF"},
      {"h\xc3\xa9llo", "h%C3%A9llo"},                      // "héllo"
      {"\xe6\x97\xa5\xe6\x9c\xac", "%E6%97%A5%E6%9C%AC"},  // "日本"
      {"\xf0\x9f\x98\x80", "%F0%9F%98%80"},                // U+1F600
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(PercentEncodedLength(c.message), c.encoded.size())
        << Escaped(c.message);
    EXPECT_EQ(Encode(c.message), c.encoded) << Escaped(c.message);
    EXPECT_EQ(PercentDecode(c.encoded), c.message) << Escaped(c.encoded);
  }
}

TEST(PercentEncodeTest, EveryByteValue) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const std::string message(1, static_cast<char>(b));
    const std::string encoded = Encode(message);
    if (b >= 0x20 && b <= 0x7E && b != '%') {
      EXPECT_EQ(encoded, message) << b;
    } else {
      EXPECT_EQ(encoded, std::string({'%', kHex[b >> 4], kHex[b & 0xF]})) << b;
    }
    EXPECT_EQ(PercentDecode(encoded), message) << b;
  }
}

TEST(PercentEncodeTest, AllByteValuesRoundTrip) {
  std::string message;
  for (int b = 0; b < 256; ++b) message.push_back(static_cast<char>(b));
  const std::string encoded = Encode(message);
  // 95 printable bytes other than '%' stay, the other 161 take three bytes.
  EXPECT_EQ(encoded.size(), 94u + 162u * 3u);
  for (char c : encoded) {
    EXPECT_TRUE(c >= 0x20 && c <= 0x7E) << static_cast<int>(c);
  }
  EXPECT_EQ(PercentDecode(encoded), message);
}

TEST(PercentEncodeTest, RandomBytesRoundTrip) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 64);
  for (int i = 0; i < 5000; ++i) {
    std::string message(length(rng), '\0');
    for (char& c : message) c = static_cast<char>(byte(rng));
    const std::string encoded = Encode(message);
    ASSERT_EQ(PercentDecode(encoded), message) << Escaped(message);
  }
}

TEST(PercentEncodeTest, DoesNotAllocate) {
  const std::string message = "deadline \xe2\x8f\xb0 exceeded: 100% of 5s\n";
  char out[128];
  h2rpc::testing::AllocationCounter counter;
  const size_t length = PercentEncodedLength(message);
  ASSERT_LE(length, sizeof(out));
  PercentEncode(message, out);
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(absl::string_view(out, length),
            "deadline %E2%8F%B0 exceeded: 100%25 of 5s%0A");
}

TEST(PercentDecodeTest, LowerAndMixedCaseHex) {
  EXPECT_EQ(PercentDecode("%c3%a9"), "\xc3\xa9");
  EXPECT_EQ(PercentDecode("%C3%a9"), "\xc3\xa9");
  EXPECT_EQ(PercentDecode("%fF%Ff"), "\xff\xff");
  EXPECT_EQ(PercentDecode("%0a"), "\n");
  EXPECT_EQ(PercentDecode("%00"), std::string("\0", 1));
}

TEST(PercentDecodeTest, MalformedSequencesAreKept) {
  struct Case {
    std::string encoded;
    std::string decoded;
  };
  const Case kCases[] = {
      {"", ""},
      {"%", "%"},
      {"%4", "%4"},
      {"%zz", "%zz"},
      {"%4g", "%4g"},
      {"%g4", "%g4"},
      {"%G0", "%G0"},
      // The first '%' is not followed by hex digits and is kept; the second
      // starts a valid escape.
      {"%%41", "%A"},
      {"%%", "%%"},
      {"%%%", "%%%"},
      {"abc%", "abc%"},
      {"abc%4", "abc%4"},
      {"%41%", "A%"},
      {"% 41", "% 41"},
      {"%+1", "%+1"},
      {"%-1", "%-1"},
      {"%0x41", "%0x41"},
      {"%\xff\xff", "%\xff\xff"},
      {std::string("%\0\0", 3), std::string("%\0\0", 3)},
      {std::string("%4\0", 3), std::string("%4\0", 3)},
      // Bytes a conforming encoder would have escaped pass through.
      {"\xc3\xa9\n\x7f", "\xc3\xa9\n\x7f"},
      {std::string(10000, '%'), std::string(10000, '%')},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(PercentDecode(c.encoded), c.decoded) << Escaped(c.encoded);
  }
}

TEST(PercentDecodeTest, DoesNotReadPastTheView) {
  // The byte after each view would complete an escape if it were read.
  const char buffer[] = "x%4A%B";
  EXPECT_EQ(PercentDecode(absl::string_view(buffer, 3)), "x%4");
  EXPECT_EQ(PercentDecode(absl::string_view(buffer, 2)), "x%");
  EXPECT_EQ(PercentDecode(absl::string_view(buffer + 4, 1)), "%");
  EXPECT_EQ(PercentDecode(absl::string_view(buffer, 4)), "xJ");
}

TEST(PercentDecodeTest, RandomInputNeverGrows) {
  std::mt19937 rng(777);
  // Heavy on '%' and hex digits so that valid, partial and broken escapes all
  // occur.
  static constexpr char kAlphabet[] = "%%%%0123456789abcdefABCDEFgz \x00\xff";
  const std::string alphabet(kAlphabet, sizeof(kAlphabet) - 1);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(0, 32);
  for (int i = 0; i < 5000; ++i) {
    std::string encoded(length(rng), '\0');
    for (char& c : encoded) c = alphabet[pick(rng)];
    const std::string decoded = PercentDecode(encoded);
    ASSERT_LE(decoded.size(), encoded.size()) << Escaped(encoded);
    // Decoding a string without '%' is the identity.
    if (encoded.find('%') == std::string::npos) {
      ASSERT_EQ(decoded, encoded);
    }
  }
}

}  // namespace
}  // namespace h2rpc::transport
