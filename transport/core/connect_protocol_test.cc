#include "transport/core/connect_protocol.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace h2rpc::transport {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

std::vector<std::pair<std::string, std::string>> Fields(
    const HeaderList& headers) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const nghttp2_nv& field : headers.fields()) {
    out.emplace_back(
        std::string(reinterpret_cast<char*>(field.name), field.namelen),
        std::string(reinterpret_cast<char*>(field.value), field.valuelen));
  }
  return out;
}

TEST(ConnectProtocolTest, UnaryContentTypes) {
  bool json = true;
  EXPECT_TRUE(IsConnectUnaryContentType("application/proto", &json));
  EXPECT_FALSE(json);
  for (const char* yes : {"application/json", "application/json; charset=utf-8",
                          "application/json;charset=utf-8"}) {
    json = false;
    EXPECT_TRUE(IsConnectUnaryContentType(yes, &json)) << yes;
    EXPECT_TRUE(json) << yes;
  }
  for (const char* no :
       {"application/grpc", "application/connect+proto", "application/jsonx",
        "application/protobuf", "text/json", "application/pro", ""}) {
    EXPECT_FALSE(IsConnectUnaryContentType(no, &json)) << no;
  }
}

TEST(ConnectProtocolTest, StreamContentTypes) {
  bool json = true;
  EXPECT_TRUE(IsConnectStreamContentType("application/connect+proto", &json));
  EXPECT_FALSE(json);
  EXPECT_TRUE(
      IsConnectStreamContentType("application/connect+json; x=1", &json));
  EXPECT_TRUE(json);
  for (const char* no :
       {"application/proto", "application/json", "application/connect",
        "application/connect+protox", "application/grpc+proto"}) {
    EXPECT_FALSE(IsConnectStreamContentType(no, &json)) << no;
  }
}

TEST(ConnectProtocolTest, EndStreamFrameHoldsTheErrorAndTheMetadata) {
  Metadata trailing;
  trailing.Add("x-cost", "7");
  trailing.Add("x-cost", "8");
  trailing.Add("x-id-bin", std::string("\x01\x02", 2));
  std::string body = "before";
  AppendConnectEndStream(Status(StatusCode::kAborted, "stop"), {}, &trailing,
                         &body);
  ASSERT_GT(body.size(), 6u + 5u);
  EXPECT_EQ(body.substr(0, 6), "before");
  EXPECT_EQ(body[6], 0x02);
  const std::string json = body.substr(11);
  const uint32_t length = (uint32_t{static_cast<uint8_t>(body[7])} << 24) |
                          (uint32_t{static_cast<uint8_t>(body[8])} << 16) |
                          (uint32_t{static_cast<uint8_t>(body[9])} << 8) |
                          uint32_t{static_cast<uint8_t>(body[10])};
  EXPECT_EQ(length, json.size());
  EXPECT_EQ(nlohmann::json::parse(json), nlohmann::json::parse(R"({
              "error": {"code": "aborted", "message": "stop"},
              "metadata": {"x-cost": ["7", "8"], "x-id-bin": ["AQI"]}})"));

  // An OK end without metadata is an empty object.
  body.clear();
  AppendConnectEndStream(Status(), {}, nullptr, &body);
  EXPECT_EQ(body, std::string("\x02\0\0\0\x02{}", 7));
}

TEST(ConnectProtocolTest, TimeoutIsOneToTenDigitsOfMilliseconds) {
  EXPECT_EQ(DecodeConnectTimeout("0"), absl::ZeroDuration());
  EXPECT_EQ(DecodeConnectTimeout("250"), absl::Milliseconds(250));
  EXPECT_EQ(DecodeConnectTimeout("9999999999"), absl::Milliseconds(9999999999));
  for (const char* bad : {"", "12345678901", "-1", "1.5", "1s", " 1", "0x10"}) {
    EXPECT_EQ(DecodeConnectTimeout(bad), absl::nullopt) << bad;
  }
}

