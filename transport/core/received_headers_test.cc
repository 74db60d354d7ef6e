#include "transport/core/received_headers.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "transport/core/base64.h"

namespace h2rpc::transport {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// Owns the bytes of a header block and exposes it as HeaderFields.
class Block {
 public:
  Block(Pairs pairs) : pairs_(std::move(pairs)) {
    for (const auto& p : pairs_)
      fields_.push_back(HeaderField{p.first, p.second});
  }
  absl::Span<const HeaderField> fields() const { return fields_; }

 private:
  Pairs pairs_;
  std::vector<HeaderField> fields_;
};

Pairs ToPairs(const Metadata& md) {
  Pairs out;
  for (Metadata::Entry e : md) out.emplace_back(e.key, e.value);
  return out;
}

std::string Base64(absl::string_view raw) {
  std::string out(Base64UnpaddedLength(raw.size()), '\0');
  Base64EncodeUnpadded(raw, out.data());
  return out;
}

TEST(ReceivedHeadersTest, RequestBlock) {
  const std::string trace("\0\x01\xFE\xFF,", 5);
  Block block({
      {":method", "POST"},
      {":scheme", "http"},
      {":path", "/pkg.Service/Method"},
      {":authority", "localhost:50051"},
      {"content-type", "application/grpc+proto"},
      {"te", "trailers"},
      {"user-agent", "grpc-go/1.60.0"},
      {"grpc-timeout", "100m"},
      {"grpc-encoding", "gzip"},
      {"grpc-accept-encoding", "gzip,identity"},
      {"grpc-previous-rpc-attempts", "2"},
      {"x-user", "alice"},
      {"x-trace-bin", Base64(trace)},
      {"x-user", "bob"},
  });
  ReservedHeaderValues reserved;
  Metadata md;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(reserved.method, absl::string_view("POST"));
  EXPECT_EQ(reserved.scheme, absl::string_view("http"));
  EXPECT_EQ(reserved.path, absl::string_view("/pkg.Service/Method"));
  EXPECT_EQ(reserved.authority, absl::string_view("localhost:50051"));
  EXPECT_EQ(reserved.content_type, absl::string_view("application/grpc+proto"));
  EXPECT_EQ(reserved.te, absl::string_view("trailers"));
  EXPECT_EQ(reserved.user_agent, absl::string_view("grpc-go/1.60.0"));
  EXPECT_EQ(reserved.grpc_timeout, absl::string_view("100m"));
  EXPECT_EQ(reserved.grpc_encoding, absl::string_view("gzip"));
  EXPECT_EQ(reserved.grpc_accept_encoding, absl::string_view("gzip,identity"));
  EXPECT_EQ(reserved.grpc_previous_rpc_attempts, absl::string_view("2"));
  EXPECT_EQ(reserved.status, absl::nullopt);
  EXPECT_EQ(reserved.grpc_status, absl::nullopt);
  EXPECT_EQ(reserved.grpc_message, absl::nullopt);
  EXPECT_EQ(reserved.grpc_status_details_bin, absl::nullopt);
  // The views point into the fields, not into copies.
  EXPECT_EQ(reserved.path->data(), block.fields()[2].value.data());

  EXPECT_EQ(ToPairs(md), (Pairs{{"user-agent", "grpc-go/1.60.0"},
                                {"x-user", "alice"},
                                {"x-trace-bin", trace},
                                {"x-user", "bob"}}));
  EXPECT_EQ(md.entry_capacity(), 4u);
}

TEST(ReceivedHeadersTest, ResponseHeadersBlock) {
  Block block({
      {":status", "200"},
      {"content-type", "application/grpc"},
      {"grpc-encoding", "identity"},
      {"grpc-accept-encoding", "gzip"},
      {"x-server", "s1"},
  });
  ReservedHeaderValues reserved;
  Metadata md;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(reserved.status, absl::string_view("200"));
  EXPECT_EQ(reserved.content_type, absl::string_view("application/grpc"));
  EXPECT_EQ(reserved.grpc_encoding, absl::string_view("identity"));
  EXPECT_EQ(reserved.grpc_accept_encoding, absl::string_view("gzip"));
  EXPECT_EQ(reserved.method, absl::nullopt);
  EXPECT_EQ(reserved.user_agent, absl::nullopt);
  EXPECT_EQ(ToPairs(md), (Pairs{{"x-server", "s1"}}));
}

TEST(ReceivedHeadersTest, TrailersBlockKeepsStatusFieldsRaw) {
  Block block({
      {"grpc-status", "3"},
      {"grpc-message", "bad%20argument"},
      {"grpc-status-details-bin", "CAMSA2JhZA"},
      {"x-cost", "12"},
  });
  ReservedHeaderValues reserved;
  Metadata md;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(reserved.grpc_status, absl::string_view("3"));
  EXPECT_EQ(reserved.grpc_message, absl::string_view("bad%20argument"));
  // Not base64-decoded here: status synthesis does that.
  EXPECT_EQ(reserved.grpc_status_details_bin, absl::string_view("CAMSA2JhZA"));
  EXPECT_EQ(ToPairs(md), (Pairs{{"x-cost", "12"}}));
}

TEST(ReceivedHeadersTest,
     TrailersOnlyBlockWithoutUserMetadataAllocatesNothing) {
  Block block({
      {":status", "200"},
      {"content-type", "application/grpc"},
      {"grpc-status", "12"},
      {"grpc-message", "unknown method"},
  });
  ReservedHeaderValues reserved;
  Metadata md;
  h2rpc::testing::AllocationCounter counter;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(counter.allocations(), 0);
  EXPECT_TRUE(md.empty());
  EXPECT_EQ(md.entry_capacity(), 0u);
  EXPECT_EQ(reserved.status, absl::string_view("200"));
  EXPECT_EQ(reserved.grpc_status, absl::string_view("12"));
}

TEST(ReceivedHeadersTest, FiltersTransportAndConnectionHeaders) {
  Block block({
      {":protocol", "websocket"},  // unknown pseudo-header: dropped
      {"grpc-foo", "1"},           // unknown grpc-*: dropped
      {"grpc-foo", "2"},           // ... even twice
      {"grpc-trace-bin", "AAEC"},
      {"grpc-", "x"},
      {"host", "example.com"},
      {"connection", "close"},
      {"keep-alive", "timeout=5"},
      {"proxy-connection", "keep-alive"},
      {"transfer-encoding", "chunked"},
      {"upgrade", "h2c"},
      // The retry pushback is the application's to read.
      {"grpc-retry-pushback-ms", "100"},
      // Near misses are user metadata.
      {"grpc", "a"},
      {"x-grpc-status", "b"},
      {"tea", "c"},
      {"hostname", "d"},
      {"content-types", "e"},
      {"upgrade-insecure-requests", "f"},
  });
  ReservedHeaderValues reserved;
  Metadata md;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(ToPairs(md), (Pairs{{"grpc-retry-pushback-ms", "100"},
                                {"grpc", "a"},
                                {"x-grpc-status", "b"},
                                {"tea", "c"},
                                {"hostname", "d"},
                                {"content-types", "e"},
                                {"upgrade-insecure-requests", "f"}}));
  EXPECT_EQ(md.entry_capacity(), 7u);
}

TEST(ReceivedHeadersTest, ResetsReservedAndAppendsToMetadata) {
  ReservedHeaderValues reserved;
  reserved.method = "GET";
  reserved.grpc_status = "0";
  Metadata md;
  md.Add("earlier", "1");
  Block block({{"x-a", "2"}, {"te", ""}});
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(reserved.method, absl::nullopt);
  EXPECT_EQ(reserved.grpc_status, absl::nullopt);
  // Present but empty is not absent.
  EXPECT_EQ(reserved.te, absl::string_view(""));
  EXPECT_EQ(ToPairs(md), (Pairs{{"earlier", "1"}, {"x-a", "2"}}));
}

TEST(ReceivedHeadersTest, NonBinaryValuesAreNotSplit) {
  Block block({{"x-list", "a, b,c"}, {"x-empty", ""}});
  ReservedHeaderValues reserved;
  Metadata md;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(ToPairs(md), (Pairs{{"x-list", "a, b,c"}, {"x-empty", ""}}));
}

// A -bin value is split on ',' first, then each part (spaces and tabs around
// it trimmed) is decoded, padded or not. Every part is an entry, empty ones
// included: an empty -bin value is a valid empty binary value.
TEST(ReceivedHeadersTest, BinaryValuesAreSplitOnCommasThenDecoded) {
  const struct {
    absl::string_view value;
    std::vector<std::string> decoded;
  } kCases[] = {
      {"AAEC", {std::string("\0\1\2", 3)}},
      {"AAEC,AwQF", {std::string("\0\1\2", 3), "\3\4\5"}},
      {"AAE=,Ag==", {std::string("\0\1", 2), "\2"}},
      {"AAE,Ag", {std::string("\0\1", 2), "\2"}},
      {"AAE=,Ag", {std::string("\0\1", 2), "\2"}},
      {"AAE= , \tAg", {std::string("\0\1", 2), "\2"}},
      {"Zm9v,YmFy,YmF6", {"foo", "bar", "baz"}},
      {"", {""}},
      {" ", {""}},
      {",", {"", ""}},
      {"AAEC,,AwQF", {std::string("\0\1\2", 3), "", "\3\4\5"}},
      {"AAEC,", {std::string("\0\1\2", 3), ""}},
      {",AAEC", {"", std::string("\0\1\2", 3)}},
  };
  for (const auto& c : kCases) {
    Block block(
        {{"x-a", "1"}, {"x-data-bin", std::string(c.value)}, {"x-b", "2"}});
    ReservedHeaderValues reserved;
    Metadata md;
    h2rpc::testing::AllocationCounter counter;
    ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok())
        << c.value;
    EXPECT_LE(counter.allocations(), 2) << c.value;
    Pairs expected = {{"x-a", "1"}};
    for (const std::string& d : c.decoded)
      expected.emplace_back("x-data-bin", d);
    expected.emplace_back("x-b", "2");
    EXPECT_EQ(ToPairs(md), expected) << c.value;
    EXPECT_EQ(md.entry_capacity(), md.size()) << c.value;
  }
}

