// A peer asking for a response larger than the server may or can send: a
// 10-byte UnaryCall with response_size = 2147483647 makes the handler build
// a 2 GiB response, which protobuf would abort the process rather than
// serialize (it stops at INT_MAX bytes). Asserted: that call alone fails with
// RESOURCE_EXHAUSTED and the server keeps serving; the same for
// max_send_message_size on the server and on a Channel.
#include <atomic>
#include <climits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/server.h"

#if defined(__SANITIZE_THREAD__)
#define H2RPC_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define H2RPC_UNDER_TSAN 1
#endif
#endif

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/grpc.testing.TestService/UnaryCall";
constexpr char kStreaming[] = "/grpc.testing.TestService/StreamingOutputCall";
constexpr absl::Duration kCallTimeout = absl::Seconds(60);

// Fills a response of `response_size` payload bytes, as the interop
// server's UnaryCall does.
void FillResponse(const SimpleRequest& request, SimpleResponse* response) {
  response->mutable_payload()->mutable_body()->resize(
      static_cast<size_t>(request.response_size()));
}

class OversizedMessageTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = ServerOptions()) {
    Status status;
    server_ = Server::Builder()
                  .SetOptions(options)
                  .AddListeningPort("127.0.0.1:0", &port_)
                  .RegisterUnary<SimpleRequest, SimpleResponse>(
                      kUnary,
                      [this](ServerContext*, const SimpleRequest& request,
                             SimpleResponse* response) {
                        handled_.fetch_add(1);
                        FillResponse(request, response);
                        return Status();
                      })
                  .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
                      kStreaming,
                      [this](ServerContext*, const SimpleRequest& request,
                             ServerWriter<SimpleResponse>* writer) {
                        handled_.fetch_add(1);
                        SimpleResponse response;
                        FillResponse(request, &response);
                        if (!writer->Write(response)) {
                          return Status(StatusCode::kUnknown, "write failed");
                        }
                        return Status();
                      })
                  .BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
  }

  std::shared_ptr<Channel> NewChannel(
      ChannelOptions options = ChannelOptions()) {
    return CreateChannel(absl::StrCat("127.0.0.1:", port_), options);
  }

  static Status Unary(Channel* channel, int32_t response_size,
                      size_t request_size = 0) {
    ClientContext context;
    context.set_timeout(kCallTimeout);
    SimpleRequest request;
    request.set_response_size(response_size);
    request.mutable_payload()->mutable_body()->resize(request_size);
    SimpleResponse response;
    Status status = channel->UnaryCall(&context, kUnary, request, &response);
    if (status.ok() && response.payload().body().size() !=
                           static_cast<size_t>(response_size)) {
      return Status(StatusCode::kInternal, "wrong response size");
    }
    return status;
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::atomic<int> handled_{0};
};

TEST_F(OversizedMessageTest, ResponseBeyondProtobufsLimitFailsOnlyItsCall) {
#ifdef H2RPC_UNDER_TSAN
  // The handler builds a 2 GiB response; ThreadSanitizer's shadow memory
  // makes that too costly. ASan and plain builds run it.
  GTEST_SKIP() << "allocates 2 GiB; skipped under ThreadSanitizer";
#endif
  StartServer();
  std::shared_ptr<Channel> channel = NewChannel();
  ASSERT_TRUE(Unary(channel.get(), 10).ok());

  // Payload: 1 + 5 + 2147483647 bytes; SimpleResponse: 1 + 5 + that. The
  // default max_send_message_size is protobuf's limit, INT_MAX.
  const Status status = Unary(channel.get(), INT_MAX);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_EQ(status.message(),
            "sent message of 2147483659 bytes exceeds the limit of "
            "2147483647 (max_send_message_size)");

  // The server is still there, on the same connection and a new one.
  EXPECT_TRUE(Unary(channel.get(), 1000).ok());
  EXPECT_TRUE(Unary(NewChannel().get(), 1000).ok());
}

TEST_F(OversizedMessageTest, ServerRefusesResponsesAboveMaxSendMessageSize) {
  ServerOptions options;
  options.connection.max_send_message_size = 1 << 20;
  StartServer(options);
  std::shared_ptr<Channel> channel = NewChannel();

  const Status status = Unary(channel.get(), 2 << 20);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("exceeds the limit of 1048576 "
                                          "(max_send_message_size)"));
  EXPECT_TRUE(Unary(channel.get(), 512 << 10).ok());

  // A streaming write fails its call the same way.
  ClientContext context;
  context.set_timeout(kCallTimeout);
  SimpleRequest request;
  request.set_response_size(2 << 20);
  auto reader = channel->ServerStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kStreaming, request);
  SimpleResponse response;
  EXPECT_FALSE(reader->Read(&response));
  const Status streaming_status = reader->Finish();
  EXPECT_EQ(streaming_status.code(), StatusCode::kResourceExhausted)
      << streaming_status.ToString();
  EXPECT_THAT(streaming_status.message(),
              HasSubstr("exceeds the limit of 1048576 "
                        "(max_send_message_size)"));
  EXPECT_TRUE(Unary(channel.get(), 1000).ok());
}

TEST_F(OversizedMessageTest, ClientRefusesRequestsAboveMaxSendMessageSize) {
  StartServer();
  ChannelOptions options;
  options.connection.max_send_message_size = 1 << 20;
  std::shared_ptr<Channel> channel = NewChannel(options);

  const Status status = Unary(channel.get(), 10, /*request_size=*/2 << 20);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("exceeds the limit of 1048576 "
                                          "(max_send_message_size)"));
  // Refused before it was sent: the server never ran a handler for it.
  EXPECT_EQ(handled_.load(), 0);
  EXPECT_TRUE(Unary(channel.get(), 10, /*request_size=*/1000).ok());
  EXPECT_EQ(handled_.load(), 1);
}

}  // namespace
}  // namespace h2rpc
