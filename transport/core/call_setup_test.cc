#include "transport/core/call_setup.h"

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
using ::h2rpc::testing::ExchangeRequestHeaders;
using ::h2rpc::testing::HeaderExchange;
using ::testing::HasSubstr;

const io::MonotonicTime kNow =
    io::MonotonicTime::FromSinceEpoch(absl::Hours(1000));

std::vector<std::pair<std::string, std::string>> Fields(
    const HeaderList& list) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const nghttp2_nv& nv : list.fields()) {
    out.emplace_back(
        std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
        std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Fields(
    const std::vector<DecodedField>& decoded) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const DecodedField& f : decoded) out.emplace_back(f.name, f.value);
  return out;
}

Metadata MakeMetadata(int entries) {
  Metadata md;
  for (int i = 0; i < entries; ++i) {
    md.Add(absl::StrCat("x-key-", i), absl::StrCat("value-", i));
  }
  return md;
}

// The optional parts of a call, one bit each.
enum OptionalField {
  kDeadline = 1 << 0,
  kSendEncoding = 1 << 1,
  kAcceptEncodings = 1 << 2,
  kUserAgent = 1 << 3,
  kPreviousAttempts = 1 << 4,
  kTraceContext = 1 << 5,
  kAllOptionalFields = (1 << 6) - 1,
};

constexpr char kTraceparent[] =
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
constexpr char kTracestate[] = "congo=t61rcWkgMzE";

CallDescription MakeCall(int optional_fields, const Metadata* metadata) {
  CallDescription call;
  call.method_path = "/grpc.testing.TestService/UnaryCall";
  call.authority = "localhost:50051";
  if (optional_fields & kDeadline) call.deadline = kNow + absl::Seconds(5);
  if (optional_fields & kSendEncoding) call.send_encoding = "gzip";
  if (optional_fields & kAcceptEncodings)
    call.accept_encodings = "gzip,deflate";
  if (optional_fields & kUserAgent) call.user_agent = "h2rpc-cpp/0.1";
  if (optional_fields & kPreviousAttempts) call.previous_attempts = 2;
  if (optional_fields & kTraceContext) {
    call.traceparent = kTraceparent;
    call.tracestate = kTracestate;
  }
  call.metadata = metadata;
  return call;
}

// The header list PROTOCOL-HTTP2 prescribes for MakeCall(fields, md).
std::vector<std::pair<std::string, std::string>> ExpectedFields(
    int optional_fields, const Metadata& md) {
  std::vector<std::pair<std::string, std::string>> out = {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", "/grpc.testing.TestService/UnaryCall"},
      {":authority", "localhost:50051"},
      {"te", "trailers"}};
  if (optional_fields & kDeadline) out.push_back({"grpc-timeout", "5000000u"});
  out.push_back({"content-type", "application/grpc"});
  if (optional_fields & kSendEncoding) out.push_back({"grpc-encoding", "gzip"});
  if (optional_fields & kAcceptEncodings) {
    out.push_back({"grpc-accept-encoding", "gzip,deflate"});
  }
  if (optional_fields & kUserAgent)
    out.push_back({"user-agent", "h2rpc-cpp/0.1"});
  if (optional_fields & kPreviousAttempts) {
    out.push_back({"grpc-previous-rpc-attempts", "2"});
  }
  if (optional_fields & kTraceContext) {
    out.push_back({"traceparent", kTraceparent});
    out.push_back({"tracestate", kTracestate});
  }
  for (Metadata::Entry e : md) {
    out.push_back({std::string(e.key), std::string(e.value)});
  }
  return out;
}

// The heart of seed 002: for every combination of optional fields and
// several metadata sizes, the count is exact and the vector is allocated once.
TEST(CallSetupTest, EveryCombinationAllocatesTheFieldVectorExactlyOnce) {
  for (int entries : {0, 1, 10, 100}) {
    const Metadata md = MakeMetadata(entries);
    for (int optional = 0; optional <= kAllOptionalFields; ++optional) {
      SCOPED_TRACE(absl::StrCat("metadata=", entries, " optional=", optional));
      const CallDescription call = MakeCall(optional, &md);
      HeaderList headers;
      AllocationCounter counter;
      ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
      EXPECT_EQ(counter.allocations(), 1);
      EXPECT_EQ(headers.size(), CountRequestHeaderFields(call));
      EXPECT_EQ(headers.capacity(), headers.size());
      EXPECT_EQ(Fields(headers), ExpectedFields(optional, md));
    }
  }
}

