#include "transport/core/status_synthesis.h"

#include <climits>
#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::transport {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::string_view kGrpc = "application/grpc";

std::string Escaped(absl::string_view s) {
  return "\"" + absl::CHexEscape(s) + "\"";
}

TEST(GrpcCodeFromHttpStatusTest, MappedStatuses) {
  EXPECT_EQ(GrpcCodeFromHttpStatus(400), StatusCode::kInternal);
  EXPECT_EQ(GrpcCodeFromHttpStatus(401), StatusCode::kUnauthenticated);
  EXPECT_EQ(GrpcCodeFromHttpStatus(403), StatusCode::kPermissionDenied);
  EXPECT_EQ(GrpcCodeFromHttpStatus(404), StatusCode::kUnimplemented);
  EXPECT_EQ(GrpcCodeFromHttpStatus(429), StatusCode::kUnavailable);
  EXPECT_EQ(GrpcCodeFromHttpStatus(502), StatusCode::kUnavailable);
  EXPECT_EQ(GrpcCodeFromHttpStatus(503), StatusCode::kUnavailable);
  EXPECT_EQ(GrpcCodeFromHttpStatus(504), StatusCode::kUnavailable);
}

TEST(GrpcCodeFromHttpStatusTest, EverythingElseIsUnknown) {
  for (int status = -1000; status < 2000; ++status) {
    switch (status) {
      case 400:
      case 401:
      case 403:
      case 404:
      case 429:
      case 502:
      case 503:
      case 504:
        continue;
    }
    ASSERT_EQ(GrpcCodeFromHttpStatus(status), StatusCode::kUnknown) << status;
  }
  EXPECT_EQ(GrpcCodeFromHttpStatus(INT_MAX), StatusCode::kUnknown);
  EXPECT_EQ(GrpcCodeFromHttpStatus(INT_MIN), StatusCode::kUnknown);
}

TEST(IsGrpcContentTypeTest, Table) {
  const struct {
    std::string content_type;
    bool is_grpc;
  } kCases[] = {
      {"application/grpc", true},
      {"application/grpc+proto", true},
      {"application/grpc+json", true},
      {"application/grpc;charset=utf-8", true},
      {"application/grpc+", true},
      {"application/grpc;", true},
      {"", false},
      {"application", false},
      {"application/", false},
      {"application/grp", false},
      {"application/grpcx", false},
      {"application/grpc-web", false},
      {"application/grpc-web+proto", false},
      {"application/grpc ", false},
      {"application/grpc/proto", false},
      {" application/grpc", false},
      {"Application/grpc", false},
      {"APPLICATION/GRPC", false},
      {"application/json", false},
      {"text/html", false},
      {"text/html; application/grpc", false},
      {std::string("application/grpc\0", 17), false},
      {std::string("\0application/grpc", 17), false},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(IsGrpcContentType(c.content_type), c.is_grpc)
        << Escaped(c.content_type);
  }
}

struct ResponseHeadersCase {
  absl::optional<std::string> http_status;
  absl::optional<std::string> content_type;
  StatusCode code;
  std::string message;  // Expected exactly.
};

absl::optional<absl::string_view> View(const absl::optional<std::string>& s) {
  if (!s.has_value()) return absl::nullopt;
  return absl::string_view(*s);
}