TEST(ReceivedHeadersTest, LargeBinaryValueReservesAboutItsDecodedSize) {
  const std::string raw(3000, '\x7F');
  Block block({{"x-blob-bin", Base64(raw)}});
  ReservedHeaderValues reserved;
  Metadata md;
  h2rpc::testing::AllocationCounter counter;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(counter.allocations(), 2);
  ASSERT_EQ(md.size(), 1u);
  EXPECT_EQ(md[0].value, raw);
  // 10 key bytes + 3000 value bytes, plus base64's slack of two; not the
  // 4000 bytes of base64 text.
  EXPECT_GE(md.byte_capacity(), 3010u);
  EXPECT_LE(md.byte_capacity(), 3012u);
}

struct HostileCase {
  const char* what;
  Pairs fields;
  std::string error;  // empty: parses OK
};

TEST(ReceivedHeadersTest, HostileBlocks) {
  const std::string long_key = std::string(1000, 'k') + "-bin";
  const HostileCase kCases[] = {
      {"empty block", {}, ""},
      {"empty name", {{"", "v"}}, ""},
      {"empty -bin name suffix only", {{"-bin", "AAEC"}}, ""},
      {"uppercase name passes through", {{"X-Upper", "v"}}, ""},
      {"NUL in a value", {{"x-a", std::string("a\0b", 3)}}, ""},
      {"bare ':'", {{":", "v"}}, ""},
      {"big value", {{"x-big", std::string(100000, 'v')}}, ""},
      {"invalid base64",
       {{"x-bin", "AB=C"}},
       "received header 'x-bin' has a value that is not valid base64"},
      {"truncated base64",
       {{"x-bin", "AAECA"}},
       "received header 'x-bin' has a value that is not valid base64"},
      {"single base64 char",
       {{"x-bin", "A"}},
       "received header 'x-bin' has a value that is not valid base64"},
      {"url-safe base64",
       {{"x-bin", "-_-_"}},
       "received header 'x-bin' has a value that is not valid base64"},
      {"space inside base64",
       {{"x-bin", "AA AA"}},
       "received header 'x-bin' has a value that is not valid base64"},
      {"too much padding",
       {{"x-bin", "AA==="}},
       "received header 'x-bin' has a value that is not valid base64"},
      {"binary bytes in a -bin value",
       {{"x-bin", "\xFF\x00\x01"}},
       "received header 'x-bin' has a value that is not valid base64"},
      {"invalid second part",
       {{"x-bin", "AAEC,A"}},
       "received header 'x-bin' has a comma-separated value (number 2) that "
       "is not valid base64"},
      {"invalid part after valid ones",
       {{"x-a", "1"}, {"x-bin", "AAEC,,=A"}},
       "received header 'x-bin' has a comma-separated value (number 3) that "
       "is not valid base64"},
      {"two grpc-status",
       {{"grpc-status", "0"}, {"grpc-status", "13"}},
       "received header 'grpc-status' appears more than once"},
      {"two :path",
       {{":path", "/a"}, {"x", "y"}, {":path", "/b"}},
       "received header ':path' appears more than once"},
      {"two :status",
       {{":status", "200"}, {":status", "200"}},
       "received header ':status' appears more than once"},
      {"two content-encoding",
       {{"content-encoding", "gzip"}, {"content-encoding", "gzip"}},
       "received header 'content-encoding' appears more than once"},
      {"two grpc-encoding",
       {{"grpc-encoding", "gzip"}, {"grpc-encoding", "identity"}},
       "received header 'grpc-encoding' appears more than once"},
      {"two content-type",
       {{"content-type", "a"}, {"content-type", "b"}},
       "received header 'content-type' appears more than once"},
      {"two user-agent",
       {{"user-agent", "a"}, {"user-agent", "b"}},
       "received header 'user-agent' appears more than once"},
      {"two grpc-status-details-bin",
       {{"grpc-status-details-bin", ""}, {"grpc-status-details-bin", ""}},
       "received header 'grpc-status-details-bin' appears more than once"},
      {"two empty grpc-message",
       {{"grpc-message", ""}, {"grpc-message", ""}},
       "received header 'grpc-message' appears more than once"},
      {"invalid name is escaped in errors",
       {{"x\n'-bin", "!"}},
       "received header 'x\\n\\'-bin' has a value that is not valid base64"},
      {"long key, many commas",
       {{long_key, std::string(20000, ',')}},
       "received header '" + long_key +
           "' has 20001 comma-separated values: storing its key for each "
           "would exceed the limit of 29196 repeated key bytes (the block's "
           "size + 8192)"},
  };
  for (const HostileCase& c : kCases) {
    Block block(c.fields);
    ReservedHeaderValues reserved;
    Metadata md;
    h2rpc::testing::AllocationCounter counter;
    const Status status = ParseReceivedHeaders(block.fields(), &reserved, &md);
    if (c.error.empty()) {
      EXPECT_TRUE(status.ok()) << c.what << ": " << status.ToString();
      EXPECT_EQ(md.entry_capacity(), md.size()) << c.what;
      EXPECT_LE(counter.allocations(), 2) << c.what;
    } else {
      EXPECT_EQ(status.code(), StatusCode::kInternal) << c.what;
      EXPECT_EQ(status.message(), c.error) << c.what;
      // The only allocations are the reserve (at most 2) and the message.
      EXPECT_LE(counter.allocations(), 3) << c.what;
    }
    // Whatever happened, nothing was reserved beyond what was received.
    size_t received = 0;
    for (const HeaderField& f : block.fields()) {
      received += f.name.size() + f.value.size();
    }
    EXPECT_LE(md.byte_capacity(), 2 * received + 32) << c.what;
  }
}