TEST(ConnectProtocolTest, CodesAndHttpStatusesFollowTheSpec) {
  const std::vector<std::tuple<StatusCode, const char*, int>> table = {
      {StatusCode::kCancelled, "canceled", 499},
      {StatusCode::kUnknown, "unknown", 500},
      {StatusCode::kInvalidArgument, "invalid_argument", 400},
      {StatusCode::kDeadlineExceeded, "deadline_exceeded", 504},
      {StatusCode::kNotFound, "not_found", 404},
      {StatusCode::kAlreadyExists, "already_exists", 409},
      {StatusCode::kPermissionDenied, "permission_denied", 403},
      {StatusCode::kResourceExhausted, "resource_exhausted", 429},
      {StatusCode::kFailedPrecondition, "failed_precondition", 400},
      {StatusCode::kAborted, "aborted", 409},
      {StatusCode::kOutOfRange, "out_of_range", 400},
      {StatusCode::kUnimplemented, "unimplemented", 501},
      {StatusCode::kInternal, "internal", 500},
      {StatusCode::kUnavailable, "unavailable", 503},
      {StatusCode::kDataLoss, "data_loss", 500},
      {StatusCode::kUnauthenticated, "unauthenticated", 401},
  };
  for (const auto& [code, name, http_status] : table) {
    EXPECT_EQ(ConnectCodeName(code), name);
    EXPECT_EQ(ConnectHttpStatus(code), http_status) << name;
  }
  EXPECT_EQ(ConnectHttpStatus(StatusCode::kOk), 200);
  EXPECT_EQ(ConnectCodeName(static_cast<StatusCode>(99)), "unknown");
  EXPECT_EQ(ConnectHttpStatus(static_cast<StatusCode>(99)), 500);
}

TEST(ConnectProtocolTest, ErrorBodyIsJsonAPeerCanParse) {
  std::string body;
  AppendConnectErrorJson(Status(StatusCode::kNotFound, "no \"row\" 7\n\xff"),
                         {}, &body);
  const nlohmann::json error = nlohmann::json::parse(body);
  EXPECT_EQ(error["code"], "not_found");
  // Quotes and control characters escaped; the invalid byte replaced.
  EXPECT_EQ(error["message"], "no \"row\" 7\n\xEF\xBF\xBD");
  EXPECT_EQ(error.size(), 2u);

  body.clear();
  AppendConnectErrorJson(Status(StatusCode::kInternal, ""), {}, &body);
  EXPECT_EQ(body, R"({"code":"internal"})");

  body.clear();
  AppendConnectErrorJson(
      Status(StatusCode::kAborted, "x"),
      {{"google.rpc.ErrorInfo", "ab"}, {"google.protobuf.StringValue", ""}},
      &body);
  EXPECT_EQ(nlohmann::json::parse(body),
            nlohmann::json::parse(R"({"code": "aborted", "message": "x",
                "details": [{"type": "google.rpc.ErrorInfo", "value": "YWI"},
                            {"type": "google.protobuf.StringValue",
                             "value": ""}]})"));
}

TEST(ConnectProtocolTest, HeadersCarryTrailingMetadataWithItsPrefix) {
  Metadata initial;
  initial.Add("x-initial", "1");
  Metadata trailing;
  trailing.Add("x-cost", "7");
  trailing.Add("x-id-bin", std::string("\x01\x02", 2));
  ConnectResponseDescription response;
  response.content_type = kConnectProtoContentType;
  response.content_encoding = "gzip";
  response.accept_encodings = "identity,gzip";
  response.metadata = &initial;
  response.trailing = &trailing;
  HeaderList headers;
  ASSERT_TRUE(BuildConnectUnaryHeaders(response, &headers).ok());
  EXPECT_THAT(Fields(headers),
              ElementsAre(Pair(":status", "200"),
                          Pair("content-type", "application/proto"),
                          Pair("content-encoding", "gzip"),
                          Pair("accept-encoding", "identity,gzip"),
                          Pair("x-initial", "1"), Pair("trailer-x-cost", "7"),
                          Pair("trailer-x-id-bin", "AQI")));
  EXPECT_EQ(headers.size(), headers.capacity());
}

TEST(ConnectProtocolTest, AnErrorsHeadersWithCors) {
  ConnectResponseDescription response;
  response.http_status = 404;
  response.content_type = kConnectJsonContentType;
  response.content_encoding = "identity";
  response.cors_origin = "https://app.example.com";
  HeaderList headers;
  ASSERT_TRUE(BuildConnectUnaryHeaders(response, &headers).ok());
  const auto fields = Fields(headers);
  ASSERT_GE(fields.size(), 3u);
  EXPECT_THAT(fields[0], Pair(":status", "404"));
  EXPECT_THAT(fields[1], Pair("content-type", "application/json"));
  EXPECT_THAT(fields[2],
              Pair("access-control-allow-origin", "https://app.example.com"));
  EXPECT_EQ(headers.size(), headers.capacity());
}