TEST(CallSetupTest, RealNghttp2ServerAcceptsEveryCombination) {
  const Metadata md = MakeMetadata(10);
  for (int optional = 0; optional <= kAllOptionalFields; ++optional) {
    SCOPED_TRACE(absl::StrCat("optional=", optional));
    HeaderList headers;
    ASSERT_TRUE(
        BuildRequestHeaders(MakeCall(optional, &md), kNow, &headers).ok());
    const HeaderExchange exchange = ExchangeRequestHeaders(headers.fields());
    ASSERT_TRUE(exchange.accepted) << exchange.error;
    EXPECT_EQ(Fields(exchange.headers), ExpectedFields(optional, md));
  }
}

TEST(CallSetupTest, OnlyGrpcTimeoutAndTraceparentAreNeverIndexed) {
  const Metadata md = MakeMetadata(2);
  HeaderList headers;
  ASSERT_TRUE(
      BuildRequestHeaders(MakeCall(kAllOptionalFields, &md), kNow, &headers)
          .ok());
  for (const nghttp2_nv& nv : headers.fields()) {
    const std::string name(reinterpret_cast<char*>(nv.name), nv.namelen);
    EXPECT_TRUE(nv.flags & NGHTTP2_NV_FLAG_NO_COPY_NAME) << name;
    EXPECT_TRUE(nv.flags & NGHTTP2_NV_FLAG_NO_COPY_VALUE) << name;
    EXPECT_EQ((nv.flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0,
              name == "grpc-timeout" || name == "traceparent")
        << name;
  }
  const HeaderExchange exchange = ExchangeRequestHeaders(headers.fields());
  ASSERT_TRUE(exchange.accepted) << exchange.error;
  for (const DecodedField& field : exchange.headers) {
    EXPECT_EQ(field.never_indexed,
              field.name == "grpc-timeout" || field.name == "traceparent")
        << field.name;
  }
}

TEST(CallSetupTest, ReusedHeaderListDoesNotAllocate) {
  const Metadata md = MakeMetadata(10);
  HeaderList headers;
  ASSERT_TRUE(
      BuildRequestHeaders(MakeCall(kAllOptionalFields, &md), kNow, &headers)
          .ok());
  for (int optional = 0; optional <= kAllOptionalFields; ++optional) {
    AllocationCounter counter;
    ASSERT_TRUE(
        BuildRequestHeaders(MakeCall(optional, &md), kNow, &headers).ok());
    EXPECT_EQ(counter.allocations(), 0) << optional;
    EXPECT_EQ(Fields(headers), ExpectedFields(optional, md));
  }
}

TEST(CallSetupTest, TimeoutIsTheRemainingTimeRoundedUp) {
  CallDescription call = MakeCall(0, nullptr);
  HeaderList headers;
  call.deadline = kNow + absl::Nanoseconds(1500);
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
  EXPECT_EQ(Fields(headers)[5],
            std::make_pair(std::string("grpc-timeout"), std::string("1500n")));
  call.deadline = kNow + absl::Hours(1000000);  // 60000000M is finer
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
  EXPECT_EQ(Fields(headers)[5].second, "60000000M");
  call.deadline = kNow + absl::Hours(2000000);
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
  EXPECT_EQ(Fields(headers)[5].second, "2000000H");
}

TEST(CallSetupTest, ConnectUnaryCallsHaveConnectsFields) {
  const Metadata md = MakeMetadata(2);
  CallDescription call = MakeCall(kAllOptionalFields, &md);
  call.connect_unary = true;
  HeaderList headers;
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
  EXPECT_EQ(Fields(headers),
            (std::vector<std::pair<std::string, std::string>>{
                {":method", "POST"},
                {":scheme", "http"},
                {":path", "/grpc.testing.TestService/UnaryCall"},
                {":authority", "localhost:50051"},
                {"connect-protocol-version", "1"},
                {"connect-timeout-ms", "5000"},
                {"content-type", "application/proto"},
                {"content-encoding", "gzip"},
                {"accept-encoding", "gzip,deflate"},
                {"user-agent", "h2rpc-cpp/0.1"},
                {"traceparent", kTraceparent},
                {"tracestate", kTracestate},
                {"x-key-0", "value-0"},
                {"x-key-1", "value-1"}}));
  EXPECT_EQ(headers.size(), headers.capacity());

  // Milliseconds rounded up; a deadline past 32 bits of them sends none.
  call.deadline = kNow + absl::Microseconds(1500);
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
  EXPECT_EQ(
      Fields(headers)[5],
      std::make_pair(std::string("connect-timeout-ms"), std::string("2")));
  call.deadline = kNow + absl::Hours(24 * 50);
  HeaderList far;
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &far).ok());
  EXPECT_EQ(Fields(far)[5].first, "content-type");
  EXPECT_EQ(far.size(), far.capacity());

  // JSON messages.
  call.connect_json = true;
  HeaderList json;
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &json).ok());
  EXPECT_EQ(Fields(json)[5],
            std::make_pair(std::string("content-type"),
                           std::string("application/json")));
}

