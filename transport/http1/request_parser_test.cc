#include "transport/http1/request_parser.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::transport::http1 {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// Records what the parser reports, copying the views.
class Recorder : public RequestParser::Handler {
 public:
  struct Request {
    std::string method;
    std::string target;
    int version_minor = 0;
    std::vector<std::pair<std::string, std::string>> fields;
    bool has_body = false;
    std::string body;
    bool complete = false;
  };

  void OnRequestHead(const RequestHead& head) override {
    Request request;
    request.method = std::string(head.method);
    request.target = std::string(head.target);
    request.version_minor = head.version_minor;
    for (const HeaderField& field : head.fields) {
      request.fields.emplace_back(std::string(field.name),
                                  std::string(field.value));
    }
    request.has_body = head.has_body;
    requests.push_back(std::move(request));
  }
  void OnRequestBody(absl::string_view bytes) override {
    requests.back().body.append(bytes.data(), bytes.size());
  }
  void OnRequestComplete() override { requests.back().complete = true; }

  std::vector<Request> requests;
};

class RequestParserTest : public ::testing::Test {
 protected:
  // Parses `input` to its end, resuming after each request.
  void ParseAll(absl::string_view input) {
    while (!input.empty() && !parser_.failed()) {
      const size_t parsed = parser_.Parse(input);
      input.remove_prefix(parsed);
      if (!parser_.in_request()) parser_.Resume();
      if (parsed == 0) break;
    }
  }

  Http1Options options_;
  Recorder recorder_;
  RequestParser parser_{&recorder_, options_};
};

TEST_F(RequestParserTest, ReadsAHeadWithLowercasedNamesAndABody) {
  ParseAll(
      "POST /pkg.Service/Method HTTP/1.1\r\nHost: example.com\r\n"
      "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_EQ(recorder_.requests.size(), 1u);
  const Recorder::Request& request = recorder_.requests[0];
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.target, "/pkg.Service/Method");
  EXPECT_EQ(request.version_minor, 1);
  EXPECT_THAT(request.fields,
              ElementsAre(Pair("host", "example.com"),
                          Pair("content-type", "application/json"),
                          Pair("content-length", "2")));
  EXPECT_TRUE(request.has_body);
  EXPECT_EQ(request.body, "{}");
  EXPECT_TRUE(request.complete);
  EXPECT_TRUE(parser_.keep_alive());
}

TEST_F(RequestParserTest, DecodesAChunkedBody) {
  ParseAll(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  ASSERT_EQ(recorder_.requests.size(), 1u);
  EXPECT_EQ(recorder_.requests[0].body, "abcde");
  EXPECT_TRUE(recorder_.requests[0].complete);
}

TEST_F(RequestParserTest, StopsAfterEachPipelinedRequest) {
  const std::string two =
      "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n";
  const size_t first = parser_.Parse(two);
  EXPECT_EQ(first, two.size() / 2);
  ASSERT_EQ(recorder_.requests.size(), 1u);
  EXPECT_FALSE(recorder_.requests[0].has_body);
  parser_.Resume();
  EXPECT_EQ(parser_.Parse(absl::string_view(two).substr(first)), first);
  ASSERT_EQ(recorder_.requests.size(), 2u);
  EXPECT_EQ(recorder_.requests[1].target, "/b");
}

TEST_F(RequestParserTest, SplitInputGivesTheSameRequest) {
  const std::string input =
      "POST /x HTTP/1.1\r\nHost: h\r\nX-Long-Name: some value\r\n"
      "Content-Length: 5\r\n\r\nhello";
  for (char c : input) ParseAll(absl::string_view(&c, 1));
  ASSERT_EQ(recorder_.requests.size(), 1u);
  EXPECT_THAT(recorder_.requests[0].fields,
              ElementsAre(Pair("host", "h"), Pair("x-long-name", "some value"),
                          Pair("content-length", "5")));
  EXPECT_EQ(recorder_.requests[0].body, "hello");
}

TEST_F(RequestParserTest, ConnectionCloseAndHttp10EndTheConnection) {
  ParseAll("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_FALSE(parser_.keep_alive());
  Recorder recorder;
  RequestParser http10(&recorder, options_);
  http10.Parse("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(recorder.requests.size(), 1u);
  EXPECT_EQ(recorder.requests[0].version_minor, 0);
  EXPECT_FALSE(http10.keep_alive());
}

TEST_F(RequestParserTest, AnUpgradeRequestIsServedAsHttp11) {
  ParseAll(
      "POST / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
      "Upgrade: h2c\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\n"
      "Host: h\r\n\r\n");
  ASSERT_EQ(recorder_.requests.size(), 2u);
  EXPECT_EQ(recorder_.requests[0].body, "ok");
  EXPECT_TRUE(recorder_.requests[1].complete);
}

TEST_F(RequestParserTest, ATargetPastTheLimitIs414) {
  options_.max_target_bytes = 16;
  RequestParser parser(&recorder_, options_);
  parser.Parse("GET /0123456789abcdef HTTP/1.1\r\n\r\n");
  EXPECT_EQ(parser.error_status(), 414);
}

TEST_F(RequestParserTest, AHeaderSectionPastTheLimitIs431) {
  options_.max_header_bytes = 100;
  RequestParser parser(&recorder_, options_);
  parser.Parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: " + std::string(80, 'a') +
               "\r\n\r\n");
  EXPECT_EQ(parser.error_status(), 431);
  EXPECT_TRUE(recorder_.requests.empty());
}

TEST_F(RequestParserTest, AmbiguousOrMalformedRequestsAre400) {
  for (const char* input : {
           // Request smuggling: both framings.
           "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
           "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
           // chunked is not the last coding.
           "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip"
           "\r\n\r\n",
           "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n",
           "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
           "zz\r\n",
       }) {
    Recorder recorder;
    RequestParser parser(&recorder, options_);
    parser.Parse(input);
    EXPECT_EQ(parser.error_status(), 400) << input;
    EXPECT_FALSE(parser.error_message().empty());
  }
}

TEST_F(RequestParserTest, OtherHttpVersionsAre505) {
  parser_.Parse("GET / HTTP/2.0\r\nHost: h\r\n\r\n");
  EXPECT_EQ(parser_.error_status(), 505);
}

TEST_F(RequestParserTest, InRequestCoversFirstByteToEnd) {
  EXPECT_FALSE(parser_.in_request());
  parser_.Parse("GE");
  EXPECT_TRUE(parser_.in_request());
  EXPECT_FALSE(parser_.head_complete());
  parser_.Parse("T / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nab");
  EXPECT_TRUE(parser_.head_complete());
  parser_.Parse("cd");
  EXPECT_FALSE(parser_.in_request());
}

}  // namespace
}  // namespace h2rpc::transport::http1