TEST(StatusFromResponseHeadersTest, Table) {
  const std::string grpc(kGrpc);
  const ResponseHeadersCase kCases[] = {
      {"200", grpc, StatusCode::kOk, ""},
      {"200", "application/grpc+proto", StatusCode::kOk, ""},
      {"200", "application/grpc;x=y", StatusCode::kOk, ""},
      // :status missing or not three digits.
      {absl::nullopt, grpc, StatusCode::kInternal,
       "missing :status in response headers"},
      {absl::nullopt, absl::nullopt, StatusCode::kInternal,
       "missing :status in response headers"},
      {"", grpc, StatusCode::kInternal,
       "invalid :status \"\" in response headers"},
      {"abc", grpc, StatusCode::kInternal,
       "invalid :status \"abc\" in response headers"},
      {"20", grpc, StatusCode::kInternal,
       "invalid :status \"20\" in response headers"},
      {"2000", grpc, StatusCode::kInternal,
       "invalid :status \"2000\" in response headers"},
      {"+200", grpc, StatusCode::kInternal,
       "invalid :status \"+200\" in response headers"},
      {"-200", grpc, StatusCode::kInternal,
       "invalid :status \"-200\" in response headers"},
      {" 200", grpc, StatusCode::kInternal,
       "invalid :status \" 200\" in response headers"},
      {"200 ", grpc, StatusCode::kInternal,
       "invalid :status \"200 \" in response headers"},
      {"2x0", grpc, StatusCode::kInternal,
       "invalid :status \"2x0\" in response headers"},
      {"200 OK", grpc, StatusCode::kInternal,
       "invalid :status \"200 OK\" in response headers"},
      {std::string("200\0", 4), grpc, StatusCode::kInternal,
       "invalid :status \"200\\x00\" in response headers"},
      {"99999999999999999999", grpc, StatusCode::kInternal,
       "invalid :status \"99999999999999999999\" in response headers"},
      // Non-200: the HTTP mapping wins whatever the content-type.
      {"400", grpc, StatusCode::kInternal,
       "received HTTP status 400 instead of 200"},
      {"401", grpc, StatusCode::kUnauthenticated,
       "received HTTP status 401 instead of 200"},
      {"403", grpc, StatusCode::kPermissionDenied,
       "received HTTP status 403 instead of 200"},
      {"404", grpc, StatusCode::kUnimplemented,
       "received HTTP status 404 instead of 200"},
      {"404", absl::nullopt, StatusCode::kUnimplemented,
       "received HTTP status 404 instead of 200"},
      {"429", "text/plain", StatusCode::kUnavailable,
       "received HTTP status 429 instead of 200"},
      {"502", "text/html", StatusCode::kUnavailable,
       "received HTTP status 502 instead of 200"},
      {"503", grpc, StatusCode::kUnavailable,
       "received HTTP status 503 instead of 200"},
      {"504", grpc, StatusCode::kUnavailable,
       "received HTTP status 504 instead of 200"},
      {"500", grpc, StatusCode::kUnknown,
       "received HTTP status 500 instead of 200"},
      {"201", grpc, StatusCode::kUnknown,
       "received HTTP status 201 instead of 200"},
      {"302", grpc, StatusCode::kUnknown,
       "received HTTP status 302 instead of 200"},
      {"000", grpc, StatusCode::kUnknown,
       "received HTTP status 000 instead of 200"},
      {"999", grpc, StatusCode::kUnknown,
       "received HTTP status 999 instead of 200"},
      // 200 without a gRPC content-type.
      {"200", absl::nullopt, StatusCode::kUnknown,
       "missing content-type in response headers"},
      {"200", "", StatusCode::kUnknown,
       "invalid content-type \"\" in response headers"},
      {"200", "text/html", StatusCode::kUnknown,
       "invalid content-type \"text/html\" in response headers"},
      {"200", "application/grpc-web", StatusCode::kUnknown,
       "invalid content-type \"application/grpc-web\" in response headers"},
      {"200", "application/json\r\n", StatusCode::kUnknown,
       "invalid content-type \"application/json\\r\\n\" in response "
       "headers"},
  };
  for (const ResponseHeadersCase& c : kCases) {
    SCOPED_TRACE(absl::StrCat(
        ":status ", c.http_status ? Escaped(*c.http_status) : "missing",
        " content-type ",
        c.content_type ? Escaped(*c.content_type) : "missing"));
    const Status status =
        StatusFromResponseHeaders(View(c.http_status), View(c.content_type));
    EXPECT_EQ(status.code(), c.code) << status.ToString();
    EXPECT_EQ(status.message(), c.message);
    EXPECT_EQ(status.details(), "");
  }
}

TEST(StatusFromResponseHeadersTest, QuotedValuesAreEscapedAndBounded) {
  const std::string hostile = "\x1b[31m\n" + std::string(100000, '\xff');
  for (const Status& status :
       {StatusFromResponseHeaders(hostile, kGrpc),
        StatusFromResponseHeaders(absl::string_view("200"), hostile)}) {
    EXPECT_NE(status.code(), StatusCode::kOk);
    EXPECT_LT(status.message().size(), 400u);
    EXPECT_THAT(status.message(), HasSubstr("\\x1b[31m\\n"));
    EXPECT_THAT(status.message(), HasSubstr("...\""));
    for (char c : status.message()) {
      EXPECT_TRUE(c >= 0x20 && c <= 0x7E) << static_cast<int>(c);
    }
  }
}

