// An h2rpc Server driven by a raw HTTP/2 client (test/util/raw_h2_client)
// with well-formed, odd and hostile requests: what goes on the wire must
// follow gRPC's PROTOCOL-HTTP2.md, and nothing may crash, hang or leak the
// connection.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/notification.h"
#include "test/util/raw_frames.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::EncodeFrameHeader;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcPrefix;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kClientPreface;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::ParseGrpcFrames;
using ::h2rpc::testing::PercentDecode;
using ::h2rpc::testing::RawBytesResult;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::RemoveHeader;
using ::h2rpc::testing::SendRawBytes;
using ::h2rpc::testing::SetHeader;
using ::h2rpc::testing::StubServer;
using ::testing::AnyOf;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Optional;
using ::testing::StartsWith;

constexpr char kEcho[] = "/h2rpc.test.Conformance/Echo";
constexpr char kSlow[] = "/h2rpc.test.Conformance/Slow";

// grpc-status values, as they appear on the wire.
constexpr char kOk[] = "0";
constexpr char kDeadlineExceeded[] = "4";
constexpr char kResourceExhausted[] = "8";
constexpr char kUnimplemented[] = "12";
constexpr char kInternal[] = "13";

std::string SerializedRequest(absl::string_view body) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(body));
  return request.SerializeAsString();
}

// Echoes the payload, and every client metadata entry whose key starts with
// "x-" into the trailers: "x-echo-count" and "x-echo-<i>" = "key=hex(value)".
Status EchoHandler(ServerContext* context, const SimpleRequest& request,
                   SimpleResponse* response) {
  response->mutable_payload()->set_body(request.payload().body());
  int count = 0;
  for (const Metadata::Entry entry : context->client_metadata()) {
    if (entry.key.substr(0, 2) != "x-") continue;
    context->AddTrailingMetadata(
        absl::StrCat("x-echo-", count++),
        absl::StrCat(entry.key, "=", absl::BytesToHexString(entry.value)));
  }
  context->AddTrailingMetadata("x-echo-count", absl::StrCat(count));
  return Status();
}

class ServerConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 2;
    options.min_sync_threads = 4;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, EchoHandler)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kSlow, [this](ServerContext* context, const SimpleRequest&,
                          SimpleResponse*) {
              slow_started_.Notify();
              // Bounded, so a missed cancellation fails the test
              // instead of hanging the server's shutdown.
              const absl::Time give_up = absl::Now() + absl::Seconds(60);
              while (!context->IsCancelled() && absl::Now() < give_up) {
                absl::SleepFor(absl::Milliseconds(1));
              }
              if (context->IsCancelled()) slow_saw_cancel_.Notify();
              return Status(StatusCode::kCancelled, "noticed");
            });
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    std::string error;
    client_ = RawH2Client::Connect(server_.port(), &error);
    ASSERT_NE(client_, nullptr) << error;
  }

  // A well-formed request to `path` carrying `body` (raw bytes).
  RawRequest Request(absl::string_view path, std::string body) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(path, server_.port());
    request.body = std::move(body);
    return request;
  }
  RawRequest EchoRequest(absl::string_view text) {
    return Request(kEcho, GrpcFrame(SerializedRequest(text)));
  }

  // A fresh connection still gets a normal answer.
  void ExpectServerStillServes() {
    std::string error;
    std::unique_ptr<RawH2Client> client =
        RawH2Client::Connect(server_.port(), &error);
    ASSERT_NE(client, nullptr) << error;
    ExpectEchoWorks(client.get());
  }

  void ExpectEchoWorks(RawH2Client* client) {
    const RawResponse response = client->Call(EchoRequest("still alive"));
    ASSERT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
        << response.DebugString();
    std::vector<std::string> messages;
    ASSERT_TRUE(ParseGrpcFrames(response.body, &messages));
    ASSERT_EQ(messages.size(), 1u);
    SimpleResponse decoded;
    ASSERT_TRUE(decoded.ParseFromString(messages[0]));
    EXPECT_EQ(decoded.payload().body(), "still alive");
  }

  StubServer server_;
  std::unique_ptr<RawH2Client> client_;
  Notification slow_started_;
  Notification slow_saw_cancel_;
};

