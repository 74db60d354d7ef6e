#include "base/compression_algorithm.h"

#include <string>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::AllocationCounter;

CompressionAlgorithmSet SetOf(
    std::initializer_list<CompressionAlgorithm> list) {
  CompressionAlgorithmSet set;
  for (CompressionAlgorithm algorithm : list) set.Add(algorithm);
  return set;
}

TEST(CompressionAlgorithmTest, Names) {
  EXPECT_EQ(CompressionAlgorithmName(CompressionAlgorithm::kIdentity),
            "identity");
  EXPECT_EQ(CompressionAlgorithmName(CompressionAlgorithm::kDeflate),
            "deflate");
  EXPECT_EQ(CompressionAlgorithmName(CompressionAlgorithm::kGzip), "gzip");
}

TEST(CompressionAlgorithmTest, ParseExactNames) {
  EXPECT_EQ(ParseCompressionAlgorithm("identity"),
            CompressionAlgorithm::kIdentity);
  EXPECT_EQ(ParseCompressionAlgorithm("deflate"),
            CompressionAlgorithm::kDeflate);
  EXPECT_EQ(ParseCompressionAlgorithm("gzip"), CompressionAlgorithm::kGzip);
}

TEST(CompressionAlgorithmTest, ParseRejectsOtherSpellings) {
  for (const char* name : {"", "GZIP", "Gzip", " gzip", "gzip ", "gzi", "gzipp",
                           "x-gzip", "snappy", "br", "zstd"}) {
    EXPECT_EQ(ParseCompressionAlgorithm(name), absl::nullopt) << name;
  }
  EXPECT_EQ(ParseCompressionAlgorithm(absl::string_view("gzip\0", 5)),
            absl::nullopt);
}

TEST(CompressionAlgorithmTest, NamesRoundTrip) {
  for (CompressionAlgorithm algorithm :
       {CompressionAlgorithm::kIdentity, CompressionAlgorithm::kDeflate,
        CompressionAlgorithm::kGzip}) {
    EXPECT_EQ(ParseCompressionAlgorithm(CompressionAlgorithmName(algorithm)),
              algorithm);
  }
}

TEST(CompressionAlgorithmSetTest, AddRemoveContains) {
  CompressionAlgorithmSet set;
  EXPECT_TRUE(set.empty());
  set.Add(CompressionAlgorithm::kGzip);
  EXPECT_TRUE(set.Contains(CompressionAlgorithm::kGzip));
  EXPECT_FALSE(set.Contains(CompressionAlgorithm::kDeflate));
  set.Add(CompressionAlgorithm::kGzip);
  set.Remove(CompressionAlgorithm::kGzip);
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(
      CompressionAlgorithmSet::All(),
      SetOf({CompressionAlgorithm::kIdentity, CompressionAlgorithm::kDeflate,
             CompressionAlgorithm::kGzip}));
}

TEST(AcceptEncodingTest, ParsesListsWithWhitespace) {
  EXPECT_EQ(ParseAcceptEncoding("gzip, deflate,identity"),
            CompressionAlgorithmSet::All());
  EXPECT_EQ(ParseAcceptEncoding("gzip"), SetOf({CompressionAlgorithm::kGzip}));
  EXPECT_EQ(
      ParseAcceptEncoding("  deflate\t,\tgzip  "),
      SetOf({CompressionAlgorithm::kDeflate, CompressionAlgorithm::kGzip}));
  EXPECT_EQ(ParseAcceptEncoding("identity"),
            SetOf({CompressionAlgorithm::kIdentity}));
}

TEST(AcceptEncodingTest, OddInputs) {
  EXPECT_TRUE(ParseAcceptEncoding("").empty());
  EXPECT_TRUE(ParseAcceptEncoding(",").empty());
  EXPECT_TRUE(ParseAcceptEncoding(" , ,, ").empty());
  EXPECT_TRUE(ParseAcceptEncoding("   ").empty());
  EXPECT_TRUE(ParseAcceptEncoding("GZIP,Deflate").empty());
  EXPECT_TRUE(ParseAcceptEncoding("gzipdeflate").empty());
  EXPECT_TRUE(ParseAcceptEncoding("gzip deflate").empty());
  EXPECT_EQ(ParseAcceptEncoding(",gzip,"),
            SetOf({CompressionAlgorithm::kGzip}));
  EXPECT_EQ(ParseAcceptEncoding("snappy, gzip, br,zstd"),
            SetOf({CompressionAlgorithm::kGzip}));
  EXPECT_EQ(ParseAcceptEncoding("gzip,gzip,gzip"),
            SetOf({CompressionAlgorithm::kGzip}));
  // Parameters are not part of the grpc-accept-encoding grammar.
  EXPECT_EQ(ParseAcceptEncoding("gzip;q=1, deflate"),
            SetOf({CompressionAlgorithm::kDeflate}));
  EXPECT_EQ(ParseAcceptEncoding(absl::string_view("gzip,\0deflate", 13)),
            SetOf({CompressionAlgorithm::kGzip}));
}

TEST(AcceptEncodingTest, ParseDoesNotAllocate) {
  const std::string value(" identity , deflate,\tgzip, unknown-thing ,,");
  AllocationCounter counter;
  const CompressionAlgorithmSet set = ParseAcceptEncoding(value);
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(set, CompressionAlgorithmSet::All());
}

TEST(AcceptEncodingTest, FormatsInEnumOrder) {
  EXPECT_EQ(FormatCompressionAlgorithmSet(CompressionAlgorithmSet::All()),
            "identity,deflate,gzip");
  EXPECT_EQ(FormatCompressionAlgorithmSet(CompressionAlgorithmSet()), "");
  EXPECT_EQ(FormatCompressionAlgorithmSet(SetOf(
                {CompressionAlgorithm::kGzip, CompressionAlgorithm::kDeflate})),
            "deflate,gzip");
  EXPECT_EQ(
      FormatCompressionAlgorithmSet(SetOf({CompressionAlgorithm::kIdentity})),
      "identity");
}

TEST(AcceptEncodingTest, FormatsIntoCallerBuffer) {
  char buffer[kMaxFormattedAlgorithmSetSize];
  AllocationCounter counter;
  const size_t length = FormatCompressionAlgorithmSet(
      CompressionAlgorithmSet::All(), buffer, sizeof(buffer));
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_EQ(absl::string_view(buffer, length), "identity,deflate,gzip");
}

TEST(AcceptEncodingTest, FormatReportsNeededSizeWhenBufferIsSmall) {
  char buffer[8] = {'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'};
  EXPECT_EQ(FormatCompressionAlgorithmSet(CompressionAlgorithmSet::All(),
                                          buffer, sizeof(buffer)),
            21u);
  EXPECT_EQ(absl::string_view(buffer, 8), "xxxxxxxx");
  EXPECT_EQ(
      FormatCompressionAlgorithmSet(CompressionAlgorithmSet::All(), nullptr, 0),
      21u);
}

TEST(AcceptEncodingTest, FormatThenParseRoundTrips) {
  for (unsigned bits = 0; bits < 8; ++bits) {
    CompressionAlgorithmSet set;
    for (int i = 0; i < kNumCompressionAlgorithms; ++i) {
      if (bits & (1u << i)) set.Add(static_cast<CompressionAlgorithm>(i));
    }
    EXPECT_EQ(ParseAcceptEncoding(FormatCompressionAlgorithmSet(set)), set)
        << bits;
  }
}

}  // namespace
}  // namespace h2rpc
