// Compressed messages queued for a streaming handler that does not read yet:
// a client sends 200 gzip messages that each inflate to 1 MiB (about 1 KiB
// on the wire, so all of them fit in one stream's flow-control window). The
// server queues them as received and inflates each only when the handler
// reads it, so the backlog holds the wire bytes flow control allows, not
// 200 MiB. Then the handler reads them all, intact and in order.
//
// The server runs in this process: its memory is this process's (see
// ProcessMemoryBytes).

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "rpc/server_stream.h"
#include "test/abuse/process_memory.h"
#include "test/util/raw_h2_client.h"
#include "test/util/wait_for.h"
#include "test/util/zlib_reference.h"

#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() {
  return h2rpc::testing::kAsanOptions;
}
#endif

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::GrpcPrefix;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::ProcessMemoryBytes;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::WaitFor;
using ::h2rpc::testing::ZlibCompress;
using ::testing::Optional;

constexpr int64_t kMiB = 1 << 20;
constexpr char kHold[] = "/test.Backlog/HoldThenRead";
constexpr int kMessages = 200;
constexpr size_t kInflatedPayload = 1 << 20;
// Growth allowed while the backlog waits: the wire bytes (about 200 KiB),
// the connection's buffers, allocator and sanitizer overhead. The messages
// inflated would be 200 MiB.
constexpr int64_t kMaxGrowth = 32 * kMiB;

// Reads nothing until Release(), then every message, checking each; ends
// OK once the client half-closes after exactly kMessages intact messages.
class HoldThenRead final
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  explicit HoldThenRead(std::atomic<HoldThenRead*>* registered) {
    registered->store(this);
  }
  // Any thread, once.
  void Release() { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(read_ == kMessages
                 ? Status()
                 : Status(StatusCode::kInternal,
                          absl::StrCat("read ", read_, " messages")));
      return;
    }
    if (request_.payload().body() != std::string(kInflatedPayload, '\0') ||
        request_.response_size() != read_) {
      Finish(Status(StatusCode::kInternal,
                    absl::StrCat("message ", read_, " is not the one sent")));
      return;
    }
    ++read_;
    StartRead(&request_);
  }
  void OnCancel() override {}
  void OnDone() override { delete this; }

 private:
  SimpleRequest request_;
  int read_ = 0;
};

TEST(CompressedBacklogMemoryTest, QueuedMessagesStayCompressedUntilRead) {
  std::atomic<HoldThenRead*> handler{nullptr};
  int port = 0;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .AddListeningPort("127.0.0.1:0", &port)
          .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
              kHold,
              [&handler](ServerContext*) { return new HoldThenRead(&handler); })
          .BuildAndStart(&status);
  ASSERT_NE(server, nullptr) << status.ToString();

  // Message i: a 1 MiB zero payload, numbered by response_size, gzipped.
  auto body = std::make_shared<std::string>();
  for (int i = 0; i < kMessages; ++i) {
    SimpleRequest request;
    request.set_response_size(i);
    request.mutable_payload()->set_body(std::string(kInflatedPayload, '\0'));
    const std::string compressed =
        ZlibCompress(request.SerializeAsString(), /*gzip=*/true);
    body->append(GrpcPrefix(1, static_cast<uint32_t>(compressed.size())));
    body->append(compressed);
  }
  ASSERT_LT(body->size(), 1u << 20) << "must fit the default stream window";

  const int64_t memory_before = ProcessMemoryBytes();
  ASSERT_GT(memory_before, 0);

  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port, &error);
  ASSERT_NE(client, nullptr) << error;
  RawRequest request;
  request.headers = GrpcRequestHeaders(kHold, port);
  request.headers.emplace_back("grpc-encoding", "gzip");
  request.shared_body = body;
  const int32_t id = client->Start(request);
  ASSERT_GT(id, 0) << client->error();
  // Every byte sent (with END_STREAM), and the server has read them all:
  // it answers a PING sent after them.
  ASSERT_TRUE(client->RunUntil(
      [&] { return client->Response(id).request_bytes_sent == body->size(); },
      absl::Seconds(60)))
      << client->Response(id).DebugString();
  ASSERT_TRUE(client->Ping()) << client->error();
  ASSERT_TRUE(
      WaitFor([&] { return handler.load() != nullptr; }, absl::Seconds(10)));

  const int64_t growth = ProcessMemoryBytes() - memory_before;
  std::printf("%d queued messages of %zu wire bytes: memory grew by %lld\n",
              kMessages, body->size(), static_cast<long long>(growth));
  RecordProperty("memory_growth_bytes", std::to_string(growth));
  EXPECT_LT(growth, kMaxGrowth);

  handler.load()->Release();
  ASSERT_TRUE(client->RunUntil(
      [&] { return client->Response(id).stream_closed; }, absl::Seconds(60)))
      << client->Response(id).DebugString();
  const RawResponse response = client->Response(id);
  EXPECT_THAT(response.Trailer("grpc-status"), Optional(std::string("0")))
      << response.DebugString();
}

}  // namespace
}  // namespace h2rpc
