// Slow readers pinning memory: 64 clients each ask for a 16 MiB unary
// response and then never read. A server that buffered the responses whole
// would hold 1 GiB for them. h2rpc counts bytes waiting to be sent against
// the memory quota (ServerOptions::memory_quota): responses beyond it fail
// their call with RESOURCE_EXHAUSTED instead of being buffered, new calls
// are refused while it is exhausted, and the memory is given back once the
// clients go.
//
// The server runs in this process: its memory is this process's (see
// ProcessMemoryBytes: VmRSS, after malloc_trim). The clients are plain
// sockets that write hand-made HTTP/2 bytes and never
// read; they announce no window, so the HTTP/2 default of 65535 bytes is all
// the server can send each of them.

#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/abuse/process_memory.h"
#include "test/util/loopback_socket.h"
#include "test/util/raw_frames.h"
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
using ::h2rpc::testing::ConnectToLoopback;
using ::h2rpc::testing::DecodeHeaderBlocks;
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::EncodeLiteralHeaderBlock;
using ::h2rpc::testing::FindHeader;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kClientPreface;
using ::h2rpc::testing::ParseFrames;
using ::h2rpc::testing::PercentDecode;
using ::h2rpc::testing::ProcessMemoryBytes;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawHeaders;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::WriteAll;
using ::testing::HasSubstr;
using ::testing::Optional;

constexpr int64_t kMiB = 1 << 20;
constexpr char kRespond[] = "/h2rpc.test.Abuse/Respond";

constexpr int kClients = 64;
constexpr int32_t kResponseBody = 16 << 20;
// The quota: room for four of the 16 MiB responses (64 MiB and 60 bytes
// framed) but not five, and with four in it less than 1/16 free, so it is
// exhausted. Each client lets the server send 65535 bytes of its response.
constexpr size_t kQuota = 66 << 20;
constexpr int kBuffered = 4;
// Beyond the quota, RSS may grow by this margin: each of the two loop
// threads builds a 16 MiB response and serializes it into a 16 MiB send
// buffer (a refused one is dropped at once), plus the allocator's and
// nghttp2's overhead.
constexpr int64_t kMargin = 80 * kMiB;
// Once the clients are gone the server holds about what it held before.
constexpr int64_t kMaxResidue = 64 * kMiB;

// What the server has sent on `fd` so far (without waiting for more).
std::string ReadAvailable(int fd) {
  std::string received;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  return received;
}

std::string RespondRequest(int32_t response_size) {
  SimpleRequest request;
  request.set_response_size(response_size);
  return GrpcFrame(request.SerializeAsString());
}

class SlowReaderMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.memory_quota = kQuota;
    Status status;
    server_ = Server::Builder()
                  .SetOptions(options)
                  .AddListeningPort("127.0.0.1:0", &port_)
                  .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                      kRespond,
                      [](ServerContext*, const SimpleRequest* request,
                         SimpleResponse* response, UnaryDone done) {
                        response->mutable_payload()->mutable_body()->assign(
                            static_cast<size_t>(request->response_size()), 'r');
                        done(Status());
                      })
                  .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  void TearDown() override {
    for (int fd : sockets_) close(fd);
  }

  // One call on a fresh connection that reads its answer.
  RawResponse Call(int32_t response_size) {
    std::string error;
    std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
    if (client == nullptr) {
      RawResponse failed;
      failed.error = error;
      return failed;
    }
    RawRequest request;
    request.headers = GrpcRequestHeaders(kRespond, port_);
    request.body = RespondRequest(response_size);
    return client->Call(request, absl::Seconds(60));
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::vector<int> sockets_;
};

