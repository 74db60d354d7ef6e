// HTTP/1.1 on an h2rpc server's gRPC port (ServerOptions::web), driven by a
// raw HTTP/1.1 client that sends exact bytes and parses the answers with
// http_parser: Connect and gRPC-Web requests answered as over HTTP/2;
// keep-alive, pipelined requests answered in order, chunked bodies both
// ways, 100-continue, HTTP/1.0, Connection: close and the request limit; a
// closed connection cancelling its call; malformed requests answered with
// their status and the connection closed; the idle and header timeouts;
// gRPC over HTTP/2 on the same port; and a server without the web
// protocols refusing HTTP/1.1 as before.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/raw_h2_client.h"
#include "test/util/raw_http1_client.h"
#include "test/util/server_allocations.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::Http1Response;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawHttp1Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kUnary[] = "/grpc.testing.TestService/UnaryCall";
constexpr char kStreaming[] = "/grpc.testing.TestService/StreamingOutputCall";

std::string Serialized(const std::string& body, bool wait_for_cancel = false) {
  SimpleRequest request;
  request.mutable_payload()->set_body(body);
  request.set_fill_username(wait_for_cancel);
  return request.SerializeAsString();
}

std::string BodyOf(const std::string& serialized) {
  SimpleResponse response;
  return response.ParseFromString(serialized) ? response.payload().body()
                                              : "<unparsable>";
}

// A Connect unary request (binary) for UnaryCall echoing `body`.
std::string ConnectRequest(const std::string& body,
                           absl::string_view extra_headers = "") {
  const std::string message = Serialized(body);
  return absl::StrCat("POST ", kUnary,
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/proto\r\n"
                      "Connect-Protocol-Version: 1\r\nContent-Length: ",
                      message.size(), "\r\n", extra_headers, "\r\n", message);
}

class Http1Test : public ::testing::Test {
 protected:
  void Start(bool web = true, ServerOptions options = ServerOptions()) {
    options.web.connect = web;
    options.web.grpc_web = web;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kUnary,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse* response) -> Status {
              if (request.fill_username()) {
                waiting_ = true;
                if (!WaitFor([&] { return context->IsCancelled(); })) {
                  return Status(StatusCode::kInternal, "never cancelled");
                }
                cancelled_ = true;
                return Status();
              }
              *response->mutable_payload() = request.payload();
              if (request.payload().body() == "show metadata") {
                // The x-drop and x-keep fields the call arrived with.
                const Metadata& metadata = context->client_metadata();
                response->mutable_payload()->set_body(
                    absl::StrCat(metadata.Get("x-drop").value_or("absent"), "/",
                                 metadata.Get("x-keep").value_or("absent")));
              }
              return Status();
            })
        .RegisterServerStreaming<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(
            kStreaming,
            [](ServerContext*, const StreamingOutputCallRequest&,
               ServerWriter<StreamingOutputCallResponse>* writer) -> Status {
              StreamingOutputCallResponse response;
              for (int i = 0; i < 3; ++i) {
                response.mutable_payload()->set_body(absl::StrCat(i));
                if (!writer->Write(response)) return Status();
              }
              return Status();
            });
    ASSERT_TRUE(server_.Start().ok());
    client_ = RawHttp1Client::Connect(server_.port());
    ASSERT_NE(client_, nullptr);
  }

  // Sends `request` and reads its answer, which must come.
  Http1Response Exchange(const std::string& request) {
    EXPECT_TRUE(client_->Send(request));
    absl::optional<Http1Response> response = client_->ReadResponse();
    EXPECT_TRUE(response.has_value()) << "no answer to " << request;
    return response.value_or(Http1Response());
  }

  // Sends `request`, which must be answered `status` with Connection: close
  // and the connection closed.
  void ExpectRefused(const std::string& request, int status,
                     absl::string_view why) {
    SCOPED_TRACE(request);
    const Http1Response response = Exchange(request);
    EXPECT_EQ(response.status, status);
    EXPECT_EQ(response.Header("connection"), "close");
    EXPECT_THAT(response.body, HasSubstr(why));
    EXPECT_TRUE(client_->WaitForClose());
  }

  StubServer server_;
  std::unique_ptr<RawHttp1Client> client_;
  std::atomic<bool> waiting_{false};
  std::atomic<bool> cancelled_{false};
};

