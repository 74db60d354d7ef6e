// gRPC-Web (binary) over HTTP/2 on an h2rpc server with
// ServerOptions::web.grpc_web, driven by a raw HTTP/2 client that sends
// exactly what a gRPC-Web client sends (no te: trailers): the response's
// content-type, its messages, and its trailers as the body's last frame
// (flag 0x80) with no trailing HEADERS; an immediate error as one header
// block; gRPC calls on the same connection unaffected; a server without
// the option refusing gRPC-Web with HTTP 415; and CORS: preflights
// answered for allowed origins and refused for others, calls from other
// origins refused before their handler runs.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/util/raw_h2_client.h"
#include "test/util/server_allocations.h"
#include "test/util/stub_server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::ParseGrpcFrames;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::RemoveHeader;
using ::h2rpc::testing::ServerAllocationsPerCall;
using ::h2rpc::testing::SetHeader;
using ::h2rpc::testing::SplitFramedBody;
using ::h2rpc::testing::StubServer;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr char kEcho[] = "/web.Test/Echo";
constexpr char kCount[] = "/web.Test/Count";
constexpr char kRefuse[] = "/web.Test/Refuse";

// A response body split into its messages and its trailer lines.
struct WebBody {
  std::vector<std::string> messages;
  std::vector<std::string> trailer_lines;  // "name:value"
  bool ok = false;  // whole frames, exactly one trailers frame, last
};

WebBody ParseWebBody(const std::string& body) {
  WebBody out;
  std::string trailers;
  if (!SplitFramedBody(body, 0x80, &out.messages, &trailers)) return out;
  for (absl::string_view line :
       absl::StrSplit(trailers, "\r\n", absl::SkipEmpty())) {
    out.trailer_lines.emplace_back(line);
  }
  out.ok = absl::EndsWith(trailers, "\r\n");
  return out;
}

std::string Serialized(const std::string& body) {
  SimpleRequest request;
  request.mutable_payload()->set_body(body);
  return request.SerializeAsString();
}

std::string BodyOf(const std::string& serialized) {
  SimpleResponse response;
  return response.ParseFromString(serialized) ? response.payload().body()
                                              : "<unparsable>";
}

class GrpcWebTest : public ::testing::Test {
 protected:
  void Start(bool grpc_web, std::vector<std::string> cors_origins = {}) {
    ServerOptions options;
    options.web.grpc_web = grpc_web;
    options.web.cors_allowed_origins = std::move(cors_origins);
    options.web.cors_exposed_headers = {"x-app-status"};
    options.web.cors_max_age_seconds = 60;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kEcho,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse* response) {
              ++echoes_;
              context->AddInitialMetadata("x-initial", "1");
              context->AddTrailingMetadata("x-trailing", "2");
              *response->mutable_payload() = request.payload();
              return Status();
            })
        .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
            kCount,
            [](ServerContext* context, const SimpleRequest& request,
               ServerWriter<SimpleResponse>* writer) {
              SimpleResponse response;
              for (int i = 0; i < 3; ++i) {
                response.mutable_payload()->set_body(absl::StrCat(i));
                if (!writer->Write(response)) return Status();
              }
              context->AddTrailingMetadata("x-id-bin",
                                           std::string("\x01\x02", 2));
              return Status(StatusCode::kAborted, "stopped at 3%");
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kRefuse, [](ServerContext*, const SimpleRequest&, SimpleResponse*) {
              return Status(StatusCode::kNotFound, "nothing here");
            });
    ASSERT_TRUE(server_.Start().ok());
    std::string error;
    client_ = RawH2Client::Connect(server_.port(), &error);
    ASSERT_NE(client_, nullptr) << error;
  }

  // A gRPC-Web request as browsers' clients send it: no te.
  RawResponse CallWeb(const char* method, const std::string& body,
                      const char* content_type = "application/grpc-web+proto",
                      const char* origin = nullptr) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(method, server_.port());
    SetHeader(&request.headers, "content-type", content_type);
    RemoveHeader(&request.headers, "te");
    request.headers.emplace_back("x-grpc-web", "1");
    if (origin != nullptr) request.headers.emplace_back("origin", origin);
    request.body = GrpcFrame(Serialized(body));
    return client_->Call(request);
  }

  // A browser's CORS preflight for a gRPC-Web call of kEcho from `origin`.
  RawResponse Preflight(const char* origin) {
    RawRequest request;
    request.headers = {
        {":method", "OPTIONS"},
        {":scheme", "http"},
        {":path", kEcho},
        {":authority", "127.0.0.1"},
        {"origin", origin},
        {"access-control-request-method", "POST"},
        {"access-control-request-headers", "content-type,x-grpc-web"}};
    request.end_stream_on_headers = true;
    return client_->Call(request);
  }

  std::atomic<int> echoes_{0};
  StubServer server_;
  std::unique_ptr<RawH2Client> client_;
};