TEST(StatusFromTrailersTest, EveryValidCode) {
  for (int code = 1; code <= kMaxStatusCode; ++code) {
    const std::string text = absl::StrCat(code);
    const Status status =
        StatusFromTrailers(text, absl::string_view("msg"), absl::nullopt);
    EXPECT_EQ(status.code(), static_cast<StatusCode>(code)) << text;
    EXPECT_EQ(status.message(), "msg");
    EXPECT_EQ(status.details(), "");
  }
  EXPECT_EQ(
      StatusFromTrailers(absl::string_view("0"), absl::nullopt, absl::nullopt),
      Status::Ok());
}

TEST(StatusFromTrailersTest, LeadingZerosAreAllowedUpToThreeDigits) {
  EXPECT_EQ(
      StatusFromTrailers(absl::string_view("00"), absl::nullopt, absl::nullopt),
      Status::Ok());
  EXPECT_EQ(
      StatusFromTrailers(absl::string_view("016"), absl::nullopt, absl::nullopt)
          .code(),
      StatusCode::kUnauthenticated);
  EXPECT_EQ(
      StatusFromTrailers(absl::string_view("005"), absl::nullopt, absl::nullopt)
          .code(),
      StatusCode::kNotFound);
}

TEST(StatusFromTrailersTest, MissingStatus) {
  const Status status = StatusFromTrailers(
      absl::nullopt, absl::string_view("boom"), absl::string_view("AAEC"));
  EXPECT_EQ(status,
            Status(StatusCode::kUnknown, "missing grpc-status in trailers"));
}

TEST(StatusFromTrailersTest, HostileStatusValues) {
  const std::string kHostile[] = {
      "",
      "-1",
      "+1",
      " 1",
      "1 ",
      "\t1",
      "17",
      "99",
      "100",
      "255",
      "0016",
      "99999999999999999999",
      "4294967296",
      "4294967297",
      "1a",
      "a1",
      "0x1",
      "1.0",
      "1e1",
      "\xe0\xa5\xa7",  // Devanagari digit one.
      std::string("\0", 1),
      std::string("1\0", 2),
      std::string("\0"
                  "1",
                  2),
  };
  for (const std::string& value : kHostile) {
    SCOPED_TRACE(Escaped(value));
    const Status status = StatusFromTrailers(value, absl::string_view("msg"),
                                             absl::string_view("AAEC"));
    EXPECT_EQ(status.code(), StatusCode::kUnknown);
    EXPECT_EQ(status.message(), absl::StrCat("invalid grpc-status ",
                                             Escaped(value), " in trailers"));
    EXPECT_EQ(status.details(), "");
  }
}

TEST(StatusFromTrailersTest, HugeStatusValueIsQuotedBounded) {
  const Status status = StatusFromTrailers(std::string(100000, '7'),
                                           absl::nullopt, absl::nullopt);
  EXPECT_EQ(status.code(), StatusCode::kUnknown);
  EXPECT_EQ(status.message(),
            absl::StrCat("invalid grpc-status \"", std::string(64, '7'),
                         "...\" in trailers"));
}

TEST(StatusFromTrailersTest, MessageIsPercentDecoded) {
  const Status status = StatusFromTrailers(
      absl::string_view("5"),
      absl::string_view("no%20such%20user %E2%9C%93 100%"), absl::nullopt);
  EXPECT_EQ(status,
            Status(StatusCode::kNotFound, "no such user \xe2\x9c\x93 100%"));
}

TEST(StatusFromTrailersTest, DetailsAreBase64Decoded) {
  const std::string kBytes("\0\1\2\xff", 4);
  for (absl::string_view encoded : {"AAEC/w==", "AAEC/w"}) {
    SCOPED_TRACE(encoded);
    const Status status = StatusFromTrailers(absl::string_view("3"),
                                             absl::string_view("bad"), encoded);
    EXPECT_EQ(status, Status(StatusCode::kInvalidArgument, "bad", kBytes));
  }
  EXPECT_EQ(StatusFromTrailers(absl::string_view("3"), absl::nullopt,
                               absl::string_view(""))
                .details(),
            "");
  EXPECT_EQ(StatusFromTrailers(absl::string_view("3"), absl::nullopt,
                               absl::string_view("aGVsbG8"))
                .details(),
            "hello");
}