// The stream ended cleanly with a Trailers-Only response carrying
// grpc-status `code`.
void ExpectTrailersOnly(const RawResponse& response, absl::string_view code) {
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_TRUE(response.IsTrailersOnly()) << response.DebugString();
  EXPECT_THAT(response.Header(":status"), Optional(std::string("200")))
      << response.DebugString();
  EXPECT_THAT(response.Header("content-type"),
              Optional(StartsWith("application/grpc")))
      << response.DebugString();
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string(code)))
      << response.DebugString();
  EXPECT_FALSE(response.connection_closed) << response.DebugString();
}

// The call failed with grpc-status `code` (Trailers-Only or headers then
// trailers), without a response message.
void ExpectGrpcStatus(const RawResponse& response, absl::string_view code) {
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_THAT(response.Header(":status"), Optional(std::string("200")))
      << response.DebugString();
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string(code)))
      << response.DebugString();
  EXPECT_EQ(response.body, "") << response.DebugString();
  EXPECT_FALSE(response.connection_closed) << response.DebugString();
}

// ---------------------------------------------------------------------------
// Well-formed calls

TEST_F(ServerConformanceTest, ValidRequestGetsFramedResponseAndOkTrailers) {
  const RawResponse response = client_->Call(EchoRequest("hello"));
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  ASSERT_EQ(response.header_blocks.size(), 2u) << response.DebugString();
  EXPECT_FALSE(response.header_blocks[0].end_stream);
  EXPECT_TRUE(response.header_blocks[1].end_stream);
  EXPECT_THAT(response.Header(":status"), Optional(std::string("200")));
  EXPECT_THAT(response.Header("content-type"),
              Optional(std::string("application/grpc")));
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)));
  // Trailers carry no pseudo-headers.
  for (const auto& [name, value] : response.header_blocks[1].fields) {
    EXPECT_NE(name[0], ':') << name;
  }
  std::vector<std::string> messages;
  std::vector<uint8_t> flags;
  ASSERT_TRUE(ParseGrpcFrames(response.body, &messages, &flags))
      << response.DebugString();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(flags[0], 0);
  SimpleResponse decoded;
  ASSERT_TRUE(decoded.ParseFromString(messages[0]));
  EXPECT_EQ(decoded.payload().body(), "hello");
  EXPECT_TRUE(response.stream_closed);
  EXPECT_EQ(response.close_error_code, NGHTTP2_NO_ERROR);
  EXPECT_FALSE(response.rst_received) << response.DebugString();
}

TEST_F(ServerConformanceTest, ContentTypeSuffixesAreAccepted) {
  for (const char* type :
       {"application/grpc+proto", "application/grpc;charset=utf-8"}) {
    RawRequest request = EchoRequest("typed");
    SetHeader(&request.headers, "content-type", type);
    const RawResponse response = client_->Call(request);
    EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
        << type << "\n"
        << response.DebugString();
  }
}

TEST_F(ServerConformanceTest, ManyRequestsInTurnOnOneConnection) {
  for (int i = 0; i < 50; ++i) {
    const RawResponse response =
        client_->Call(EchoRequest(absl::StrCat("call ", i)));
    ASSERT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
        << i << "\n"
        << response.DebugString();
  }
}

TEST_F(ServerConformanceTest, BodySplitIntoOneByteDataFramesWorks) {
  const std::string text(200, 'b');
  RawRequest request = EchoRequest(text);
  request.max_data_frame_size = 1;
  const RawResponse response = client_->Call(request);
  ASSERT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
      << response.DebugString();
  std::vector<std::string> messages;
  ASSERT_TRUE(ParseGrpcFrames(response.body, &messages));
  ASSERT_EQ(messages.size(), 1u);
  SimpleResponse decoded;
  ASSERT_TRUE(decoded.ParseFromString(messages[0]));
  EXPECT_EQ(decoded.payload().body(), text);
}

TEST_F(ServerConformanceTest, EmptyRequestMessageIsValid) {
  // A zero-length message is a complete (default) request.
  const RawResponse response = client_->Call(Request(kEcho, GrpcFrame("")));
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
      << response.DebugString();
}

