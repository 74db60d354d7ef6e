#include "transport/core/http_message_check.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "transport/core/testing/http_message_oracle.h"

namespace h2rpc::transport {
namespace {

using testing::CheckVerdict;
using testing::Describe;
using testing::HttpMessage;
using testing::HttpMessageOutcome;
using testing::Nghttp2Verdict;
using Fields = std::vector<std::pair<std::string, std::string>>;
using Role = HttpMessageCheck::Role;

const Fields kRequest = {{":method", "POST"},
                         {":scheme", "http"},
                         {":path", "/pkg.Service/Method"},
                         {":authority", "localhost:50051"},
                         {"te", "trailers"},
                         {"content-type", "application/grpc"}};
const Fields kResponse = {{":status", "200"},
                          {"content-type", "application/grpc"}};

Fields With(Fields fields, Fields more) {
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

// One header block, then `data` bytes, the stream ended.
HttpMessage Message(Role role, Fields fields, size_t data = 5) {
  HttpMessage message;
  message.role = role;
  message.blocks.push_back({std::move(fields), data, true});
  return message;
}

// h2rpc's verdict, checked against nghttp2's on the way.
HttpMessageOutcome Verdict(const HttpMessage& message) {
  const HttpMessageOutcome ours = CheckVerdict(message);
  const HttpMessageOutcome theirs = Nghttp2Verdict(message);
  EXPECT_EQ(ours, theirs) << Describe(message)
                          << "\nours: malformed=" << ours.malformed << " ("
                          << ours.error
                          << ")\nnghttp2: malformed=" << theirs.malformed;
  return ours;
}

TEST(HttpMessageCheckTest, GrpcRequestsAndResponsesKeepEveryField) {
  for (const HttpMessage& message :
       {Message(Role::kRequest, kRequest), Message(Role::kResponse, kResponse),
        Message(Role::kRequest, With(kRequest, {{"x-empty", ""},
                                                {"x-tab", "a\tb"},
                                                {"x-high", "\xC3\xA9"}}))}) {
    const HttpMessageOutcome outcome = Verdict(message);
    EXPECT_FALSE(outcome.malformed) << outcome.error;
    ASSERT_EQ(outcome.kept.size(), 1u);
    EXPECT_EQ(outcome.kept[0], message.blocks[0].fields);
  }
}

TEST(HttpMessageCheckTest, MalformedRequests) {
  const struct {
    Fields fields;
    const char* error;
  } kCases[] = {
      {With(kRequest, {{"X-Upper", "v"}}), "uppercase header field name"},
      {With(kRequest, {{":Path", "/a"}}), "invalid pseudo-header name"},
      {With(kRequest, {{"connection", "close"}}),
       "connection-specific header field"},
      {With(kRequest, {{"transfer-encoding", "chunked"}}),
       "connection-specific header field"},
      {With(kRequest, {{"upgrade", "h2c"}}),
       "connection-specific header field"},
      {With({{"te", "gzip"}}, kRequest), "te other than \"trailers\""},
      {With(kRequest, {{":path", "/b"}}),
       "pseudo-header after a regular field"},
      {{{":method", "POST"}, {":method", "POST"}}, ":method repeated or empty"},
      {{{":method", "POST"}, {":scheme", "http"}, {":authority", "h"}},
       "request without :method, :scheme, :path, or :authority and host"},
      {{{":method", "POST"}, {":scheme", "http"}, {":path", "/a"}},
       "request without :method, :scheme, :path, or :authority and host"},
      {{{":method", "POST"},
        {":scheme", "http"},
        {":path", "a"},
        {":authority", "h"}},
       ":path neither absolute nor \"*\" for OPTIONS"},
      {{{":method", "PO ST"},
        {":scheme", "http"},
        {":path", "/a"},
        {":authority", "h"}},
       "invalid pseudo-header value"},
      {{{":method", "POST"},
        {":scheme", "http"},
        {":path", "/a"},
        {":authority", "h/"}},
       "invalid pseudo-header value"},
      {With(kRequest, {{":foo", "1"}}), "pseudo-header after a regular field"},
      {{{":foo", "1"}}, "unknown pseudo-header"},
      {{{":protocol", "websocket"}}, ":protocol without extended CONNECT"},
      {With(kRequest, {{"content-length", "x"}}),
       "content-length is not a number"},
      {With(kRequest, {{"content-length", "4"}}), "DATA beyond content-length"},
      {With(kRequest, {{"host", ""}}), "host repeated or empty"},
  };
  for (const auto& c : kCases) {
    const HttpMessageOutcome outcome =
        Verdict(Message(Role::kRequest, c.fields));
    EXPECT_TRUE(outcome.malformed) << c.error;
    EXPECT_EQ(outcome.error, c.error);
  }
}

TEST(HttpMessageCheckTest, InvalidRegularFieldsAreMalformed) {
  const struct {
    Fields field;
    const char* error;
  } kCases[] = {
      {{{"x-ctl", "a\x01z"}}, "invalid header field value"},
      {{{"x-lead", " a"}}, "invalid header field value"},
      {{{"x-trail", "a\t"}}, "invalid header field value"},
      {{{"x-del", "\x7F"}}, "invalid header field value"},
      {{{"x y", "v"}}, "invalid header field name"},
      {{{"", "v"}}, "invalid header field name"},
  };
  for (const auto& c : kCases) {
    for (Role role : {Role::kRequest, Role::kResponse}) {
      const HttpMessageOutcome outcome = Verdict(Message(
          role, With(role == Role::kRequest ? kRequest : kResponse, c.field)));
      EXPECT_EQ(outcome.error, c.error) << c.field[0].first;
    }
  }
}

TEST(HttpMessageCheckTest, TrailersMustEndTheStreamAndCarryNoPseudoHeaders) {
  HttpMessage message = Message(Role::kResponse, kResponse);
  message.blocks[0].end_stream = false;
  message.blocks.push_back({{{"grpc-status", "0"}}, 0, true});
  EXPECT_FALSE(Verdict(message).malformed);

  message.blocks[1].end_stream = false;
  EXPECT_EQ(Verdict(message).error, "trailers without END_STREAM");

  message.blocks[1] = {{{":status", "200"}}, 0, true};
  EXPECT_EQ(Verdict(message).error, "pseudo-header in trailers");
}

TEST(HttpMessageCheckTest, ResponseStatusAndContentLength) {
  EXPECT_EQ(Verdict(Message(Role::kResponse, {{":status", "2000"}})).error,
            ":status not three digits");
  EXPECT_EQ(Verdict(Message(Role::kResponse, {{":status", "101"}})).error,
            ":status 101 in HTTP/2");
  EXPECT_EQ(Verdict(Message(Role::kResponse, {{"x-a", "1"}})).error,
            "response without :status");
  // A 204's content-length: 0 is dropped; no body may follow.
  const HttpMessageOutcome no_content = Verdict(
      Message(Role::kResponse, {{":status", "204"}, {"content-length", "0"}},
              /*data=*/0));
  EXPECT_FALSE(no_content.malformed);
  EXPECT_EQ(no_content.kept[0], (Fields{{":status", "204"}}));
  EXPECT_EQ(Verdict(Message(Role::kResponse, {{":status", "204"}})).error,
            "DATA beyond content-length");
  EXPECT_EQ(Verdict(Message(Role::kResponse,
                            With(kResponse, {{"content-length", "9"}})))
                .error,
            "DATA different from content-length");
}

TEST(HttpMessageCheckTest, InterimResponsesPrecedeTheFinalOne) {
  HttpMessage message;
  message.role = Role::kResponse;
  message.blocks.push_back({{{":status", "100"}}, 0, false});
  message.blocks.push_back({kResponse, 5, true});
  EXPECT_FALSE(Verdict(message).malformed);

  message.blocks[0].data = 1;
  EXPECT_EQ(Verdict(message).error, "DATA before the final response");

  message.blocks.resize(1);
  message.blocks[0] = {{{":status", "103"}}, 0, true};
  EXPECT_EQ(Verdict(message).error,
            "the stream ended after an interim response");
}

TEST(HttpMessageCheckTest, CheckingAllocatesNothing) {
  HttpMessageCheck check(Role::kRequest);
  h2rpc::testing::AllocationCounter counter;
  for (int i = 0; i < 3; ++i) {
    check.Reset();
    check.BeginHeaders();
    for (const auto& [name, value] : kRequest) {
      ASSERT_EQ(check.OnField(name, value), HttpMessageCheck::Verdict::kKeep);
    }
    ASSERT_TRUE(check.EndHeaders(false));
    ASSERT_TRUE(check.OnData(100));
    ASSERT_TRUE(check.OnEndStream());
  }
  EXPECT_EQ(counter.allocations(), 0);
}

// Random messages built from fields near HTTP's rules, each fed to nghttp2
// with its HTTP messaging checks on and to HttpMessageCheck: the same
// verdict and, when valid, the same fields kept.
TEST(HttpMessageCheckTest, SameVerdictsAsNghttp2OnRandomMessages) {
  std::mt19937 random(20261207);
  auto pick = [&random](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0,
                                                      from.size() - 1)(random)];
  };
  auto chance = [&random](double p) {
    return std::bernoulli_distribution(p)(random);
  };
  // Mostly what a peer sends, sometimes what it must not.
  auto either = [&](const std::vector<std::string>& usual,
                    const std::vector<std::string>& odd) {
    return chance(0.08) ? pick(odd) : pick(usual);
  };
  const std::vector<std::string> kNames = {
      "content-type", "te",       "x-a", "user-agent",
      "grpc-timeout", "priority", "x_u", "content-length",
      "grpc-status",  "x-bin"};
  const std::vector<std::string> kOddNames = {"X-Upper",
                                              "x y",
                                              "",
                                              ":",
                                              ":foo",
                                              ":protocol",
                                              "host",
                                              "connection",
                                              "keep-alive",
                                              "upgrade",
                                              "transfer-encoding",
                                              "proxy-connection",
                                              "a:b",
                                              "\x80",
                                              ":status",
                                              ":path",
                                              ":method",
                                              ":scheme",
                                              ":authority"};
  const std::vector<std::string> kValues = {
      "trailers",         "0",    "1", "5",   "abc",
      "application/grpc", "a\tb", "",  "u=1", "\xC3\xA9"};
  const std::vector<std::string> kOddValues = {
      "Trailers", "gzip", " lead", "trail ", "\t",
      "a\x01z",   "\x7F", "\xFF",  "-1",     "99999999999999999999",
      "a b"};
  const std::vector<std::string> kMethods = {"POST", "GET", "OPTIONS"};
  const std::vector<std::string> kOddMethods = {"CONNECT", "", "P T"};
  const std::vector<std::string> kSchemes = {"http", "https", "HTTP"};
  const std::vector<std::string> kOddSchemes = {"ftp", "", "1x"};
  const std::vector<std::string> kPaths = {"/a.B/C", "/"};
  const std::vector<std::string> kOddPaths = {"*", "", "a", "/ b"};
  const std::vector<std::string> kAuthorities = {"h:1", "[::1]:8080"};
  const std::vector<std::string> kOddAuthorities = {"", "a b", "h/"};
  const std::vector<std::string> kStatuses = {"200", "404", "503"};
  const std::vector<std::string> kOddStatuses = {"100", "103", "204", "304",
                                                 "101", "20",  "abc"};
  int malformed = 0;
  constexpr int kMessages = 20000;
  for (int i = 0; i < kMessages; ++i) {
    HttpMessage message;
    message.role = chance(0.5) ? Role::kRequest : Role::kResponse;
    const int blocks = std::uniform_int_distribution<int>(1, 3)(random);
    for (int b = 0; b < blocks; ++b) {
      HttpMessage::Block block;
      if (b == 0 || (message.role == Role::kResponse && chance(0.3))) {
        if (message.role == Role::kRequest) {
          if (chance(0.97)) {
            block.fields.push_back({":method", either(kMethods, kOddMethods)});
          }
          if (chance(0.97)) {
            block.fields.push_back({":scheme", either(kSchemes, kOddSchemes)});
          }
          if (chance(0.97)) {
            block.fields.push_back({":path", either(kPaths, kOddPaths)});
          }
          if (chance(0.95)) {
            block.fields.push_back(
                {":authority", either(kAuthorities, kOddAuthorities)});
          }
        } else if (chance(0.97)) {
          block.fields.push_back({":status", either(kStatuses, kOddStatuses)});
        }
        if (chance(0.03) && !block.fields.empty()) {
          block.fields.push_back(block.fields[0]);
        }
        if (chance(0.2))
          std::shuffle(block.fields.begin(), block.fields.end(), random);
      }
      const int extra = std::uniform_int_distribution<int>(0, 4)(random);
      for (int f = 0; f < extra; ++f) {
        block.fields.push_back(
            {either(kNames, kOddNames), either(kValues, kOddValues)});
      }
      if (chance(0.3))
        block.data = std::uniform_int_distribution<int>(1, 9)(random);
      block.end_stream = b == blocks - 1 && chance(0.8);
      message.blocks.push_back(std::move(block));
    }
    const HttpMessageOutcome ours = CheckVerdict(message);
    const HttpMessageOutcome theirs = Nghttp2Verdict(message);
    ASSERT_EQ(ours, theirs)
        << Describe(message) << "\nours: malformed=" << ours.malformed << " ("
        << ours.error << ")\nnghttp2: malformed=" << theirs.malformed;
    malformed += ours.malformed ? 1 : 0;
  }
  // Both kinds of verdict were exercised, many times.
  EXPECT_GT(malformed, kMessages / 10);
  EXPECT_LT(malformed, kMessages * 9 / 10);
}

}  // namespace
}  // namespace h2rpc::transport
