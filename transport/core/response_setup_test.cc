#include "transport/core/response_setup.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "test/util/h2_header_exchange.h"

namespace h2rpc::transport {
namespace {

using ::h2rpc::testing::AllocationCounter;
using ::h2rpc::testing::DecodedField;
using ::h2rpc::testing::ExchangeResponseHeaders;
using ::h2rpc::testing::HeaderExchange;
using ::testing::HasSubstr;
using FieldList = std::vector<std::pair<std::string, std::string>>;

FieldList Fields(const HeaderList& list) {
  FieldList out;
  for (const nghttp2_nv& nv : list.fields()) {
    out.emplace_back(
        std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
        std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
  }
  return out;
}

FieldList Fields(const std::vector<DecodedField>& decoded) {
  FieldList out;
  for (const DecodedField& f : decoded) out.emplace_back(f.name, f.value);
  return out;
}

Metadata MakeMetadata(absl::string_view prefix, int entries) {
  Metadata md;
  for (int i = 0; i < entries; ++i) {
    md.Add(absl::StrCat(prefix, i), absl::StrCat("v", i));
  }
  return md;
}

TEST(ResponseSetupTest, ResponseHeadersInOrderWithExactCount) {
  for (int entries : {0, 1, 10, 100}) {
    const Metadata md = MakeMetadata("x-initial-", entries);
    ResponseDescription response;
    response.send_encoding = "gzip";
    response.accept_encodings = "gzip,deflate";
    response.metadata = &md;
    HeaderList headers;
    AllocationCounter counter;
    ASSERT_TRUE(BuildResponseHeaders(response, &headers).ok());
    EXPECT_EQ(counter.allocations(), 1);
    EXPECT_EQ(headers.size(), CountResponseHeaderFields(response));
    EXPECT_EQ(headers.capacity(), headers.size());
    FieldList expected = {{":status", "200"},
                          {"content-type", "application/grpc"},
                          {"grpc-encoding", "gzip"},
                          {"grpc-accept-encoding", "gzip,deflate"}};
    for (Metadata::Entry e : md) {
      expected.emplace_back(std::string(e.key), std::string(e.value));
    }
    EXPECT_EQ(Fields(headers), expected);
  }
}

TEST(ResponseSetupTest, OptionalResponseFieldsAreOmitted) {
  ResponseDescription response;
  response.send_encoding = "identity";
  HeaderList headers;
  ASSERT_TRUE(BuildResponseHeaders(response, &headers).ok());
  EXPECT_EQ(Fields(headers), (FieldList{{":status", "200"},
                                        {"content-type", "application/grpc"}}));
}

TEST(ResponseSetupTest, TrailersCarryPercentEncodedMessageAndDetails) {
  const Status status(StatusCode::kNotFound, "caf\xc3\xa9 100%\n",
                      std::string("\x08\x05", 2));
  const Metadata trailing = MakeMetadata("x-trailing-", 2);
  HeaderList trailers;
  ASSERT_TRUE(BuildTrailers(status, &trailing, &trailers).ok());
  EXPECT_EQ(trailers.size(), CountTrailerFields(status, &trailing));
  EXPECT_EQ(trailers.capacity(), trailers.size());
  EXPECT_EQ(Fields(trailers),
            (FieldList{{"grpc-status", "5"},
                       {"grpc-message", "caf%C3%A9 100%25%0A"},
                       {"grpc-status-details-bin", "CAU"},
                       {"x-trailing-0", "v0"},
                       {"x-trailing-1", "v1"}}));
}

TEST(ResponseSetupTest, OkTrailersAreJustTheStatus) {
  HeaderList trailers;
  AllocationCounter counter;
  ASSERT_TRUE(BuildTrailers(Status(), nullptr, &trailers).ok());
  EXPECT_EQ(counter.allocations(), 1);
  EXPECT_EQ(Fields(trailers), (FieldList{{"grpc-status", "0"}}));
}

TEST(ResponseSetupTest, RealNghttp2ClientDecodesHeadersAndTrailers) {
  const Metadata initial = MakeMetadata("x-initial-", 3);
  Metadata trailing;
  trailing.Add("x-trailing-bin", std::string("\x00\xff", 2));
  ResponseDescription response;
  response.accept_encodings = "gzip";
  response.metadata = &initial;
  HeaderList headers, trailers;
  ASSERT_TRUE(BuildResponseHeaders(response, &headers).ok());
  ASSERT_TRUE(BuildTrailers(Status(StatusCode::kAborted, "try again"),
                            &trailing, &trailers)
                  .ok());
  const HeaderExchange exchange =
      ExchangeResponseHeaders(headers.fields(), trailers.fields(), false);
  ASSERT_TRUE(exchange.accepted) << exchange.error;
  EXPECT_EQ(Fields(exchange.headers), Fields(headers));
  EXPECT_EQ(Fields(exchange.trailers), (FieldList{{"grpc-status", "10"},
                                                  {"grpc-message", "try again"},
                                                  {"x-trailing-bin", "AP8"}}));
}

TEST(ResponseSetupTest, TrailersOnlyIsOneValidBlock) {
  const Metadata initial = MakeMetadata("x-initial-", 1);
  const Metadata trailing = MakeMetadata("x-trailing-", 1);
  ResponseDescription response;
  response.send_encoding = "gzip";  // ignored: no message follows
  response.accept_encodings = "gzip,deflate";
  response.metadata = &initial;
  const Status status(StatusCode::kUnimplemented,
                      "grpc-encoding 'br' is not supported");
  HeaderList headers;
  ASSERT_TRUE(BuildTrailersOnly(response, status, &trailing, &headers).ok());
  EXPECT_EQ(headers.size(),
            CountTrailersOnlyFields(response, status, &trailing));
  EXPECT_EQ(headers.capacity(), headers.size());
  const FieldList expected = {
      {":status", "200"},
      {"content-type", "application/grpc"},
      {"grpc-accept-encoding", "gzip,deflate"},
      {"grpc-status", "12"},
      {"grpc-message", "grpc-encoding 'br' is not supported"},
      {"x-initial-0", "v0"},
      {"x-trailing-0", "v0"}};
  EXPECT_EQ(Fields(headers), expected);
  const HeaderExchange exchange =
      ExchangeResponseHeaders(headers.fields(), absl::nullopt, true);
  ASSERT_TRUE(exchange.accepted) << exchange.error;
  EXPECT_EQ(Fields(exchange.headers), expected);
  EXPECT_TRUE(exchange.trailers.empty());
}

TEST(ResponseSetupTest, HttpErrorResponseForNonGrpcRequests) {
  HeaderList headers;
  BuildHttpErrorResponse(
      415, Status(StatusCode::kInternal, "invalid content-type 'text/plain'"),
      &headers);
  const FieldList expected = {
      {":status", "415"},
      {"content-type", "application/grpc"},
      {"grpc-status", "13"},
      {"grpc-message", "invalid content-type 'text/plain'"}};
  EXPECT_EQ(Fields(headers), expected);
  const HeaderExchange exchange =
      ExchangeResponseHeaders(headers.fields(), absl::nullopt, true);
  ASSERT_TRUE(exchange.accepted) << exchange.error;
  EXPECT_EQ(Fields(exchange.headers), expected);
}

TEST(ResponseSetupTest, InvalidMetadataLeavesTheListUntouched) {
  Metadata bad;
  bad.Add("grpc-status", "0");  // a user may not forge the status
  ResponseDescription response;
  response.metadata = &bad;
  HeaderList headers;
  Status status = BuildResponseHeaders(response, &headers);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("'grpc-status'"));
  status = BuildTrailers(Status(), &bad, &headers);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  status = BuildTrailersOnly(ResponseDescription(), Status(), &bad, &headers);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(headers.size(), 0u);
}

TEST(ResponseSetupTest, ReusedListDoesNotAllocate) {
  const Metadata trailing = MakeMetadata("x-trailing-", 4);
  HeaderList trailers;
  const Status status(StatusCode::kInternal, "boom");
  ASSERT_TRUE(BuildTrailers(status, &trailing, &trailers).ok());
  AllocationCounter counter;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(BuildTrailers(status, &trailing, &trailers).ok());
  }
  EXPECT_EQ(counter.allocations(), 0);
}

}  // namespace
}  // namespace h2rpc::transport