TEST_F(GrpcWebTest, UnaryTrailersEndTheBody) {
  Start(true);
  for (const char* content_type :
       {"application/grpc-web+proto", "application/grpc-web"}) {
    const RawResponse response = CallWeb(kEcho, "hello", content_type);
    ASSERT_TRUE(response.end_stream_received) << response.DebugString();
    // One header block: the trailers are in the body, not in HEADERS.
    ASSERT_EQ(response.header_blocks.size(), 1u) << response.DebugString();
    EXPECT_EQ(response.Header(":status"), "200");
    EXPECT_EQ(response.Header("content-type"), "application/grpc-web+proto");
    EXPECT_EQ(response.Header("x-initial"), "1");
    const WebBody body = ParseWebBody(response.body);
    ASSERT_TRUE(body.ok) << response.DebugString();
    ASSERT_EQ(body.messages.size(), 1u);
    EXPECT_EQ(BodyOf(body.messages[0]), "hello");
    EXPECT_THAT(body.trailer_lines,
                ElementsAre("grpc-status:0", "x-trailing:2"));
  }
}

TEST_F(GrpcWebTest, StreamedMessagesThenAnErrorInTheTrailers) {
  Start(true);
  const RawResponse response = CallWeb(kCount, "");
  ASSERT_TRUE(response.end_stream_received) << response.DebugString();
  ASSERT_EQ(response.header_blocks.size(), 1u) << response.DebugString();
  const WebBody body = ParseWebBody(response.body);
  ASSERT_TRUE(body.ok) << response.DebugString();
  std::vector<std::string> counted;
  for (const std::string& message : body.messages) {
    counted.push_back(BodyOf(message));
  }
  EXPECT_THAT(counted, ElementsAre("0", "1", "2"));
  EXPECT_THAT(
      body.trailer_lines,
      UnorderedElementsAre("grpc-status:10", "grpc-message:stopped at 3%25",
                           "x-id-bin:AQI"));
}

// Nothing sent before the error: one header block ends the stream, the
// status in it (PROTOCOL-WEB's Trailers-Only).
TEST_F(GrpcWebTest, AnImmediateErrorIsOneHeaderBlock) {
  Start(true);
  const RawResponse response = CallWeb(kRefuse, "");
  ASSERT_TRUE(response.IsTrailersOnly()) << response.DebugString();
  EXPECT_EQ(response.Header("content-type"), "application/grpc-web+proto");
  EXPECT_EQ(response.Header("grpc-status"), "5");
  EXPECT_EQ(response.Header("grpc-message"), "nothing here");

  // An unknown method too.
  const RawResponse unknown = CallWeb("/web.Test/Nope", "");
  ASSERT_TRUE(unknown.IsTrailersOnly()) << unknown.DebugString();
  EXPECT_EQ(unknown.Header("grpc-status"), "12");
}

std::string Base64(absl::string_view bytes) {
  return absl::Base64Escape(bytes);
}

// The text form: the request in two padded base64 runs, one byte per DATA
// frame; the response, base64 too, decodes to the binary form's body.
TEST_F(GrpcWebTest, TextFormIsBase64BothWays) {
  Start(true);
  for (const char* content_type :
       {"application/grpc-web-text", "application/grpc-web-text+proto"}) {
    const std::string framed = GrpcFrame(Serialized("hello"));
    RawRequest request;
    request.headers = GrpcRequestHeaders(kCount, server_.port());
    SetHeader(&request.headers, "content-type", content_type);
    RemoveHeader(&request.headers, "te");
    request.body = Base64(framed.substr(0, 4)) + Base64(framed.substr(4));
    request.max_data_frame_size = 1;
    const RawResponse response = client_->Call(request);
    ASSERT_TRUE(response.end_stream_received) << response.DebugString();
    ASSERT_EQ(response.header_blocks.size(), 1u) << response.DebugString();
    EXPECT_EQ(response.Header("content-type"),
              "application/grpc-web-text+proto");
    // Padded runs one after another: decoded a 4-character group at a time.
    ASSERT_EQ(response.body.size() % 4, 0u) << response.body;
    std::string decoded;
    for (size_t at = 0; at < response.body.size(); at += 4) {
      std::string group;
      ASSERT_TRUE(absl::Base64Unescape(response.body.substr(at, 4), &group))
          << response.body;
      decoded += group;
    }
    const WebBody body = ParseWebBody(decoded);
    ASSERT_TRUE(body.ok) << response.DebugString();
    ASSERT_EQ(body.messages.size(), 3u);
    EXPECT_EQ(BodyOf(body.messages[2]), "2");
    EXPECT_THAT(
        body.trailer_lines,
        UnorderedElementsAre("grpc-status:10", "grpc-message:stopped at 3%25",
                             "x-id-bin:AQI"));
  }
}