TEST(StatusFromTrailersTest, InvalidDetailsAreDroppedStatusKept) {
  const std::string kInvalid[] = {
      "!!!!",     "AAEC/w=", "AAEC/w===", "A",     "AA=A",
      "AAEC w==", "AAEC-_8", "=AAA",      "AAE\n", std::string("AA\0A", 4),
  };
  for (const std::string& details : kInvalid) {
    SCOPED_TRACE(Escaped(details));
    const Status status = StatusFromTrailers(
        absl::string_view("9"), absl::string_view("precondition"), details);
    EXPECT_EQ(status, Status(StatusCode::kFailedPrecondition, "precondition"));
  }
}

TEST(StatusFromTrailersTest, OkIgnoresMessageAndDetails) {
  const Status status = StatusFromTrailers(absl::string_view("0"),
                                           absl::string_view("all%20good"),
                                           absl::string_view("AAEC"));
  EXPECT_EQ(status, Status::Ok());
  EXPECT_EQ(status.message(), "");
  EXPECT_EQ(status.details(), "");
}

TEST(StatusFromRstStreamTest, Table) {
  const struct {
    uint32_t error_code;
    std::string name;
    StatusCode code;
    StatusCode code_after_deadline;
  } kCases[] = {
      {0x0, "NO_ERROR", StatusCode::kInternal, StatusCode::kInternal},
      {0x1, "PROTOCOL_ERROR", StatusCode::kInternal, StatusCode::kInternal},
      {0x2, "INTERNAL_ERROR", StatusCode::kInternal, StatusCode::kInternal},
      {0x3, "FLOW_CONTROL_ERROR", StatusCode::kInternal, StatusCode::kInternal},
      {0x4, "SETTINGS_TIMEOUT", StatusCode::kInternal, StatusCode::kInternal},
      {0x5, "STREAM_CLOSED", StatusCode::kInternal, StatusCode::kInternal},
      {0x6, "FRAME_SIZE_ERROR", StatusCode::kInternal, StatusCode::kInternal},
      {0x7, "REFUSED_STREAM", StatusCode::kUnavailable,
       StatusCode::kUnavailable},
      {0x8, "CANCEL", StatusCode::kCancelled, StatusCode::kDeadlineExceeded},
      {0x9, "COMPRESSION_ERROR", StatusCode::kInternal, StatusCode::kInternal},
      {0xa, "CONNECT_ERROR", StatusCode::kInternal, StatusCode::kInternal},
      {0xb, "ENHANCE_YOUR_CALM", StatusCode::kResourceExhausted,
       StatusCode::kResourceExhausted},
      {0xc, "INADEQUATE_SECURITY", StatusCode::kPermissionDenied,
       StatusCode::kPermissionDenied},
      {0xd, "HTTP_1_1_REQUIRED", StatusCode::kInternal, StatusCode::kInternal},
      {0xe, "unknown error code", StatusCode::kInternal, StatusCode::kInternal},
      {0xff, "unknown error code", StatusCode::kInternal,
       StatusCode::kInternal},
      {0x80000008, "unknown error code", StatusCode::kInternal,
       StatusCode::kInternal},
      {0xffffffff, "unknown error code", StatusCode::kInternal,
       StatusCode::kInternal},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.error_code);
    const std::string message = absl::StrCat("stream reset by peer with ",
                                             c.name, " (", c.error_code, ")");
    EXPECT_EQ(StatusFromRstStream(c.error_code, false),
              Status(c.code, message));
    EXPECT_EQ(StatusFromRstStream(c.error_code, true),
              Status(c.code_after_deadline, message));
  }
}

TEST(StatusFromRstStreamTest, ExampleMessages) {
  EXPECT_EQ(StatusFromRstStream(7, false).message(),
            "stream reset by peer with REFUSED_STREAM (7)");
  EXPECT_EQ(StatusFromRstStream(11, false).message(),
            "stream reset by peer with ENHANCE_YOUR_CALM (11)");
  EXPECT_THAT(StatusFromRstStream(8, true).ToString(),
              HasSubstr("DEADLINE_EXCEEDED: stream reset by peer with CANCEL"));
  EXPECT_THAT(StatusFromRstStream(8, false).ToString(),
              Not(HasSubstr("DEADLINE")));
}

}  // namespace
}  // namespace h2rpc::transport
