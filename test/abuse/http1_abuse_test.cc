// Hostile HTTP/1.1 clients against a server with the web protocols on, each
// bounded: an endless request line (414) and header section (431), an
// endless chunked body (answered, then the connection closes), a head sent
// a byte at a time (408 at the header timeout, however the bytes trickle),
// and a flood of pipelined requests from a client that does not read (the
// server stops reading; every request is answered once the client reads).
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/util/raw_http1_client.h"
#include "test/util/stub_server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::Http1Response;
using ::h2rpc::testing::RawHttp1Client;
using ::h2rpc::testing::StubServer;

constexpr char kUnary[] = "/grpc.testing.TestService/UnaryCall";
// A flood is answered before the client has sent this much: what the
// loopback socket's buffers take before the server reads (a few MiB), and
// what the server reads before it answers (a few KiB, or
// max_receive_message_size of a body), with room for a slow server.
constexpr size_t kAnsweredWithin = 32u << 20;

class Http1AbuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.web.connect = true;
    options.web.http1_header_timeout = absl::Milliseconds(300);
    // The pipeline flood is not cut short by the request limit.
    options.web.http1_max_requests_per_connection = 1 << 30;
    options.connection.max_receive_message_size = 1 << 20;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kUnary,
            [](ServerContext*, const SimpleRequest& request,
               SimpleResponse* response) -> Status {
              *response->mutable_payload() = request.payload();
              return Status();
            });
    ASSERT_TRUE(server_.Start().ok());
  }

  // Sends `piece` again and again, as fast as the server takes it, until
  // the server answers (returned) or closes, or `limit` bytes went out;
  // looks for an answer at least every 256 KiB. `*sent`: how many did.
  absl::optional<Http1Response> Flood(RawHttp1Client* client,
                                      absl::string_view piece, size_t limit,
                                      size_t* sent) {
    *sent = 0;
    size_t unchecked = 0;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (*sent < limit && absl::Now() < deadline) {
      const size_t n = client->SendSome(piece);
      *sent += n;
      unchecked += n;
      if (n < piece.size() || unchecked >= 256 * 1024) {
        unchecked = 0;
        absl::optional<Http1Response> response =
            client->ReadResponse(absl::Milliseconds(n < piece.size() ? 20 : 0));
        if (response.has_value() || client->closed()) return response;
        if (n > 0 && n < piece.size()) client->Send(piece.substr(n));
      }
    }
    return client->ReadResponse(absl::Seconds(5));
  }

  StubServer server_;
};

TEST_F(Http1AbuseTest, AnEndlessRequestLineIs414) {
  std::unique_ptr<RawHttp1Client> client =
      RawHttp1Client::Connect(server_.port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("GET /"));
  size_t sent = 0;
  absl::optional<Http1Response> response =
      Flood(client.get(), std::string(4096, 'a'), 64 << 20, &sent);
  ASSERT_TRUE(response.has_value()) << "after " << sent << " bytes";
  EXPECT_EQ(response->status, 414);
  EXPECT_TRUE(client->WaitForClose());
  EXPECT_LT(sent, kAnsweredWithin);
}

TEST_F(Http1AbuseTest, EndlessHeadersAre431) {
  std::unique_ptr<RawHttp1Client> client =
      RawHttp1Client::Connect(server_.port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send("GET / HTTP/1.1\r\nHost: h\r\n"));
  size_t sent = 0;
  absl::optional<Http1Response> response =
      Flood(client.get(), "X-Filler: " + std::string(100, 'a') + "\r\n",
            64 << 20, &sent);
  ASSERT_TRUE(response.has_value()) << "after " << sent << " bytes";
  EXPECT_EQ(response->status, 431);
  EXPECT_TRUE(client->WaitForClose());
  EXPECT_LT(sent, kAnsweredWithin);
}