TEST(ReceivedHeadersTest, SplitLimitErrorsLeaveMetadataUntouched) {
  const std::string key = std::string(1000, 'k') + "-bin";
  Block block({{"x-a", "1"}, {key, std::string(20000, ',')}});
  ReservedHeaderValues reserved;
  Metadata md;
  EXPECT_FALSE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_TRUE(md.empty());
  EXPECT_EQ(md.entry_capacity(), 0u);
  EXPECT_EQ(md.byte_capacity(), Metadata().byte_capacity());
}

TEST(ReceivedHeadersTest, SplitWithinTheAllowanceIsAccepted) {
  // Eight small values combined under a 40-byte key: 280 repeated key bytes,
  // more than the block's own size, well within the allowance.
  const std::string key = std::string(36, 'k') + "-bin";
  Block block({{key, "AA,AQ,Ag,Aw,BA,BQ,Bg,Bw"}});
  ReservedHeaderValues reserved;
  Metadata md;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  ASSERT_EQ(md.size(), 8u);
  EXPECT_EQ(md[7].value, "\7");
}

TEST(ReceivedHeadersTest, DuplicateErrorsLeaveMetadataUntouched) {
  Block block({{"x-a", "1"}, {"grpc-status", "0"}, {"grpc-status", "0"}});
  ReservedHeaderValues reserved;
  Metadata md;
  EXPECT_FALSE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_TRUE(md.empty());
  EXPECT_EQ(md.entry_capacity(), 0u);
}

