#include "transport/core/grpc_web.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "transport/core/response_setup.h"

namespace h2rpc::transport {
namespace {

TEST(GrpcWebTest, ContentTypes) {
  for (const char* yes : {"application/grpc-web", "application/grpc-web+proto",
                          "application/grpc-web;charset=utf-8",
                          "application/grpc-web+proto; v=1"}) {
    EXPECT_TRUE(IsGrpcWebContentType(yes)) << yes;
  }
  for (const char* no :
       {"application/grpc", "application/grpc+proto",
        "application/grpc-web-text", "application/grpc-web+json",
        "application/grpc-webx", "application/grpc-we", ""}) {
    EXPECT_FALSE(IsGrpcWebContentType(no)) << no;
  }
}

TEST(GrpcWebTest, TrailersFrameHoldsTheTrailerLines) {
  Metadata trailing;
  trailing.Add("x-cost", "7");
  trailing.Add("x-id-bin", std::string("\x01\x02", 2));
  HeaderList trailers;
  ASSERT_TRUE(BuildTrailers(Status(StatusCode::kNotFound, "no such 100%"),
                            &trailing, &trailers)
                  .ok());
  std::string body = "message";
  AppendGrpcWebTrailers(trailers, &body);
  const std::string lines =
      "grpc-status:5\r\n"
      "grpc-message:no such 100%25\r\n"
      "x-cost:7\r\n"
      "x-id-bin:AQI\r\n";
  const std::string prefix = {static_cast<char>(0x80), 0, 0, 0,
                              static_cast<char>(lines.size())};
  EXPECT_EQ(body, "message" + prefix + lines);
  EXPECT_EQ(GrpcWebTrailersSize(trailers), prefix.size() + lines.size());
}

TEST(GrpcWebTest, AnOkStatusIsOneLine) {
  HeaderList trailers;
  ASSERT_TRUE(BuildTrailers(Status(), nullptr, &trailers).ok());
  std::string body;
  AppendGrpcWebTrailers(trailers, &body);
  EXPECT_EQ(body, std::string("\x80\0\0\0\x0fgrpc-status:0\r\n", 20));
}

TEST(GrpcWebTest, TextContentTypes) {
  for (const char* yes :
       {"application/grpc-web-text", "application/grpc-web-text+proto",
        "application/grpc-web-text; charset=utf-8"}) {
    EXPECT_TRUE(IsGrpcWebTextContentType(yes)) << yes;
    EXPECT_FALSE(IsGrpcWebContentType(yes)) << yes;
  }
  for (const char* no : {"application/grpc-web", "application/grpc-web-textx",
                         "application/grpc-web-text+json"}) {
    EXPECT_FALSE(IsGrpcWebTextContentType(no)) << no;
  }
}

TEST(GrpcWebTest, Base64InPlaceIsPaddedAndLeavesTheBytesBefore) {
  for (const auto& [bytes, encoded] :
       std::vector<std::pair<std::string, std::string>>{
           {"", ""},
           {"a", "YQ=="},
           {"ab", "YWI="},
           {"abc", "YWJj"},
           {"hello world!?", "aGVsbG8gd29ybGQhPw=="}}) {
    std::string buffer = "keep" + bytes;
    EncodeBase64PaddedInPlace(&buffer, 4);
    EXPECT_EQ(buffer, "keep" + encoded) << bytes;
  }
}

// Every split of a body of padded runs into two chunks decodes the same.
TEST(GrpcWebTest, TextDecoderTakesChunksOfAnySizeAndSeveralRuns) {
  const std::string body = "YQ==YWI=YWJjZA==";  // "a", "ab", "abcd"
  for (size_t split = 0; split <= body.size(); ++split) {
    GrpcWebTextDecoder decoder;
    std::string out;
    ASSERT_TRUE(decoder.Decode(body.substr(0, split), &out)) << split;
    EXPECT_EQ(decoder.at_group_boundary(), split % 4 == 0) << split;
    ASSERT_TRUE(decoder.Decode(body.substr(split), &out)) << split;
    EXPECT_TRUE(decoder.at_group_boundary());
    EXPECT_EQ(out, "aababcd") << split;
  }
}

TEST(GrpcWebTest, TextDecoderRefusesWhatIsNotBase64) {
  for (const char* bad : {"YQ=A", "Y===", "YW I", "YWI\n", "YW-_", "=AAA"}) {
    GrpcWebTextDecoder decoder;
    std::string out;
    EXPECT_FALSE(decoder.Decode(bad, &out)) << bad;
    EXPECT_FALSE(decoder.at_group_boundary()) << bad;
    // Sticky.
    EXPECT_FALSE(decoder.Decode("YWJj", &out)) << bad;
  }
}

}  // namespace
}  // namespace h2rpc::transport