TEST(ConnectProtocolTest, InvalidMetadataIsRefusedNamingTheKey) {
  Metadata trailing;
  trailing.Add("Bad Key", "1");
  ConnectResponseDescription response;
  response.content_type = kConnectProtoContentType;
  response.trailing = &trailing;
  HeaderList headers;
  const Status built = BuildConnectUnaryHeaders(response, &headers);
  EXPECT_EQ(built.code(), StatusCode::kInternal);
  EXPECT_THAT(built.message(), ::testing::HasSubstr("Bad Key"));
}

TEST(ConnectProtocolTest, GetRequestsQuery) {
  ConnectGetRequest request;
  ASSERT_TRUE(ParseConnectGetRequest(
                  "/p.S/M?connect=v1&encoding=json&message=%7B%22a%22%3A+1%7D"
                  "&unknown=x",
                  &request)
                  .ok());
  EXPECT_EQ(request.method, "/p.S/M");
  EXPECT_TRUE(request.json);
  EXPECT_EQ(request.message, R"({"a": 1})");
  EXPECT_EQ(request.compression, "");

  ASSERT_TRUE(
      ParseConnectGetRequest(
          "/p.S/M?message=AP_-&base64=1&encoding=proto&compression=gzip",
          &request)
          .ok());
  EXPECT_FALSE(request.json);
  EXPECT_EQ(request.message, std::string("\x00\xff\xfe", 3));
  EXPECT_EQ(request.compression, "gzip");

  for (const char* bad :
       {"/p.S/M", "/p.S/M?encoding=json", "/p.S/M?message=x",
        "/p.S/M?encoding=text&message=x", "/p.S/M?encoding=json&message=%zz",
        "/p.S/M?encoding=json&message=%4",
        "/p.S/M?encoding=proto&base64=1&message=%25",
        "/p.S/M?encoding=json&message=x&connect=v2"}) {
    const Status status = ParseConnectGetRequest(bad, &request);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ConnectProtocolTest, ClientsSplitTheTrailerHeadersOff) {
  Metadata headers;
  headers.Add("x-initial", "1");
  headers.Add("trailer-x-cost", "7");
  headers.Add("x-other", "2");
  headers.Add("trailer-x-id-bin", std::string("\x01\x02", 2));
  Metadata initial, trailing;
  SplitConnectResponseMetadata(headers, &initial, &trailing);
  ASSERT_EQ(initial.size(), 2u);
  EXPECT_EQ(initial.Get("x-initial"), "1");
  EXPECT_EQ(initial.Get("x-other"), "2");
  ASSERT_EQ(trailing.size(), 2u);
  EXPECT_EQ(trailing.Get("x-cost"), "7");
  EXPECT_EQ(trailing.Get("x-id-bin"), std::string("\x01\x02", 2));
  // Each reserved once, exactly.
  EXPECT_EQ(initial.entry_capacity(), 2u);
  EXPECT_EQ(trailing.entry_capacity(), 2u);
}

TEST(ConnectProtocolTest, ClientsReadErrorsFromTheBodyOrTheHttpStatus) {
  Status status = ConnectErrorFromBody(
      404, R"({"code": "not_found", "message": "no \"row\"", "x": 1})");
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no \"row\"");
  status = ConnectErrorFromBody(400, R"({"code": "canceled"})");
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_EQ(status.message(), "");
  // Not a Connect error: gRPC's code for the HTTP status.
  for (const auto& [body, http_status, code] :
       std::vector<std::tuple<std::string, int, StatusCode>>{
           {"<html>busy</html>", 503, StatusCode::kUnavailable},
           {R"({"code": "no_such_code"})", 404, StatusCode::kUnimplemented},
           {R"({"code": 5})", 401, StatusCode::kUnauthenticated},
           {"", 415, StatusCode::kUnknown}}) {
    status = ConnectErrorFromBody(http_status, body);
    EXPECT_EQ(status.code(), code) << body;
    EXPECT_NE(status.message().find(absl::StrCat(http_status)),
              std::string::npos)
        << status.message();
  }
}

}  // namespace
}  // namespace h2rpc::transport