TEST_F(GrpcWebTest, TextThatIsNotBase64IsRefused) {
  Start(true);
  for (const std::string& body :
       {std::string("AAAA AAAA"), std::string("AA=A"),
        std::string("AAAAA")}) {  // the last ends inside a group
    RawRequest request;
    request.headers = GrpcRequestHeaders(kEcho, server_.port());
    SetHeader(&request.headers, "content-type", "application/grpc-web-text");
    RemoveHeader(&request.headers, "te");
    request.body = body;
    const RawResponse response = client_->Call(request);
    ASSERT_TRUE(response.end_stream_received) << response.DebugString();
    // Trailers-Only, or trailers in the (base64) body: INTERNAL either way.
    const absl::optional<std::string> status = response.Header("grpc-status");
    if (status.has_value()) {
      EXPECT_EQ(status, "13") << body << ": " << response.DebugString();
    } else {
      std::string decoded;
      ASSERT_TRUE(absl::Base64Unescape(response.body, &decoded)) << body;
      EXPECT_THAT(ParseWebBody(decoded).trailer_lines,
                  ::testing::Contains("grpc-status:13"))
          << body;
    }
  }
  EXPECT_EQ(echoes_.load(), 0);
}

TEST_F(GrpcWebTest, GrpcCallsOnTheSameConnectionAreUnchanged) {
  Start(true);
  RawRequest request;
  request.headers = GrpcRequestHeaders(kEcho, server_.port());
  request.body = GrpcFrame(Serialized("plain"));
  const RawResponse response = client_->Call(request);
  ASSERT_EQ(response.header_blocks.size(), 2u) << response.DebugString();
  EXPECT_EQ(response.Header("content-type"), "application/grpc");
  EXPECT_EQ(response.Trailer("grpc-status"), "0");
  EXPECT_EQ(response.Trailer("x-trailing"), "2");
  std::vector<std::string> messages;
  ASSERT_TRUE(ParseGrpcFrames(response.body, &messages));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(BodyOf(messages[0]), "plain");
}

constexpr char kApp[] = "https://app.example.com";

TEST_F(GrpcWebTest, CorsPreflightsAreAnsweredForAllowedOrigins) {
  Start(true, {kApp});
  const RawResponse allowed = Preflight(kApp);
  ASSERT_TRUE(allowed.IsTrailersOnly()) << allowed.DebugString();
  EXPECT_EQ(allowed.Header(":status"), "204");
  EXPECT_EQ(allowed.Header("access-control-allow-origin"), kApp);
  EXPECT_EQ(allowed.Header("access-control-allow-methods"), "POST");
  EXPECT_EQ(allowed.Header("access-control-allow-headers"),
            "content-type,x-grpc-web");
  EXPECT_EQ(allowed.Header("access-control-max-age"), "60");

  const RawResponse other = Preflight("https://evil.example.com");
  EXPECT_EQ(other.Header(":status"), "403") << other.DebugString();
  EXPECT_FALSE(other.Header("access-control-allow-origin").has_value());
}

