#include "transport/core/base64.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::transport {
namespace {

constexpr char kCanary = '\x5A';
constexpr size_t kCanarySize = 16;

std::string Encode(absl::string_view in) {
  // Canary bytes after the expected length catch an encoder that overruns.
  std::string out(Base64UnpaddedLength(in.size()) + kCanarySize, kCanary);
  Base64EncodeUnpadded(in, out.data());
  const std::string tail = out.substr(Base64UnpaddedLength(in.size()));
  EXPECT_EQ(tail, std::string(kCanarySize, kCanary)) << "encoder overran";
  out.resize(Base64UnpaddedLength(in.size()));
  return out;
}

// The outcome of Base64Decode: `ok` false when it returned -1.
struct Decoded {
  bool ok;
  std::string bytes;
};

// Decodes into a buffer of exactly Base64MaxDecodedLength(in.size()) bytes
// followed by canaries, and fails the test if the decoder writes past it.
Decoded Decode(absl::string_view in) {
  const size_t room = Base64MaxDecodedLength(in.size());
  std::string out(room + kCanarySize, kCanary);
  const ptrdiff_t n = Base64Decode(in, out.data());
  EXPECT_EQ(out.substr(room), std::string(kCanarySize, kCanary))
      << "decoder wrote past Base64MaxDecodedLength for '" << in << "'";
  if (n < 0) {
    EXPECT_EQ(n, -1);
    return {false, ""};
  }
  EXPECT_LE(static_cast<size_t>(n), room);
  out.resize(static_cast<size_t>(n));
  return {true, out};
}

std::string Pad(std::string s) {
  while (s.size() % 4 != 0) s.push_back('=');
  return s;
}

std::string PseudoRandomBytes(size_t size, uint32_t seed) {
  std::string out(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

TEST(Base64Test, Rfc4648Vectors) {
  struct Vector {
    absl::string_view plain, unpadded, padded;
  };
  const Vector kVectors[] = {
      {"", "", ""},
      {"f", "Zg", "Zg=="},
      {"fo", "Zm8", "Zm8="},
      {"foo", "Zm9v", "Zm9v"},
      {"foob", "Zm9vYg", "Zm9vYg=="},
      {"fooba", "Zm9vYmE", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
  };
  for (const Vector& v : kVectors) {
    EXPECT_EQ(Encode(v.plain), v.unpadded) << v.plain;
    EXPECT_EQ(Base64UnpaddedLength(v.plain.size()), v.unpadded.size());
    Decoded unpadded = Decode(v.unpadded);
    EXPECT_TRUE(unpadded.ok) << v.unpadded;
    EXPECT_EQ(unpadded.bytes, v.plain);
    Decoded padded = Decode(v.padded);
    EXPECT_TRUE(padded.ok) << v.padded;
    EXPECT_EQ(padded.bytes, v.plain);
  }
}

TEST(Base64Test, UsesTheStandardAlphabet) {
  // 00 10 83 ... F3 DF BF encodes to the 64 characters in order.
  const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  Decoded decoded = Decode(alphabet);
  ASSERT_TRUE(decoded.ok);
  ASSERT_EQ(decoded.bytes.size(), 48u);
  EXPECT_EQ(decoded.bytes.substr(0, 3), std::string("\x00\x10\x83", 3));
  EXPECT_EQ(decoded.bytes.substr(45), "\xF3\xDF\xBF");
  EXPECT_EQ(Encode(decoded.bytes), alphabet);
  EXPECT_EQ(Encode("\xFB\xFF"), "+/8");
}

TEST(Base64Test, EveryLengthRoundTripsPaddedAndUnpadded) {
  for (size_t size = 0; size <= 300; ++size) {
    const std::string plain =
        PseudoRandomBytes(size, static_cast<uint32_t>(size));
    const std::string encoded = Encode(plain);
    ASSERT_EQ(encoded.size(), Base64UnpaddedLength(size));
    EXPECT_EQ(encoded.find('='), std::string::npos);
    Decoded unpadded = Decode(encoded);
    ASSERT_TRUE(unpadded.ok) << size;
    EXPECT_EQ(unpadded.bytes, plain) << size;
    Decoded padded = Decode(Pad(encoded));
    ASSERT_TRUE(padded.ok) << size;
    EXPECT_EQ(padded.bytes, plain) << size;
  }
}

TEST(Base64Test, EveryByteValueRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  Decoded decoded = Decode(Encode(all));
  ASSERT_TRUE(decoded.ok);
  EXPECT_EQ(decoded.bytes, all);
}

TEST(Base64Test, MaxDecodedLengthBoundsEveryValidLength) {
  for (size_t encoded = 0; encoded <= 64; ++encoded) {
    if (encoded % 4 == 1) continue;
    const size_t exact =
        encoded / 4 * 3 + (encoded % 4 == 0 ? 0 : encoded % 4 - 1);
    EXPECT_GE(Base64MaxDecodedLength(encoded), exact) << encoded;
    EXPECT_LE(Base64MaxDecodedLength(encoded), exact + 2) << encoded;
  }
}

// Decision: non-zero bits in the unused tail of the last character are
// accepted and dropped, as gRPC C++, Go and Java decoders do.
TEST(Base64Test, AcceptsNonZeroTrailingBits) {
  const struct {
    absl::string_view in, plain;
  } kCases[] = {
      {"Zh", "f"},   {"Zh==", "f"},  {"Zv", "f"},
      {"Zm9", "fo"}, {"Zm9=", "fo"}, {"//", "\xFF"},
  };
  for (const auto& c : kCases) {
    Decoded decoded = Decode(c.in);
    EXPECT_TRUE(decoded.ok) << c.in;
    EXPECT_EQ(decoded.bytes, c.plain) << c.in;
  }
}

TEST(Base64Test, RejectsHostileInput) {
  const absl::string_view kInvalid[] = {
      "A",                            // single dangling character
      "AAAAA",                        // dangling character after a quantum
      "Zg=",                          // padded length not a multiple of 4
      "Zg===",                        // three '='
      "Z===",                         // three '='
      "===",                          // only padding
      "====",                         // only padding
      "=",                            // only padding
      "==",                           // only padding
      "AAAA====",                     // too much padding
      "AB=C",                         // '=' in the middle
      "=AAA",                         // '=' at the start
      "Zg==Zg==",                     // padding followed by data
      "Zg==AA",                       // padding followed by data
      "Zm9vYg=",                      // padded length 7
      "Zm9vYg==A",                    // trailing character after padding
      "Zm9-",                         // URL-safe alphabet
      "Zm9_",                         // URL-safe alphabet
      "Zm 9v",                        // space
      " Zm9v",                        // leading space
      "Zm9v ",                        // trailing space
      "Zm9v\n",                       // newline
      "Zm9v\r\nYmFy",                 // MIME line break
      "Zm\t9v",                       // tab
      "Zm9.",                         // punctuation
      "Zm9,",                         // comma (callers split on it first)
      absl::string_view("Zm\0v", 4),  // NUL
      "Zm9\x80",                      // high bit
      "Zm9\xFF",                      // high bit
      "\xC3\xA9\xC3\xA9",             // UTF-8
  };
  for (absl::string_view in : kInvalid) {
    EXPECT_FALSE(Decode(in).ok) << "accepted '" << in << "'";
  }
}

TEST(Base64Test, EmptyDecodesToNothing) {
  char out[2] = {kCanary, kCanary};
  EXPECT_EQ(Base64Decode("", out), 0);
  EXPECT_EQ(out[0], kCanary);
  EXPECT_EQ(Base64MaxDecodedLength(0), 2u);
}

TEST(Base64Test, LargeInputs) {
  const std::string plain = PseudoRandomBytes(1 << 20, 7);
  Decoded decoded = Decode(Encode(plain));
  ASSERT_TRUE(decoded.ok);
  EXPECT_EQ(decoded.bytes, plain);
  // A megabyte of padding is rejected without scanning it all.
  EXPECT_FALSE(Decode(std::string(1 << 20, '=')).ok);
  // An invalid character at the very end of a long input is still found.
  std::string bad = Encode(plain);
  bad.back() = '-';
  EXPECT_FALSE(Decode(bad).ok);
}

TEST(Base64Test, DoesNotAllocate) {
  const std::string plain = PseudoRandomBytes(1000, 3);
  std::string encoded(Base64UnpaddedLength(plain.size()), '\0');
  std::string decoded(Base64MaxDecodedLength(encoded.size()), '\0');
  h2rpc::testing::AllocationCounter counter;
  Base64EncodeUnpadded(plain, encoded.data());
  const ptrdiff_t n = Base64Decode(encoded, decoded.data());
  EXPECT_EQ(counter.allocations(), 0);
  ASSERT_EQ(n, 1000);
  EXPECT_EQ(decoded.substr(0, 1000), plain);
}

}  // namespace
}  // namespace h2rpc::transport