TEST_F(Http1AbuseTest, AnEndlessChunkedBodyIsAnsweredAndTheConnectionCloses) {
  std::unique_ptr<RawHttp1Client> client =
      RawHttp1Client::Connect(server_.port());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send(absl::StrCat(
      "POST ", kUnary,
      " HTTP/1.1\r\nHost: h\r\nContent-Type: application/proto\r\n"
      "Connect-Protocol-Version: 1\r\nTransfer-Encoding: chunked\r\n\r\n")));
  const absl::Time start = absl::Now();
  const std::string chunk =
      absl::StrCat(absl::Hex(16384), "\r\n", std::string(16384, 'x'), "\r\n");
  size_t sent = 0;
  absl::optional<Http1Response> response =
      Flood(client.get(), chunk, 256 << 20, &sent);
  ASSERT_TRUE(response.has_value()) << "after " << sent << " bytes";
  // Past max_receive_message_size: Connect's resource_exhausted.
  EXPECT_EQ(response->status, 429);
  EXPECT_THAT(response->body, ::testing::HasSubstr("resource_exhausted"));
  EXPECT_LT(sent, kAnsweredWithin + (1u << 20));
  // The rest of the body is not read for ever: the connection ends however
  // much more comes.
  std::atomic<bool> closed{false};
  std::thread more([&] {
    while (!closed.load() && absl::Now() < start + absl::Seconds(20)) {
      client->SendSome(chunk);
    }
  });
  EXPECT_TRUE(client->WaitForClose());
  closed = true;
  more.join();
}

TEST_F(Http1AbuseTest, ATricklingHeadIsCutAtTheHeaderTimeout) {
  std::unique_ptr<RawHttp1Client> client =
      RawHttp1Client::Connect(server_.port());
  ASSERT_NE(client, nullptr);
  const std::string head =
      "GET / HTTP/1.1\r\nHost: h\r\nX-Slow: " + std::string(1000, 'a');
  // A byte at most every 20 ms, far within the 300 ms timeout of each.
  size_t sent = 0;
  absl::optional<Http1Response> response;
  for (char c : head) {
    if (!client->Send(absl::string_view(&c, 1))) break;
    ++sent;
    response = client->ReadResponse(absl::Milliseconds(20));
    if (response.has_value() || client->closed()) break;
  }
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 408);
  // Before the head's last byte: the bytes kept coming, and the timeout ran
  // from the first of them.
  EXPECT_LT(sent, head.size());
  EXPECT_TRUE(client->WaitForClose());
}

TEST_F(Http1AbuseTest, APipelineFloodStopsTheServerReadingAndLosesNothing) {
  std::unique_ptr<RawHttp1Client> client =
      RawHttp1Client::Connect(server_.port(), /*receive_buffer=*/4096);
  ASSERT_NE(client, nullptr);
  SimpleRequest message;
  message.mutable_payload()->set_body(std::string(200, 'p'));
  const std::string body = message.SerializeAsString();
  const std::string request =
      absl::StrCat("POST ", kUnary,
                   " HTTP/1.1\r\nHost: h\r\nContent-Type: application/proto\r\n"
                   "Content-Length: ",
                   body.size(), "\r\n\r\n", body);
  // Requests go out without a response read, until the server stops
  // taking them: it reads no more than it may hold while its answers wait.
  size_t sent = 0;
  size_t requests = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  std::string partial;
  while (absl::Now() < deadline) {
    const size_t n = client->SendSome(request);
    sent += n;
    if (n == request.size()) {
      ++requests;
      continue;
    }
    partial = request.substr(n);
    ++requests;  // completed below, once responses are read
    break;
  }
  ASSERT_FALSE(partial.empty()) << "the server never stopped reading";
  EXPECT_LT(sent, 32u << 20);
  // Now read, while the rest of the last request goes out.
  std::thread finisher([&] { client->Send(partial); });
  size_t answered = 0;
  for (; answered < requests; ++answered) {
    absl::optional<Http1Response> response = client->ReadResponse();
    if (!response.has_value()) break;
    ASSERT_EQ(response->status, 200);
  }
  finisher.join();
  EXPECT_EQ(answered, requests);
}

}  // namespace
}  // namespace h2rpc