TEST_F(GrpcWebTest, CallsCarryTheCorsFieldsOrAreRefused) {
  Start(true, {kApp});
  const RawResponse allowed =
      CallWeb(kEcho, "hi", "application/grpc-web+proto", kApp);
  EXPECT_EQ(allowed.Header(":status"), "200") << allowed.DebugString();
  EXPECT_EQ(allowed.Header("access-control-allow-origin"), kApp);
  EXPECT_EQ(allowed.Header("access-control-expose-headers"),
            "grpc-status, grpc-message, grpc-status-details-bin, "
            "connect-content-encoding, connect-accept-encoding, "
            "x-app-status");
  EXPECT_TRUE(ParseWebBody(allowed.body).ok) << allowed.DebugString();
  EXPECT_EQ(echoes_.load(), 1);
  // An immediate error too (the status is in the headers a page reads).
  const RawResponse refused =
      CallWeb(kRefuse, "", "application/grpc-web+proto", kApp);
  ASSERT_TRUE(refused.IsTrailersOnly()) << refused.DebugString();
  EXPECT_EQ(refused.Header("access-control-allow-origin"), kApp);
  EXPECT_EQ(refused.Header("grpc-status"), "5");
  // And a request the transport itself refuses (a malformed grpc-timeout).
  RawRequest bad_timeout;
  bad_timeout.headers = GrpcRequestHeaders(kEcho, server_.port());
  SetHeader(&bad_timeout.headers, "content-type", "application/grpc-web");
  SetHeader(&bad_timeout.headers, "grpc-timeout", "soon");
  bad_timeout.headers.emplace_back("origin", kApp);
  bad_timeout.body = GrpcFrame(Serialized("hi"));
  const RawResponse malformed = client_->Call(bad_timeout);
  ASSERT_TRUE(malformed.IsTrailersOnly()) << malformed.DebugString();
  EXPECT_EQ(malformed.Header("grpc-status"), "13");
  EXPECT_EQ(malformed.Header("access-control-allow-origin"), kApp);

  // Another origin's call never reaches its handler.
  const RawResponse other = CallWeb(kEcho, "hi", "application/grpc-web+proto",
                                    "https://evil.example.com");
  EXPECT_EQ(other.Header(":status"), "403") << other.DebugString();
  EXPECT_EQ(other.Header("grpc-status"), "7");
  EXPECT_FALSE(other.Header("access-control-allow-origin").has_value());
  EXPECT_EQ(echoes_.load(), 1);

  // A call without an origin (not from a browser) is served as before.
  const RawResponse plain = CallWeb(kEcho, "hi");
  EXPECT_EQ(plain.Header(":status"), "200") << plain.DebugString();
  EXPECT_FALSE(plain.Header("access-control-allow-origin").has_value());
  EXPECT_EQ(echoes_.load(), 2);
}

TEST_F(GrpcWebTest, WithoutCorsPreflightsAreNotAnswered) {
  Start(true);
  const RawResponse response = Preflight(kApp);
  EXPECT_EQ(response.Header(":status"), "405") << response.DebugString();
  // A call with an origin is served, without the CORS fields.
  const RawResponse call =
      CallWeb(kEcho, "hi", "application/grpc-web+proto", kApp);
  EXPECT_EQ(call.Header(":status"), "200") << call.DebugString();
  EXPECT_FALSE(call.Header("access-control-allow-origin").has_value());
}

// The server side of a gRPC-Web call, binary or text, allocates no more
// than a gRPC call's (the same client, method and handler; averaged over
// many calls after a warm-up): base64 is decoded and encoded in buffers the
// stream keeps.
TEST_F(GrpcWebTest, AServerCallAllocatesNoMoreThanGrpc) {
  Start(true);
  constexpr int kCalls = 300;
  const std::string framed = GrpcFrame(Serialized(std::string(1024, 'x')));
  const auto server_allocations_per_call = [&](const char* content_type) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(kEcho, server_.port());
    request.body = framed;
    if (content_type != nullptr) {
      SetHeader(&request.headers, "content-type", content_type);
      RemoveHeader(&request.headers, "te");
      if (absl::StrContains(content_type, "text")) {
        request.body = absl::Base64Escape(framed);
      }
    }
    return ServerAllocationsPerCall(client_.get(), request, kCalls);
  };
  const double grpc = server_allocations_per_call(nullptr);
  const double web = server_allocations_per_call("application/grpc-web+proto");
  const double text = server_allocations_per_call("application/grpc-web-text");
  std::printf(
      "server allocations per call: gRPC %.2f, gRPC-Web %.2f, gRPC-Web text "
      "%.2f\n",
      grpc, web, text);
  EXPECT_LE(web, grpc);
  EXPECT_LE(text, grpc);
}

TEST_F(GrpcWebTest, OffByDefault) {
  Start(false);
  const RawResponse response = CallWeb(kEcho, "hello");
  EXPECT_EQ(response.Header(":status"), "415") << response.DebugString();
  EXPECT_TRUE(response.body.empty()) << response.DebugString();
}

}  // namespace
}  // namespace h2rpc
