// Streams opened past SETTINGS_MAX_CONCURRENT_STREAMS by a client that never
// reads: one connection opens 1024 open-ended streams (the default limit),
// then HEADERS for 400,000 more (about 15 bytes each, HPACK-indexed). Each
// excess stream is refused with an RST_STREAM the client never reads, so
// those answers would pile up in the server (nghttp2's stream state and
// queued frames) for as long as it kept reading. Asserted:
//  * a client that acknowledged the server's SETTINGS (it knows the limit)
//    gets GOAWAY(ENHANCE_YOUR_CALM) after ServerSession::kMaxRefusedStreams
//    refusals: the server closes the connection;
//  * one that never acknowledges them is not read from while the server's
//    output to it waits, so the server's memory stays bounded;
// and the server keeps answering other clients.
//
// The server runs in this process: its memory is this process's (see
// ProcessMemoryBytes).

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/server.h"
#include "rpc/server_stream.h"
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
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::GoAwayDebugData;
using ::h2rpc::testing::GoAwayErrorCode;
using ::h2rpc::testing::kClientPreface;
using ::h2rpc::testing::ParseFrames;
using ::h2rpc::testing::ProcessMemoryBytes;
using ::h2rpc::testing::RawFrame;

constexpr int64_t kMiB = 1 << 20;
constexpr char kNeverRead[] = "/test.Flood/NeverRead";
constexpr char kEcho[] = "/test.Flood/Echo";
constexpr int kOpenStreams = 1024;
constexpr int kExcessStreams = 400000;
constexpr int64_t kMaxGrowth = 64 * kMiB;
// The client gives up once the server has taken nothing for this long (it
// stopped reading).
constexpr absl::Duration kStall = absl::Seconds(2);
// Bounds the whole flood.
constexpr absl::Duration kFloodTimeout = absl::Seconds(120);

class NeverRead final
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  void OnCancel() override { Finish(Status()); }
  void OnDone() override { delete this; }
};

// HEADERS frames of gRPC requests on consecutive stream ids, HPACK-encoded
// by nghttp2's deflater: after the first, every field is indexed.
class RequestEncoder {
 public:
  explicit RequestEncoder(int port)
      : authority_(absl::StrCat("127.0.0.1:", port)) {
    EXPECT_EQ(nghttp2_hd_deflate_new(&deflater_, 4096), 0);
  }
  ~RequestEncoder() { nghttp2_hd_deflate_del(deflater_); }

  // Appends the HEADERS of the next stream (open-ended: no END_STREAM).
  void Next(std::string* out) {
    const std::pair<const char*, std::string> fields[] = {
        {":method", "POST"},
        {":scheme", "http"},
        {":path", kNeverRead},
        {":authority", authority_},
        {"content-type", "application/grpc"},
        {"te", "trailers"}};
    nghttp2_nv nv[6];
    for (int i = 0; i < 6; ++i) {
      nv[i] = {reinterpret_cast<uint8_t*>(const_cast<char*>(fields[i].first)),
               reinterpret_cast<uint8_t*>(
                   const_cast<char*>(fields[i].second.data())),
               strlen(fields[i].first), fields[i].second.size(),
               NGHTTP2_NV_FLAG_NONE};
    }
    uint8_t block[512];
    const ssize_t n =
        nghttp2_hd_deflate_hd(deflater_, block, sizeof(block), nv, 6);
    ASSERT_GT(n, 0);
    out->append(EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, next_id_,
                            absl::string_view(reinterpret_cast<char*>(block),
                                              static_cast<size_t>(n))));
    next_id_ += 2;
  }

 private:
  const std::string authority_;
  nghttp2_hd_deflater* deflater_ = nullptr;
  uint32_t next_id_ = 1;
};

// How a flood ended.
struct FloodResult {
  int streams_sent = 0;  // HEADERS frames written whole
  bool stalled = false;  // the server took nothing for kStall
  int error = 0;         // errno of a failed send (the server closed)
  int64_t growth = 0;    // of this process's memory when it ended
  // With `read_after`: the frames the server sent, read once the flood
  // ended until the server closed the connection (or 30 s passed).
  std::vector<RawFrame> frames;
  bool closed_by_server = false;
};

// Reads `fd` until the peer closes it (EOF or a reset) or `timeout` passes;
// returns what was read, and whether the peer closed.
std::string ReadUntilClosed(int fd, absl::Duration timeout, bool* closed) {
  std::string bytes;
  const absl::Time deadline = absl::Now() + timeout;
  *closed = false;
  while (absl::Now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    const int ready = poll(
        &p, 1,
        static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (ready <= 0) continue;
    char buffer[16384];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      bytes.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      *closed = true;
      break;
    }
  }
  return bytes;
}