TEST_F(SlowReaderMemoryTest, UnreadResponsesStayWithinTheQuotaAndAreFreed) {
  {
    const RawResponse warm = Call(1000);
    ASSERT_THAT(warm.Trailer("grpc-status"), Optional(std::string("0")))
        << warm.DebugString();
  }
  const int64_t rss_before = ProcessMemoryBytes();
  ASSERT_GT(rss_before, 0);

  // 64 clients ask for 16 MiB each and never read.
  const std::string request_bytes = absl::StrCat(
      kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
      EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""),
      EncodeFrame(
          NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
          EncodeLiteralHeaderBlock(GrpcRequestHeaders(kRespond, port_))),
      EncodeFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1,
                  RespondRequest(kResponseBody)));
  for (int i = 0; i < kClients; ++i) {
    const int fd = ConnectToLoopback(port_);
    ASSERT_GE(fd, 0) << "connect: " << strerror(errno);
    sockets_.push_back(fd);
    ASSERT_TRUE(WriteAll(fd, request_bytes)) << strerror(errno);
  }
  // Wait until every client has its answer's headers (a response, or
  // RESOURCE_EXHAUSTED) waiting in its socket.
  std::vector<std::string> received(sockets_.size());
  std::vector<RawHeaders> answers(sockets_.size());
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (;;) {
    size_t answered = 0;
    for (size_t i = 0; i < sockets_.size(); ++i) {
      if (!answers[i].empty()) {
        ++answered;
        continue;
      }
      received[i] += ReadAvailable(sockets_[i]);
      std::map<uint32_t, std::vector<RawHeaders>> blocks;
      ASSERT_TRUE(DecodeHeaderBlocks(ParseFrames(received[i]), &blocks));
      if (!blocks[1].empty()) {
        answers[i] = blocks[1].front();
        ++answered;
      }
    }
    if (answered == sockets_.size()) break;
    ASSERT_LT(absl::Now(), deadline)
        << answered << " of " << kClients << " clients answered";
    absl::SleepFor(absl::Milliseconds(5));
  }
  const int64_t growth = ProcessMemoryBytes() - rss_before;

  // Meanwhile new calls are refused at once, naming the quota, small or
  // large.
  for (int32_t size : {10, kResponseBody}) {
    const RawResponse refused = Call(size);
    EXPECT_THAT(refused.Trailer("grpc-status"), Optional(std::string("8")))
        << refused.DebugString();
    EXPECT_THAT(PercentDecode(refused.Trailer("grpc-message").value_or("")),
                HasSubstr("(memory_quota)"))
        << refused.DebugString();
  }

  // What each slow client got: the first responses (their headers, then
  // what its window lets through), the others RESOURCE_EXHAUSTED, either
  // for their response or, once the quota was exhausted, at once.
  int buffered = 0;
  int refused = 0;
  for (const RawHeaders& answer : answers) {
    const absl::optional<std::string> status =
        FindHeader(answer, "grpc-status");
    if (!status.has_value()) {
      ++buffered;
    } else if (*status == "8") {
      ++refused;
      EXPECT_THAT(
          PercentDecode(FindHeader(answer, "grpc-message").value_or("")),
          HasSubstr("memory quota"));
    }
  }
  std::printf(
      "%d responses buffered, %d refused; RSS grew by %lld bytes (quota "
      "%zu, margin %lld)\n",
      buffered, refused, static_cast<long long>(growth), kQuota,
      static_cast<long long>(kMargin));
  RecordProperty("rss_growth_bytes", std::to_string(growth));
  EXPECT_EQ(buffered, kBuffered);
  EXPECT_EQ(refused, kClients - kBuffered);
  EXPECT_LT(growth, static_cast<int64_t>(kQuota) + kMargin);

  // The clients leave: the memory comes back and calls succeed again.
  for (int fd : sockets_) close(fd);
  sockets_.clear();
  int64_t residue = ProcessMemoryBytes() - rss_before;
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (residue >= kMaxResidue && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
    residue = ProcessMemoryBytes() - rss_before;
  }
  std::printf("after the clients left, RSS is %lld bytes above the start\n",
              static_cast<long long>(residue));
  EXPECT_LT(residue, kMaxResidue);
  const RawResponse after = Call(1000);
  EXPECT_THAT(after.Trailer("grpc-status"), Optional(std::string("0")))
      << after.DebugString();
}

}  // namespace
}  // namespace h2rpc