TEST(ReceivedHeadersTest, RepeatedAcceptListsKeepTheFirstField) {
  Block block({{"te", "trailers"},
               {"grpc-accept-encoding", "gzip"},
               {"accept-encoding", "br"},
               {"connect-accept-encoding", "gzip"},
               {"te", "trailers"},
               {"grpc-accept-encoding", "deflate"},
               {"accept-encoding", "gzip"},
               {"connect-accept-encoding", "identity"}});
  ReservedHeaderValues reserved;
  Metadata md;
  ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
  EXPECT_EQ(reserved.te, "trailers");
  EXPECT_EQ(reserved.grpc_accept_encoding, "gzip");
  EXPECT_EQ(reserved.accept_encoding, "br");
  EXPECT_EQ(reserved.connect_accept_encoding, "gzip");
  EXPECT_TRUE(md.empty());
}

// A request-like block with `n` user headers, every fifth one binary.
Pairs RequestWithUserHeaders(int n) {
  Pairs pairs = {{":method", "POST"},
                 {":scheme", "http"},
                 {":path", "/pkg.Service/Method"},
                 {":authority", "localhost"},
                 {"content-type", "application/grpc"},
                 {"te", "trailers"},
                 {"grpc-timeout", "1S"}};
  for (int i = 0; i < n; ++i) {
    if (i % 5 == 4) {
      pairs.emplace_back(absl::StrCat("x-bin-", i, "-bin"), "AAEC,AwQ=");
    } else {
      pairs.emplace_back(absl::StrCat("x-header-", i), "*");
    }
  }
  return pairs;
}