// ---------------------------------------------------------------------------
// Requests refused at the HTTP level

TEST_F(ServerConformanceTest, TextPlainContentTypeIs415WithGrpcStatus) {
  RawRequest request = EchoRequest("x");
  SetHeader(&request.headers, "content-type", "text/plain");
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_THAT(response.Header(":status"), Optional(std::string("415")))
      << response.DebugString();
  EXPECT_TRUE(response.Trailer("grpc-status").has_value())
      << response.DebugString();
  EXPECT_TRUE(response.end_stream_received) << response.DebugString();
  EXPECT_FALSE(response.connection_closed);
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest, MissingContentTypeIs415) {
  RawRequest request = EchoRequest("x");
  RemoveHeader(&request.headers, "content-type");
  const RawResponse response = client_->Call(request);
  EXPECT_THAT(response.Header(":status"), Optional(std::string("415")))
      << response.DebugString();
}

TEST_F(ServerConformanceTest, GetIs405) {
  RawRequest request = EchoRequest("");
  SetHeader(&request.headers, ":method", "GET");
  request.body.clear();
  request.end_stream_on_headers = true;
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_THAT(response.Header(":status"), Optional(std::string("405")))
      << response.DebugString();
  EXPECT_TRUE(response.end_stream_received) << response.DebugString();
  ExpectEchoWorks(client_.get());
}

// ---------------------------------------------------------------------------
// gRPC-level refusals

TEST_F(ServerConformanceTest, UnknownMethodIsTrailersOnlyUnimplemented) {
  const RawResponse response = client_->Call(Request(
      "/h2rpc.test.Conformance/Nope", GrpcFrame(SerializedRequest(""))));
  ExpectTrailersOnly(response, kUnimplemented);
  EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
              HasSubstr("Nope"));
}

TEST_F(ServerConformanceTest, UnknownServiceIsTrailersOnlyUnimplemented) {
  const RawResponse response = client_->Call(
      Request("/no.Such/Thing", GrpcFrame(SerializedRequest(""))));
  ExpectTrailersOnly(response, kUnimplemented);
  EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
              HasSubstr("no.Such"));
}

TEST_F(ServerConformanceTest,
       UnknownEncodingIsUnimplementedWithAcceptEncoding) {
  RawRequest request = EchoRequest("zipped?");
  request.headers.emplace_back("grpc-encoding", "br");
  const RawResponse response = client_->Call(request);
  ExpectTrailersOnly(response, kUnimplemented);
  EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
              HasSubstr("'br'"));
  EXPECT_EQ(response.Trailer("grpc-accept-encoding"), "identity,deflate,gzip");
}

TEST_F(ServerConformanceTest, CompressedFlagWithoutEncodingIsInternal) {
  const RawResponse response = client_->Call(
      Request(kEcho, GrpcFrame(SerializedRequest("not really zipped"), 1)));
  ExpectGrpcStatus(response, kInternal);
}

TEST_F(ServerConformanceTest, CompressedFlagWithIdentityEncodingIsInternal) {
  RawRequest request =
      Request(kEcho, GrpcFrame(SerializedRequest("not really zipped"), 1));
  request.headers.emplace_back("grpc-encoding", "identity");
  ExpectGrpcStatus(client_->Call(request), kInternal);
}

TEST_F(ServerConformanceTest, InvalidCompressedFlagIsInternal) {
  for (uint8_t flag : {2, 0x80, 0xff}) {
    const RawResponse response =
        client_->Call(Request(kEcho, GrpcFrame(SerializedRequest("x"), flag)));
    ExpectGrpcStatus(response, kInternal);
    EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
                HasSubstr("flag"))
        << int{flag};
  }
}

