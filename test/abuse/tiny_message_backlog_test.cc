// Empty messages queued for handlers that do not read: 4 connections with
// 16 full-duplex streams each, whose handlers never read (as an interop
// handler blocked writing to a client that grants no window does), and on
// every stream as many zero-length gRPC messages (5 bytes on the wire each)
// as its 1 MiB window lets through: 13.4 million messages, 64 MiB on the
// wire. A queued message costs the server no more than its wire bytes, so
// the backlog stays under them; the server keeps answering other calls.
//
// The server runs in this process: its memory is this process's (see
// ProcessMemoryBytes).

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/server.h"
#include "rpc/server_stream.h"
#include "test/abuse/process_memory.h"
#include "test/util/raw_h2_client.h"

#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() {
  return h2rpc::testing::kAsanOptions;
}
#endif

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::ProcessMemoryBytes;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;

constexpr int64_t kMiB = 1 << 20;
constexpr char kNeverRead[] = "/test.Backlog/NeverRead";
constexpr char kEcho[] = "/test.Backlog/Echo";
constexpr int kConnections = 4;
constexpr int kStreamsPerConnection = 16;
// Zero-length messages filling the server's default 1 MiB stream window.
constexpr size_t kMessagesPerStream = (1 << 20) / 5;
// The wire bytes the server holds: 64 MiB. Its queues hold less (a
// zero-length message is one byte of header), within their doubling.
constexpr int64_t kMaxGrowth = 64 * kMiB;

// Never reads; ends when the client goes away.
class NeverRead final
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  NeverRead() { StartSendInitialMetadata(); }
  void OnCancel() override { Finish(Status()); }
  void OnDone() override { delete this; }
};

TEST(TinyMessageBacklogTest, EmptyMessagesCostNoMoreThanTheirWireBytes) {
  int port = 0;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .AddListeningPort("127.0.0.1:0", &port)
          .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
              kNeverRead, [](ServerContext*) { return new NeverRead(); })
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              kEcho,
              [](ServerContext*, const SimpleRequest& request,
                 SimpleResponse* response) {
                response->mutable_payload()->set_body(request.payload().body());
                return Status();
              })
          .BuildAndStart(&status);
  ASSERT_NE(server, nullptr) << status.ToString();

  auto body = std::make_shared<std::string>(5 * kMessagesPerStream, '\0');
  std::vector<std::unique_ptr<RawH2Client>> clients;
  const int64_t memory_before = ProcessMemoryBytes();
  ASSERT_GT(memory_before, 0);
  for (int c = 0; c < kConnections; ++c) {
    std::string error;
    clients.push_back(RawH2Client::Connect(port, &error));
    RawH2Client* client = clients.back().get();
    ASSERT_NE(client, nullptr) << error;
    RawRequest request;
    request.headers = GrpcRequestHeaders(kNeverRead, port);
    request.shared_body = body;
    request.end_stream = false;
    std::vector<int32_t> ids;
    for (int s = 0; s < kStreamsPerConnection; ++s) {
      ids.push_back(client->Start(request));
      ASSERT_GT(ids.back(), 0) << client->error();
    }
    // Every message sent; the server has read them all once it answers a
    // PING sent after them.
    ASSERT_TRUE(client->RunUntil(
        [&] {
          for (int32_t id : ids) {
            if (client->Response(id).request_bytes_sent < body->size()) {
              return false;
            }
          }
          return true;
        },
        absl::Seconds(120)))
        << client->error();
    ASSERT_TRUE(client->Ping(absl::Seconds(60))) << client->error();
    for (int32_t id : ids) {
      ASSERT_FALSE(client->Response(id).stream_closed)
          << client->Response(id).DebugString();
    }
  }

  const int64_t growth = ProcessMemoryBytes() - memory_before;
  std::printf(
      "%d x %d streams, %zu empty messages each (%zu wire bytes): memory "
      "grew by %lld\n",
      kConnections, kStreamsPerConnection, kMessagesPerStream, body->size(),
      static_cast<long long>(growth));
  RecordProperty("memory_growth_bytes", std::to_string(growth));
  EXPECT_LT(growth, kMaxGrowth);

  // Other calls are still answered.
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("127.0.0.1:", port));
  ClientContext context;
  context.set_timeout(absl::Seconds(30));
  SimpleRequest request;
  request.mutable_payload()->set_body("still there?");
  SimpleResponse response;
  const Status echo = channel->UnaryCall(&context, kEcho, request, &response);
  EXPECT_TRUE(echo.ok()) << echo.ToString();
  EXPECT_EQ(response.payload().body(), "still there?");
  clients.clear();
}

}  // namespace
}  // namespace h2rpc