// Writes the preface, SETTINGS (acknowledging the server's when `ack`),
// kOpenStreams streams and then up to kExcessStreams more, never reading;
// then, with `read_after`, reads what the server sent until it closes.
FloodResult Flood(int port, bool ack, int64_t memory_before,
                  bool read_after = false) {
  FloodResult result;
  // A small window: the server's answers fill the path soon.
  const int fd = ConnectToLoopback(port, /*receive_buffer=*/4096);
  EXPECT_GE(fd, 0);
  RequestEncoder encoder(port);
  std::string pending = absl::StrCat(
      kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
      ack ? EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "") : "");
  int encoded = 0;
  const absl::Time deadline = absl::Now() + kFloodTimeout;
  size_t frame_bytes = 0;
  while (absl::Now() < deadline) {
    while (pending.size() < (64 << 10) &&
           encoded < kOpenStreams + kExcessStreams) {
      const size_t before = pending.size();
      encoder.Next(&pending);
      frame_bytes = pending.size() - before;
      ++encoded;
    }
    if (pending.empty()) break;
    pollfd p = {fd, POLLOUT, 0};
    const int ready = poll(&p, 1, absl::ToInt64Milliseconds(kStall));
    if (ready == 0) {
      result.stalled = true;
      break;
    }
    const ssize_t n =
        send(fd, pending.data(), pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      result.error = errno;
      break;
    }
    pending.erase(0, static_cast<size_t>(n));
  }
  result.streams_sent =
      encoded - static_cast<int>((pending.size() + frame_bytes - 1) /
                                 std::max<size_t>(frame_bytes, 1));
  result.growth = ProcessMemoryBytes() - memory_before;
  if (read_after) {
    result.frames = ParseFrames(
        ReadUntilClosed(fd, absl::Seconds(30), &result.closed_by_server));
  }
  close(fd);
  return result;
}

class RefusedStreamFloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status status;
    server_ =
        Server::Builder()
            .AddListeningPort("127.0.0.1:0", &port_)
            .RegisterCallbackBidiStreaming<SimpleRequest, SimpleResponse>(
                kNeverRead, [](ServerContext*) { return new NeverRead(); })
            .RegisterUnary<SimpleRequest, SimpleResponse>(
                kEcho,
                [](ServerContext*, const SimpleRequest& request,
                   SimpleResponse* response) {
                  response->mutable_payload()->set_body(
                      request.payload().body());
                  return Status();
                })
            .BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
  }

  Status Echo() {
    std::shared_ptr<Channel> channel =
        CreateChannel(absl::StrCat("127.0.0.1:", port_));
    ClientContext context;
    context.set_timeout(absl::Seconds(30));
    SimpleRequest request;
    request.mutable_payload()->set_body("still there?");
    SimpleResponse response;
    Status status = channel->UnaryCall(&context, kEcho, request, &response);
    if (status.ok() && response.payload().body() != "still there?") {
      return Status(StatusCode::kInternal, "wrong response");
    }
    return status;
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
};

TEST_F(RefusedStreamFloodTest, AClientThatKnowsTheLimitIsSentAway) {
  const int64_t memory_before = ProcessMemoryBytes();
  ASSERT_GT(memory_before, 0);
  const FloodResult result =
      Flood(port_, /*ack=*/true, memory_before, /*read_after=*/true);
  std::printf("sent %d streams; stalled %d, error %d; memory grew by %lld\n",
              result.streams_sent, result.stalled, result.error,
              static_cast<long long>(result.growth));
  // The server sent GOAWAY(ENHANCE_YOUR_CALM) and closed the connection.
  // The socket buffers may have taken the whole flood by then; the GOAWAY's
  // last stream id says where the server stopped: right after the streams
  // it may refuse.
  EXPECT_TRUE(result.error != 0 || result.closed_by_server);
  EXPECT_EQ(GoAwayErrorCode(result.frames),
            absl::make_optional<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_EQ(GoAwayDebugData(result.frames),
            absl::make_optional<std::string>("too_many_refused_streams"));
  for (const RawFrame& frame : result.frames) {
    if (frame.type != NGHTTP2_GOAWAY || frame.payload.size() < 4) continue;
    const uint32_t last_stream_id =
        (static_cast<uint32_t>(static_cast<uint8_t>(frame.payload[0])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(frame.payload[1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(frame.payload[2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(frame.payload[3]))) &
        0x7fffffff;
    // Stream ids 1, 3, ...: the open ones, then the 100 refused, then one.
    EXPECT_LE(last_stream_id, 2u * (kOpenStreams + 101) - 1);
  }
  EXPECT_LT(result.growth, kMaxGrowth);
  const Status echo = Echo();
  EXPECT_TRUE(echo.ok()) << echo.ToString();
}

TEST_F(RefusedStreamFloodTest, AClientThatNeverReadsIsNotReadFromEither) {
  const int64_t memory_before = ProcessMemoryBytes();
  ASSERT_GT(memory_before, 0);
  const FloodResult result = Flood(port_, /*ack=*/false, memory_before);
  std::printf("sent %d streams; stalled %d, error %d; memory grew by %lld\n",
              result.streams_sent, result.stalled, result.error,
              static_cast<long long>(result.growth));
  RecordProperty("memory_growth_bytes", std::to_string(result.growth));
  EXPECT_EQ(result.error, 0);
  // The server stopped reading once its answers filled the socket.
  EXPECT_TRUE(result.stalled);
  EXPECT_LT(result.growth, kMaxGrowth);
  const Status echo = Echo();
  EXPECT_TRUE(echo.ok()) << echo.ToString();
}

}  // namespace
}  // namespace h2rpc