TEST_F(ServerConformanceTest, OversizedMessageIsResourceExhaustedUnallocated) {
  constexpr uint32_t kDeclared = 5 << 20;  // the limit is 4 MiB
  // The prefix and a little of the body, then the stream stays open, as if
  // the rest were still on its way.
  RawRequest request =
      Request(kEcho, GrpcPrefix(0, kDeclared) + std::string(1000, 'x'));
  request.end_stream = false;
  ::h2rpc::testing::ResetPeakLiveHeapBytes();
  const int64_t live_before = ::h2rpc::testing::LiveHeapBytes();
  const int32_t id = client_->Start(request);
  ASSERT_GT(id, 0) << client_->error();
  // Wait for the server's END_STREAM, not for the stream to close: that
  // takes the server's RST_STREAM too.
  const bool answered = client_->RunUntil(
      [&] { return client_->Response(id).end_stream_received; },
      absl::Seconds(30));
  const int64_t peak_growth =
      ::h2rpc::testing::PeakLiveHeapBytes() - live_before;
  RawResponse response = client_->Response(id);
  ASSERT_TRUE(answered) << response.DebugString();
  EXPECT_THAT(response.Header(":status"), Optional(std::string("200")));
  EXPECT_THAT(response.Trailer("grpc-status"),
              Optional(std::string(kResourceExhausted)))
      << response.DebugString();
  const std::string message =
      PercentDecode(response.Trailer("grpc-message").value_or(""));
  EXPECT_THAT(message, HasSubstr("5242880"));
  EXPECT_THAT(message, HasSubstr("4194304"));
  EXPECT_LT(peak_growth, 1 << 20) << "the server buffered the message";
  // The server ends our half of the stream too (RST_STREAM NO_ERROR), so an
  // abandoned upload does not linger.
  client_->RunUntil([&] { return client_->Response(id).stream_closed; },
                    absl::Seconds(30));
  response = client_->Response(id);
  EXPECT_TRUE(response.stream_closed) << response.DebugString();
  EXPECT_TRUE(response.rst_received) << response.DebugString();
  EXPECT_EQ(response.rst_error_code, NGHTTP2_NO_ERROR);
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest, ZeroMessagesEndStreamOnHeadersIsInternal) {
  RawRequest request = Request(kEcho, "");
  request.end_stream_on_headers = true;
  ExpectGrpcStatus(client_->Call(request), kInternal);
}

TEST_F(ServerConformanceTest, ZeroMessagesEmptyDataEndStreamIsInternal) {
  ExpectGrpcStatus(client_->Call(Request(kEcho, "")), kInternal);
}

TEST_F(ServerConformanceTest, TwoRequestMessagesIsInternal) {
  const std::string one = GrpcFrame(SerializedRequest("one"));
  ExpectGrpcStatus(client_->Call(Request(kEcho, one + one)), kInternal);
  // The same, each message in its own DATA frame.
  RawRequest request = Request(kEcho, one + one);
  request.max_data_frame_size = one.size();
  ExpectGrpcStatus(client_->Call(request), kInternal);
}

TEST_F(ServerConformanceTest, TruncatedMessageThenEndStreamIsInternal) {
  const std::string whole = GrpcFrame(SerializedRequest("truncated"));
  // Inside the body.
  ExpectGrpcStatus(
      client_->Call(Request(kEcho, whole.substr(0, whole.size() - 3))),
      kInternal);
  // Inside the prefix.
  ExpectGrpcStatus(client_->Call(Request(kEcho, whole.substr(0, 3))),
                   kInternal);
  // A whole message followed by a partial prefix.
  ExpectGrpcStatus(client_->Call(Request(kEcho, whole + whole.substr(0, 2))),
                   kInternal);
}

TEST_F(ServerConformanceTest, UnparsableRequestMessageIsInternal) {
  // Field 2 (payload), length-delimited, declared 100 bytes, 1 present.
  ExpectGrpcStatus(client_->Call(Request(kEcho, GrpcFrame("\x12\x64\x01"))),
                   kInternal);
}

TEST_F(ServerConformanceTest, MalformedGrpcTimeoutIsInternal) {
  for (const char* timeout : {"abc", "123456789S", "1x", "", "S", "-1S", "1.5S",
                              "1s", "99999999n0"}) {
    RawRequest request = EchoRequest("timed");
    request.headers.emplace_back("grpc-timeout", timeout);
    const RawResponse response = client_->Call(request);
    ExpectGrpcStatus(response, kInternal);
    if (HasFailure()) {
      ADD_FAILURE() << "grpc-timeout '" << timeout << "'";
      break;
    }
  }
}