TEST(ReceivedHeadersTest, AllocationsDoNotGrowWithTheNumberOfHeaders) {
  for (int n : {0, 1, 10, 100, 1000}) {
    Block block(RequestWithUserHeaders(n));
    const size_t expected_entries = n + n / 5;  // each -bin one has 2 parts
    ReservedHeaderValues reserved;
    Metadata md;
    h2rpc::testing::AllocationCounter counter;
    ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
    const int64_t fresh = counter.allocations();
    if (n == 0) {
      EXPECT_EQ(fresh, 0);
    } else {
      EXPECT_LE(fresh, 2) << n;
    }
    EXPECT_EQ(md.size(), expected_entries) << n;
    EXPECT_EQ(md.entry_capacity(), expected_entries) << n;
    EXPECT_EQ(reserved.path, absl::string_view("/pkg.Service/Method"));

    // Reused after Clear(): no allocation at all, same result.
    const Pairs first = ToPairs(md);
    md.Clear();
    counter.Reset();
    ASSERT_TRUE(ParseReceivedHeaders(block.fields(), &reserved, &md).ok());
    EXPECT_EQ(counter.allocations(), 0) << n;
    EXPECT_EQ(ToPairs(md), first) << n;
  }
}

}  // namespace
}  // namespace h2rpc::transport