TEST(CallSetupTest, DeadlineAlreadyPassedFailsWithoutBuilding) {
  for (absl::Duration remaining :
       {absl::ZeroDuration(), -absl::Nanoseconds(1), -absl::Hours(1)}) {
    CallDescription call = MakeCall(kAllOptionalFields, nullptr);
    call.deadline = kNow + remaining;
    HeaderList headers;
    const Status status = BuildRequestHeaders(call, kNow, &headers);
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
    EXPECT_EQ(headers.size(), 0u);
  }
}

TEST(CallSetupTest, BinaryMetadataIsSentAsUnpaddedBase64) {
  Metadata md;
  md.Add("trace-bin", std::string("\x00\x01\xfe\xff", 4));
  md.Add("x-text", "plain");
  md.Add("empty-bin", "");
  CallDescription call = MakeCall(0, &md);
  HeaderList headers;
  AllocationCounter counter;
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
  // One for the fields; the 6 base64 bytes fit the scratch's inline buffer.
  EXPECT_EQ(counter.allocations(), 1);
  const auto fields = Fields(headers);
  ASSERT_EQ(fields.size(), 9u);
  EXPECT_EQ(fields[6],
            std::make_pair(std::string("trace-bin"), std::string("AAH+/w")));
  EXPECT_EQ(fields[7].second, "plain");
  EXPECT_EQ(fields[8], std::make_pair(std::string("empty-bin"), std::string()));
  const HeaderExchange exchange = ExchangeRequestHeaders(headers.fields());
  ASSERT_TRUE(exchange.accepted) << exchange.error;
  EXPECT_EQ(Fields(exchange.headers), fields);
}

TEST(CallSetupTest, LargeBinaryMetadataCostsOneMoreAllocation) {
  Metadata md;
  for (int i = 0; i < 10; ++i) md.Add("blob-bin", std::string(100, '\xab'));
  HeaderList headers;
  AllocationCounter counter;
  ASSERT_TRUE(
      BuildRequestHeaders(MakeCall(kAllOptionalFields, &md), kNow, &headers)
          .ok());
  EXPECT_EQ(counter.allocations(), 2);
  EXPECT_EQ(headers.capacity(), headers.size());
}

TEST(CallSetupTest, InvalidUserMetadataFailsBeforeAStreamOpens) {
  struct Case {
    std::string key;
    std::string value;
  };
  const std::vector<Case> cases = {
      {"Upper", "v"},
      {"sp ace", "v"},
      {"", "v"},
      {":path", "/evil"},
      {"grpc-timeout", "1S"},
      {"te", "gzip"},
      {"content-type", "x"},
      {"connection", "close"},
      {"x-ok", "bad\nvalue"},
      {"x-ok", std::string("nul\0", 4)},
  };
  for (const Case& c : cases) {
    Metadata md;
    md.Add("x-fine", "fine");
    md.Add(c.key, c.value);
    HeaderList headers;
    const Status status =
        BuildRequestHeaders(MakeCall(kAllOptionalFields, &md), kNow, &headers);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << c.key;
    EXPECT_THAT(status.message(), HasSubstr("'" + c.key + "'"));
    EXPECT_EQ(headers.size(), 0u);
  }
}

TEST(CallSetupTest, MissingAuthorityIsRefused) {
  CallDescription call = MakeCall(0, nullptr);
  call.authority = "";
  HeaderList headers;
  EXPECT_EQ(BuildRequestHeaders(call, kNow, &headers).code(),
            StatusCode::kInternal);
  EXPECT_EQ(headers.size(), 0u);
}

TEST(CallSetupTest, MalformedMethodPathIsRefused) {
  for (absl::string_view path : {"", "grpc.testing.TestService/UnaryCall"}) {
    CallDescription call = MakeCall(0, nullptr);
    call.method_path = path;
    HeaderList headers;
    const Status status = BuildRequestHeaders(call, kNow, &headers);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << path;
    EXPECT_THAT(status.message(), HasSubstr("method path"));
  }
}

TEST(CallSetupTest, IdentityEncodingIsNotSent) {
  CallDescription call = MakeCall(0, nullptr);
  call.send_encoding = "identity";
  EXPECT_EQ(CountRequestHeaderFields(call), 6u);
  HeaderList headers;
  ASSERT_TRUE(BuildRequestHeaders(call, kNow, &headers).ok());
  for (const auto& field : Fields(headers))
    EXPECT_NE(field.first, "grpc-encoding");
}

}  // namespace
}  // namespace h2rpc::transport