TEST_F(ServerConformanceTest, ValidGrpcTimeoutsAreAccepted) {
  for (const char* timeout : {"99999999H", "1H", "30S", "12345678u"}) {
    RawRequest request = EchoRequest("timed");
    request.headers.emplace_back("grpc-timeout", timeout);
    const RawResponse response = client_->Call(request);
    EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
        << "grpc-timeout '" << timeout << "'\n"
        << response.DebugString();
  }
}

TEST_F(ServerConformanceTest, OneMillisecondTimeoutOnSlowHandler) {
  RawRequest request = Request(kSlow, GrpcFrame(SerializedRequest("")));
  request.headers.emplace_back("grpc-timeout", "1m");
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_TRUE(response.Trailer("grpc-status") ==
                  absl::optional<std::string>(kDeadlineExceeded) ||
              response.rst_received)
      << response.DebugString();
  EXPECT_NE(response.Trailer("grpc-status"), absl::optional<std::string>(kOk));
  // The deadline may pass before the handler starts (then it never runs);
  // if it did start, it must see the call cancelled.
  if (slow_started_.HasBeenNotified()) {
    EXPECT_TRUE(
        slow_saw_cancel_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  }
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest, DeadlinePassingWhileHandlerRunsCancelsIt) {
  RawRequest request = Request(kSlow, GrpcFrame(SerializedRequest("")));
  request.headers.emplace_back("grpc-timeout", "2S");
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_THAT(response.Trailer("grpc-status"),
              Optional(std::string(kDeadlineExceeded)))
      << response.DebugString();
  ASSERT_TRUE(slow_started_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(
      slow_saw_cancel_.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST_F(ServerConformanceTest, WholeMessageWithoutEndStreamWaitsForHalfClose) {
  // A unary handler runs only after the client half-closes; until then the
  // call is open, and here its deadline ends it.
  RawRequest request = EchoRequest("no end");
  request.end_stream = false;
  request.headers.emplace_back("grpc-timeout", "300m");
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_THAT(response.Trailer("grpc-status"),
              Optional(std::string(kDeadlineExceeded)))
      << response.DebugString();
}

TEST_F(ServerConformanceTest, ClientRstStreamCancelsRunningHandler) {
  RawRequest request = Request(kSlow, GrpcFrame(SerializedRequest("")));
  request.rst_when = [this] { return slow_started_.HasBeenNotified(); };
  request.rst_error_code = NGHTTP2_CANCEL;
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_TRUE(response.rst_sent);
  EXPECT_TRUE(
      slow_saw_cancel_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The connection is unaffected.
  EXPECT_TRUE(client_->Ping());
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest, ClientRstStreamBeforeBodyEnds) {
  // The client gives up halfway through the upload.
  RawRequest request = Request(kEcho, GrpcPrefix(0, 1000) + "partial");
  request.end_stream = false;
  request.rst_after = absl::Milliseconds(50);
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_TRUE(response.rst_sent);
  EXPECT_TRUE(client_->Ping());
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest, RapidResetOfManyStreamsLeavesServerHealthy) {
  // Open streams and reset them at once, some before and some after the
  // handler could run (CVE-2023-44487 style, at a modest rate).
  for (int i = 0; i < 200; ++i) {
    RawRequest request =
        i % 2 == 0 ? EchoRequest("reset me") : Request(kSlow, GrpcFrame(""));
    request.end_stream = i % 4 < 2;
    const int32_t id = client_->Start(request);
    ASSERT_GT(id, 0) << client_->error();
    client_->ResetStream(id, NGHTTP2_CANCEL);
    if (client_->closed()) break;
  }
  // The server may or may not have tolerated the burst (nghttp2 rate-limits
  // resets with a GOAWAY), but it must keep serving.
  if (!client_->closed()) client_->Ping();
  ExpectServerStillServes();
}

TEST_F(ServerConformanceTest, ClientDisconnectCancelsRunningHandler) {
  const int32_t id =
      client_->Start(Request(kSlow, GrpcFrame(SerializedRequest(""))));
  ASSERT_GT(id, 0);
  ASSERT_TRUE(client_->RunUntil(
      [this] { return slow_started_.HasBeenNotified(); }, absl::Seconds(30)));
  client_.reset();  // closes the socket
  EXPECT_TRUE(
      slow_saw_cancel_.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ExpectServerStillServes();
}

TEST_F(ServerConformanceTest, ConcurrentStreamsOnOneConnection) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 100; ++i) {
    ids.push_back(client_->Start(EchoRequest(absl::StrCat("stream ", i))));
    ASSERT_GT(ids.back(), 0);
  }
  ASSERT_TRUE(client_->RunUntil(
      [&] {
        for (int32_t id : ids) {
          if (!client_->Response(id).stream_closed) return false;
        }
        return true;
      },
      absl::Seconds(30)));
  for (size_t i = 0; i < ids.size(); ++i) {
    const RawResponse response = client_->Response(ids[i]);
    std::vector<std::string> messages;
    ASSERT_TRUE(ParseGrpcFrames(response.body, &messages));
    ASSERT_EQ(messages.size(), 1u) << response.DebugString();
    SimpleResponse decoded;
    ASSERT_TRUE(decoded.ParseFromString(messages[0]));
    EXPECT_EQ(decoded.payload().body(), absl::StrCat("stream ", i));
  }
}

// ---------------------------------------------------------------------------
// Header blocks

TEST_F(ServerConformanceTest, OversizedHeaderValueIsRefusedConnectionSurvives) {
  RawRequest request = EchoRequest("big");
  request.headers.emplace_back("x-big", std::string(20000, 'a'));
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_FALSE(response.connection_closed) << response.DebugString();
  EXPECT_NE(response.Trailer("grpc-status"), absl::optional<std::string>(kOk))
      << response.DebugString();
  EXPECT_TRUE(
      response.rst_received ||
      (response.Trailer("grpc-status").has_value() &&
       response.Trailer("grpc-status") != absl::optional<std::string>(kOk)))
      << response.DebugString();
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest,
       ManyHeadersOverTheLimitAreRefusedConnectionSurvives) {
  RawRequest request = EchoRequest("many");
  for (int i = 0; i < 600; ++i) {
    request.headers.emplace_back(absl::StrCat("x-h-", i),
                                 std::string(20, 'a' + i % 26));
  }
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_FALSE(response.connection_closed) << response.DebugString();
  EXPECT_NE(response.Trailer("grpc-status"), absl::optional<std::string>(kOk))
      << response.DebugString();
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest, HeaderValueOverHpackFieldLimitDoesNotKillServer) {
  // 70000 bytes: past nghttp2's 64 KiB limit on one decoded field as well.
  RawRequest request = EchoRequest("huge");
  request.headers.emplace_back("x-huge", std::string(70000, 'h'));
  const RawResponse response = client_->Call(request);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_NE(response.Trailer("grpc-status"), absl::optional<std::string>(kOk))
      << response.DebugString();
  ExpectServerStillServes();
}

// HPACK for a request header block whose small wire size decodes to far
// more than max_header_list_size: one 4000-byte field added to the dynamic
// table, then referenced `refs` times with one byte each.
std::string AmplifiedRequestHeaderBlock(absl::string_view path, int refs) {
  std::string block;
  block += "\x83";  // :method POST
  block += "\x86";  // :scheme http
  block += "\x04";  // :path, literal without indexing, name index 4
  block += static_cast<char>(path.size());
  block += std::string(path);
  block += "\x01";  // :authority, literal without indexing, name index 1
  block += static_cast<char>(9);
  block += "localhost";
  block += std::string("\x0f\x10", 2);  // content-type, name index 31
  block += static_cast<char>(16);
  block += "application/grpc";
  block += std::string("\x00\x02te\x08trailers", 13);
  // Literal with incremental indexing, new name "x-amp", 4000-byte value
  // (length 4000 = 127 + 3873 as a 7-bit-prefix integer).
  block += std::string("\x40\x05x-amp\x7f\xa1\x1e", 10);
  block += std::string(4000, 'A');
  block += std::string(refs, '\xbe');  // indexed: dynamic entry 62
  return block;
}

TEST_F(ServerConformanceTest, HpackAmplifiedHeaderBlockIsRefusedCheaply) {
  const std::string block = AmplifiedRequestHeaderBlock(kEcho, 10000);
  ASSERT_LE(block.size(), 16384u);
  const std::string bytes =
      absl::StrCat(kClientPreface, EncodeFrameHeader(0, NGHTTP2_SETTINGS, 0, 0),
                   EncodeFrameHeader(block.size(), NGHTTP2_HEADERS,
                                     NGHTTP2_FLAG_END_HEADERS, 1),
                   block);
  ::h2rpc::testing::ResetPeakLiveHeapBytes();
  const int64_t live_before = ::h2rpc::testing::LiveHeapBytes();
  // The connection stays open: read until the stream's answer arrives.
  const RawBytesResult result = SendRawBytes(
      server_.port(), bytes, absl::Seconds(20),
      [](const std::vector<RawFrame>& frames) {
        for (const RawFrame& frame : frames) {
          if (frame.stream_id == 1 && (frame.type == NGHTTP2_RST_STREAM ||
                                       frame.type == NGHTTP2_HEADERS)) {
            return true;
          }
        }
        return false;
      });
  const int64_t peak_growth =
      ::h2rpc::testing::PeakLiveHeapBytes() - live_before;
  ASSERT_TRUE(result.connected);
  // Refused with a Trailers-Only response (RESOURCE_EXHAUSTED).
  bool refused = false;
  for (const RawFrame& frame : result.frames) {
    if (frame.type == NGHTTP2_HEADERS && frame.stream_id == 1 &&
        (frame.flags & NGHTTP2_FLAG_END_STREAM)) {
      refused = true;
    }
    EXPECT_NE(frame.type, NGHTTP2_GOAWAY) << "the whole connection was closed";
  }
  EXPECT_TRUE(refused) << absl::CHexEscape(result.received);
  // 10000 x 4 KB decoded would be 40 MB.
  EXPECT_LT(peak_growth, 4 << 20);
  ExpectServerStillServes();
}

TEST_F(ServerConformanceTest, HeadersJustUnderTheLimitAreAccepted) {
  // 16384 bytes allowed, counting 32 per field: stay clearly below.
  RawRequest request = EchoRequest("fits");
  request.headers.emplace_back("x-fits", std::string(12000, 'f'));
  const RawResponse response = client_->Call(request);
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
      << response.DebugString();
}

TEST_F(ServerConformanceTest, BinaryMetadataIsDecoded) {
  RawRequest request = EchoRequest("md");
  request.headers.emplace_back("x-padded-bin", "AQ==");
  request.headers.emplace_back("x-unpadded-bin", "AQ");
  request.headers.emplace_back("x-joined-bin", "AAEC,AQ==, AgM");
  request.headers.emplace_back("x-plain", "hello, world");
  request.headers.emplace_back("x-dup", "a");
  request.headers.emplace_back("x-dup", "b");
  request.headers.emplace_back("x-empty-bin", "");
  const RawResponse response = client_->Call(request);
  ASSERT_THAT(response.Trailer("grpc-status"), Optional(std::string(kOk)))
      << response.DebugString();
  const std::vector<std::string> expected = {
      "x-padded-bin=01",
      "x-unpadded-bin=01",
      "x-joined-bin=000102",
      "x-joined-bin=01",
      "x-joined-bin=0203",
      "x-plain=" + absl::BytesToHexString("hello, world"),
      "x-dup=61",
      "x-dup=62",
      "x-empty-bin=",
  };
  EXPECT_THAT(response.Trailer("x-echo-count"),
              Optional(absl::StrCat(expected.size())));
  std::vector<std::string> seen;
  for (size_t i = 0; i < expected.size(); ++i) {
    seen.push_back(
        response.Trailer(absl::StrCat("x-echo-", i)).value_or("(missing)"));
  }
  EXPECT_THAT(seen, ElementsAreArray(expected)) << response.DebugString();
}

TEST_F(ServerConformanceTest, InvalidBase64MetadataIsInternal) {
  RawRequest request = EchoRequest("md");
  request.headers.emplace_back("x-bad-bin", "!!!not base64");
  const RawResponse response = client_->Call(request);
  ExpectGrpcStatus(response, kInternal);
  EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
              HasSubstr("x-bad-bin"));
}

TEST_F(ServerConformanceTest, DuplicateReservedHeaderIsInternal) {
  RawRequest request = EchoRequest("dup");
  request.headers.emplace_back("grpc-timeout", "10S");
  request.headers.emplace_back("grpc-timeout", "20S");
  ExpectGrpcStatus(client_->Call(request), kInternal);
}

// ---------------------------------------------------------------------------
// Connection-level garbage

TEST_F(ServerConformanceTest, Http1RequestInsteadOfPrefaceIsClosed) {
  const RawBytesResult result = SendRawBytes(
      server_.port(),
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(result.connected) << result.connect_error;
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.closed_by_peer || result.reset_by_peer);
  ExpectServerStillServes();
  ExpectEchoWorks(client_.get());
}

TEST_F(ServerConformanceTest, BinaryGarbageInsteadOfPrefaceIsClosed) {
  std::string garbage;
  for (int i = 0; i < 256; ++i) garbage.push_back(static_cast<char>(i * 37));
  const RawBytesResult result = SendRawBytes(server_.port(), garbage);
  ASSERT_TRUE(result.connected) << result.connect_error;
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.closed_by_peer || result.reset_by_peer);
  ExpectServerStillServes();
}

TEST_F(ServerConformanceTest, TruncatedPrefaceThenSilenceDoesNotBlockOthers) {
  // Half a preface on one connection, left open: others are still served
  // meanwhile.
  RawBytesResult result;
  std::thread stuck([&] {
    result =
        SendRawBytes(server_.port(), std::string(kClientPreface.substr(0, 10)),
                     absl::Seconds(2));
  });
  ExpectServerStillServes();
  ExpectEchoWorks(client_.get());
  stuck.join();
  EXPECT_TRUE(result.connected);
}

bool HasGoAway(const RawBytesResult& result, uint32_t* error_code) {
  for (const RawFrame& frame : result.frames) {
    if (frame.type == NGHTTP2_GOAWAY && frame.payload.size() >= 8) {
      const auto* p = reinterpret_cast<const uint8_t*>(frame.payload.data());
      *error_code = (uint32_t{p[4]} << 24) | (uint32_t{p[5]} << 16) |
                    (uint32_t{p[6]} << 8) | uint32_t{p[7]};
      return true;
    }
  }
  return false;
}

TEST_F(ServerConformanceTest, DataOnStreamZeroGetsGoAwayAndClose) {
  const std::string bytes =
      absl::StrCat(kClientPreface, EncodeFrameHeader(0, NGHTTP2_SETTINGS, 0, 0),
                   EncodeFrameHeader(4, NGHTTP2_DATA, 0, 0), "oops");
  const RawBytesResult result = SendRawBytes(server_.port(), bytes);
  ASSERT_TRUE(result.connected);
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.closed_by_peer || result.reset_by_peer);
  uint32_t code = 0;
  EXPECT_TRUE(HasGoAway(result, &code)) << absl::CHexEscape(result.received);
  EXPECT_EQ(code, NGHTTP2_PROTOCOL_ERROR);
  ExpectServerStillServes();
}

TEST_F(ServerConformanceTest, OversizedFrameGetsGoAwayAndClose) {
  // 1 MiB DATA frame header, over the advertised 16 KiB
  // SETTINGS_MAX_FRAME_SIZE.
  const std::string bytes = absl::StrCat(
      kClientPreface, EncodeFrameHeader(0, NGHTTP2_SETTINGS, 0, 0),
      EncodeFrameHeader(1 << 20, NGHTTP2_DATA, 0, 1), std::string(100, 'z'));
  const RawBytesResult result = SendRawBytes(server_.port(), bytes);
  ASSERT_TRUE(result.connected);
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.closed_by_peer || result.reset_by_peer);
  uint32_t code = 0;
  EXPECT_TRUE(HasGoAway(result, &code)) << absl::CHexEscape(result.received);
  EXPECT_EQ(code, NGHTTP2_FRAME_SIZE_ERROR);
  ExpectServerStillServes();
}

}  // namespace
}  // namespace h2rpc