TEST_F(Http1Test, ConnectUnaryCallsShareOneConnection) {
  Start();
  for (int i = 0; i < 3; ++i) {
    const Http1Response response =
        Exchange(ConnectRequest(absl::StrCat("call ", i)));
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.Header("content-type"), "application/proto");
    EXPECT_EQ(BodyOf(response.body), absl::StrCat("call ", i));
    EXPECT_TRUE(response.keep_alive);
  }
  EXPECT_FALSE(client_->closed());
}

TEST_F(Http1Test, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  ASSERT_TRUE(client_->Send(ConnectRequest("first") + ConnectRequest("second") +
                            ConnectRequest("third")));
  for (const char* expected : {"first", "second", "third"}) {
    absl::optional<Http1Response> response = client_->ReadResponse();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(BodyOf(response->body), expected);
  }
}

TEST_F(Http1Test, AChunkedRequestBodyIsJoined) {
  Start();
  const std::string message = Serialized("in chunks");
  const Http1Response response = Exchange(
      absl::StrCat("POST ", kUnary,
                   " HTTP/1.1\r\nHost: h\r\nContent-Type: application/proto\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n",
                   absl::Hex(3), "\r\n", message.substr(0, 3), "\r\n",
                   absl::Hex(message.size() - 3), "\r\n", message.substr(3),
                   // A trailer section (dropped), large enough to move the
                   // parser's storage while the request is under way.
                   "\r\n0\r\nX-Trailer: ", std::string(2000, 't'), "\r\n\r\n"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(BodyOf(response.body), "in chunks");
}

TEST_F(Http1Test, GrpcWebServerStreamingIsAChunkedBodyEndingInTrailers) {
  Start();
  const std::string message =
      GrpcFrame(StreamingOutputCallRequest().SerializeAsString());
  const Http1Response response = Exchange(absl::StrCat(
      "POST ", kStreaming,
      " HTTP/1.1\r\nHost: h\r\nContent-Type: application/grpc-web+proto\r\n"
      "X-Grpc-Web: 1\r\nContent-Length: ",
      message.size(), "\r\n\r\n", message));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.Header("transfer-encoding"), "chunked");
  // Three messages, then the trailers frame (flag 0x80).
  absl::string_view body = response.body;
  for (int i = 0; i < 3; ++i) {
    ASSERT_GE(body.size(), 5u);
    ASSERT_EQ(body[0], 0);
    const size_t length =
        (static_cast<uint8_t>(body[3]) << 8) | static_cast<uint8_t>(body[4]);
    StreamingOutputCallResponse message;
    ASSERT_TRUE(message.ParseFromArray(body.data() + 5, length));
    EXPECT_EQ(message.payload().body(), absl::StrCat(i));
    body.remove_prefix(5 + length);
  }
  ASSERT_GE(body.size(), 5u);
  EXPECT_EQ(static_cast<uint8_t>(body[0]), 0x80);
  EXPECT_THAT(std::string(body.substr(5)), HasSubstr("grpc-status:0"));
}

TEST_F(Http1Test, AnAnswerBeforeTheBodyEndsLeavesTheConnectionUsable) {
  Start();
  // The message is complete, the chunked body is not: the server answers,
  // and the body's end comes after the answer.
  const std::string message =
      GrpcFrame(StreamingOutputCallRequest().SerializeAsString());
  ASSERT_TRUE(client_->Send(absl::StrCat(
      "POST ", kStreaming,
      " HTTP/1.1\r\nHost: h\r\nContent-Type: application/grpc-web+proto\r\n"
      "Transfer-Encoding: chunked\r\n\r\n",
      absl::Hex(message.size()), "\r\n", message, "\r\n")));
  absl::optional<Http1Response> streamed = client_->ReadResponse();
  ASSERT_TRUE(streamed.has_value());
  EXPECT_EQ(streamed->status, 200);
  const Http1Response next = Exchange("0\r\n\r\n" + ConnectRequest("next"));
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(BodyOf(next.body), "next");
}

TEST_F(Http1Test, ExpectContinueGetsAnInterimAnswer) {
  Start();
  const std::string request =
      ConnectRequest("continued", "Expect: 100-continue\r\n");
  const size_t head_end = request.find("\r\n\r\n") + 4;
  ASSERT_TRUE(client_->Send(request.substr(0, head_end)));
  absl::optional<Http1Response> interim = client_->ReadResponse();
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  const Http1Response response = Exchange(request.substr(head_end));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(BodyOf(response.body), "continued");
}

TEST_F(Http1Test, ConnectionCloseEndsTheConnectionAfterTheAnswer) {
  Start();
  const Http1Response response =
      Exchange(ConnectRequest("last", "Connection: close\r\n"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(BodyOf(response.body), "last");
  EXPECT_EQ(response.Header("connection"), "close");
  EXPECT_TRUE(client_->WaitForClose());
}

TEST_F(Http1Test, AnHttp10RequestIsAnsweredAndTheConnectionEnds) {
  Start();
  std::string request = ConnectRequest("old");
  request.replace(request.find("HTTP/1.1"), 8, "HTTP/1.0");
  const Http1Response response = Exchange(request);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(BodyOf(response.body), "old");
  EXPECT_TRUE(client_->WaitForClose());
}

TEST_F(Http1Test, TheRequestLimitEndsTheConnection) {
  ServerOptions options;
  options.web.http1_max_requests_per_connection = 2;
  Start(true, options);
  EXPECT_EQ(Exchange(ConnectRequest("1")).Header("connection"), "");
  const Http1Response last = Exchange(ConnectRequest("2"));
  EXPECT_EQ(BodyOf(last.body), "2");
  EXPECT_EQ(last.Header("connection"), "close");
  EXPECT_TRUE(client_->WaitForClose());
}

TEST_F(Http1Test, AClosedConnectionCancelsItsCall) {
  Start();
  const std::string message = Serialized("", /*wait_for_cancel=*/true);
  ASSERT_TRUE(client_->Send(
      absl::StrCat("POST ", kUnary,
                   " HTTP/1.1\r\nHost: h\r\nContent-Type: application/proto\r\n"
                   "Content-Length: ",
                   message.size(), "\r\n\r\n", message)));
  ASSERT_TRUE(WaitFor([&] { return waiting_.load(); }));
  client_->Close();
  EXPECT_TRUE(WaitFor([&] { return cancelled_.load(); }));
}

TEST_F(Http1Test, MalformedRequestsAreRefusedWithTheirStatus) {
  Start();
  ExpectRefused("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "field name");
  client_ = RawHttp1Client::Connect(server_.port());
  ExpectRefused("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400, "Host");
  client_ = RawHttp1Client::Connect(server_.port());
  ExpectRefused(absl::StrCat("GET /", std::string(9000, 'a'),
                             " HTTP/1.1\r\nHost: h\r\n\r\n"),
                414, "target");
  client_ = RawHttp1Client::Connect(server_.port());
  ExpectRefused(absl::StrCat("GET / HTTP/1.1\r\nHost: h\r\nX-Big: ",
                             std::string(20000, 'a'), "\r\n\r\n"),
                431, "header");
  client_ = RawHttp1Client::Connect(server_.port());
  ExpectRefused(
      "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n"
      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      400, "malformed");
  client_ = RawHttp1Client::Connect(server_.port());
  ExpectRefused(ConnectRequest("x", "Expect: something\r\n"), 417,
                "100-continue");
}

TEST_F(Http1Test, FieldsTheConnectionFieldNamesAreNotPassedOn) {
  Start();
  const Http1Response response = Exchange(ConnectRequest(
      "show metadata",
      "Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(BodyOf(response.body), "absent/2");
}

TEST_F(Http1Test, TheTargetLimitIsAnOption) {
  ServerOptions options;
  options.web.http1_max_target_bytes = 64;
  Start(true, options);
  // UnaryCall's path fits.
  EXPECT_EQ(Exchange(ConnectRequest("short")).status, 200);
  ExpectRefused(absl::StrCat("GET /", std::string(64, 'a'),
                             " HTTP/1.1\r\nHost: h\r\n\r\n"),
                414, "target");
}

TEST_F(Http1Test, ARequestForNoKnownMethodIsAnsweredAsOverHttp2) {
  Start();
  // Not Connect, not gRPC-Web: the HTTP/2 session's own answer (415).
  const Http1Response response = Exchange(
      "POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\n"
      "Content-Length: 2\r\n\r\nhi");
  EXPECT_EQ(response.status, 415);
  // The connection carries the next request.
  EXPECT_EQ(Exchange(ConnectRequest("after")).status, 200);
}

TEST_F(Http1Test, ASlowHeadIsAnswered408) {
  ServerOptions options;
  options.web.http1_header_timeout = absl::Milliseconds(200);
  Start(true, options);
  ASSERT_TRUE(client_->Send("POST / HTTP/1.1\r\nHo"));
  absl::optional<Http1Response> response = client_->ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 408);
  EXPECT_TRUE(client_->WaitForClose());
}

TEST_F(Http1Test, AnIdleConnectionCloses) {
  ServerOptions options;
  options.web.http1_idle_timeout = absl::Milliseconds(200);
  Start(true, options);
  EXPECT_EQ(Exchange(ConnectRequest("then nothing")).status, 200);
  EXPECT_TRUE(client_->WaitForClose());
}

TEST_F(Http1Test, GrpcOverHttp2IsServedOnTheSamePort) {
  Start();
  EXPECT_EQ(Exchange(ConnectRequest("http/1.1")).status, 200);
  std::string error;
  std::unique_ptr<RawH2Client> h2 =
      RawH2Client::Connect(server_.port(), &error);
  ASSERT_NE(h2, nullptr) << error;
  RawRequest request;
  request.headers = GrpcRequestHeaders(kUnary, server_.port());
  request.body = GrpcFrame(Serialized("http/2"));
  const auto response = h2->Call(request);
  EXPECT_EQ(response.Trailer("grpc-status"), "0");
}

TEST_F(Http1Test, AConnectCallAllocatesNoMoreThanOverHttp2) {
  Start();
  constexpr int kCalls = 200;
  const std::string request = ConnectRequest("counted");
  for (int i = 0; i < 50; ++i) ASSERT_EQ(Exchange(request).status, 200);
  const int64_t before =
      testing::AllocationsByRole(testing::ThreadRole::kServer).allocations;
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ(Exchange(request).status, 200);
  const double http1 =
      static_cast<double>(
          testing::AllocationsByRole(testing::ThreadRole::kServer).allocations -
          before) /
      kCalls;
  std::string error;
  std::unique_ptr<RawH2Client> h2 =
      RawH2Client::Connect(server_.port(), &error);
  ASSERT_NE(h2, nullptr) << error;
  RawRequest h2_request;
  h2_request.headers = {{":method", "POST"},
                        {":scheme", "http"},
                        {":path", kUnary},
                        {":authority", "127.0.0.1"},
                        {"content-type", "application/proto"},
                        {"connect-protocol-version", "1"}};
  h2_request.body = Serialized("counted");
  const double http2 =
      testing::ServerAllocationsPerCall(h2.get(), h2_request, kCalls);
  std::printf(
      "server allocations per Connect call: HTTP/1.1 %.2f, "
      "HTTP/2 %.2f\n",
      http1, http2);
  EXPECT_LE(http1, http2);
}

TEST_F(Http1Test, WithoutTheWebProtocolsHttp1IsRefused) {
  Start(/*web=*/false);
  ASSERT_TRUE(client_->Send(ConnectRequest("refused")));
  EXPECT_FALSE(client_->ReadResponse().has_value());
  EXPECT_TRUE(client_->WaitForClose());
}

}  // namespace
}  // namespace h2rpc
