// A hostile client against the server's BDP probing, over a real socket:
// whatever the client does with the server's probe PINGs, the windows the
// server grants stay within their bounds (a stream window of at most a
// quarter of connection_window, a connection window that never grows), the
// server sends one probe at a time, and it keeps serving.
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "test/abuse/process_memory.h"
#include "test/util/loopback_socket.h"
#include "test/util/raw_frames.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"

extern "C" const char* __asan_default_options() {
  return h2rpc::testing::kAsanOptions;
}

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::ConnectToLoopback;
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::EncodeLiteralHeaderBlock;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kClientPreface;
using ::h2rpc::testing::ParseFrames;
using ::h2rpc::testing::ProcessMemoryBytes;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WriteAll;

constexpr int64_t kMiB = 1 << 20;
constexpr char kSink[] = "/test.Bdp/Sink";
constexpr char kEcho[] = "/test.Bdp/Echo";
// The server's probe PINGs carry this opaque data.
constexpr absl::string_view kProbe = "bdpprobe";
// The client sends this much in DATA frames of one gRPC message each.
constexpr int64_t kToSend = 48 * kMiB;
constexpr size_t kFramePayload = 16384;

// Reads the client-streamed messages and discards them, so the server's
// window updates keep coming.
class Sink final : public ServerReadReactor<SimpleRequest> {
 public:
  Sink() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (ok) {
      StartRead(&request_);
    } else {
      Finish(Status());
    }
  }
  void OnDone() override { delete this; }

 private:
  SimpleRequest request_;
};

// A gRPC message of SimpleRequest that fills one DATA frame exactly.
std::string FrameSizedMessage() {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(kFramePayload - 64, 'b'));
  const size_t overhead = request.ByteSizeLong() - (kFramePayload - 64);
  request.mutable_payload()->set_body(
      std::string(kFramePayload - 5 - overhead, 'b'));
  std::string message = GrpcFrame(request.SerializeAsString());
  EXPECT_EQ(message.size(), kFramePayload);
  return message;
}

uint32_t ReadUint32(absl::string_view bytes) {
  return static_cast<uint32_t>(static_cast<uint8_t>(bytes[0])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[2])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[3]));
}

// How the client answers the server's probe PINGs.
enum class ProbeAnswer {
  // Only once it has used all its stream credit: every sample then looks
  // as large as the whole window, the most a client can make the server's
  // estimate grow.
  kAfterTheWholeWindow,
  // Never: no sample ever ends.
  kNever,
};

// What the client saw of the server.
struct Observed {
  int64_t sent = 0;  // DATA payload bytes
  // The largest SETTINGS_INITIAL_WINDOW_SIZE the server advertised.
  uint32_t max_initial_window = 65535;
  // The most credit the server granted at once beyond what was sent.
  int64_t max_stream_credit = 0;
  int64_t max_connection_credit = 0;
  int probes = 0;  // PINGs with the probe's opaque data
  bool goaway = false;
  bool stream_reset = false;
  bool stalled = false;  // no credit came for 10 s
};

// Opens a Sink stream and sends kToSend bytes as fast as the server's
// windows allow, acknowledging SETTINGS and the server's other PINGs at once
// and its probe PINGs as `answer` says.
Observed SendThroughTheWindows(int port, ProbeAnswer answer) {
  Observed seen;
  const int fd = ConnectToLoopback(port);
  EXPECT_GE(fd, 0);
  if (fd < 0) return seen;
  EXPECT_TRUE(WriteAll(
      fd, absl::StrCat(kClientPreface, EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
                       EncodeFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                                   EncodeLiteralHeaderBlock(
                                       GrpcRequestHeaders(kSink, port))))));
  const std::string data = EncodeFrame(NGHTTP2_DATA, 0, 1, FrameSizedMessage());
  int64_t initial_window = 65535;
  int64_t stream_updates = 0;
  int64_t connection_updates = 0;
  std::string held_ack;  // a probe ACK not yet sent
  std::string input;
  absl::Time last_credit = absl::Now();
  while (seen.sent < kToSend && !seen.goaway && !seen.stream_reset) {
    // Everything the server sent so far.
    char buffer[65536];
    for (;;) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) break;
      input.append(buffer, static_cast<size_t>(n));
    }
    size_t consumed = 0;
    std::string answers;
    for (const RawFrame& frame : ParseFrames(input)) {
      consumed += 9 + frame.payload.size();
      switch (frame.type) {
        case NGHTTP2_SETTINGS:
          if (frame.flags & NGHTTP2_FLAG_ACK) break;
          for (size_t i = 0; i + 6 <= frame.payload.size(); i += 6) {
            const uint16_t id = static_cast<uint16_t>(
                static_cast<uint8_t>(frame.payload[i]) << 8 |
                static_cast<uint8_t>(frame.payload[i + 1]));
            if (id != NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE) continue;
            initial_window = ReadUint32(frame.payload.substr(i + 2));
            seen.max_initial_window = std::max(
                seen.max_initial_window, static_cast<uint32_t>(initial_window));
          }
          answers += EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
          break;
        case NGHTTP2_WINDOW_UPDATE: {
          const int64_t increment = ReadUint32(frame.payload) & 0x7fffffff;
          if (frame.stream_id == 0) {
            connection_updates += increment;
          } else if (frame.stream_id == 1) {
            stream_updates += increment;
          }
          last_credit = absl::Now();
          break;
        }
        case NGHTTP2_PING:
          if (frame.flags & NGHTTP2_FLAG_ACK) break;
          if (frame.payload == kProbe) {
            ++seen.probes;
            held_ack =
                EncodeFrame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, frame.payload);
          } else {
            answers +=
                EncodeFrame(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 0, frame.payload);
          }
          break;
        case NGHTTP2_GOAWAY:
          seen.goaway = true;
          break;
        case NGHTTP2_RST_STREAM:
          seen.stream_reset = seen.stream_reset || frame.stream_id == 1;
          break;
      }
    }
    input.erase(0, consumed);
    if (!answers.empty() && !WriteAll(fd, answers)) break;

    const int64_t stream_credit = initial_window + stream_updates - seen.sent;
    const int64_t connection_credit = 65535 + connection_updates - seen.sent;
    seen.max_stream_credit = std::max(seen.max_stream_credit, stream_credit);
    seen.max_connection_credit =
        std::max(seen.max_connection_credit, connection_credit);
    if (std::min(stream_credit, connection_credit) >=
        static_cast<int64_t>(kFramePayload)) {
      if (!WriteAll(fd, data)) break;
      seen.sent += kFramePayload;
      continue;
    }
    // Out of credit: the sample now spans the whole window.
    if (answer == ProbeAnswer::kAfterTheWholeWindow && !held_ack.empty()) {
      if (!WriteAll(fd, held_ack)) break;
      held_ack.clear();
    }
    if (absl::Now() - last_credit > absl::Seconds(10)) {
      seen.stalled = true;
      break;
    }
    pollfd p = {fd, POLLIN, 0};
    poll(&p, 1, 100);
  }
  close(fd);
  return seen;
}

class BdpProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.connection.bdp_probe = true;
    server_.builder()
        .SetOptions(options_)
        .RegisterCallbackClientStreaming<SimpleRequest, SimpleResponse>(
            kSink, [](ServerContext*, SimpleResponse*) { return new Sink(); })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kEcho, [](ServerContext*, const SimpleRequest& request,
                      SimpleResponse* response) {
              response->mutable_payload()->set_body(request.payload().body());
              return Status();
            });
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  Status Echo() {
    ClientContext context;
    context.set_timeout(absl::Seconds(30));
    SimpleRequest request;
    request.mutable_payload()->set_body("still there?");
    SimpleResponse response;
    Status status =
        server_.NewChannel()->UnaryCall(&context, kEcho, request, &response);
    if (status.ok() && response.payload().body() != "still there?") {
      return Status(StatusCode::kInternal, "wrong response");
    }
    return status;
  }

  void Print(const Observed& seen) {
    std::printf(
        "sent %lld bytes; largest initial window %u, stream credit %lld, "
        "connection credit %lld; %d probes\n",
        static_cast<long long>(seen.sent), seen.max_initial_window,
        static_cast<long long>(seen.max_stream_credit),
        static_cast<long long>(seen.max_connection_credit), seen.probes);
  }

  ServerOptions options_;
  StubServer server_;
};

TEST_F(BdpProbeTest, SamplesAsLargeAsTheWindowGrowItOnlyToItsBound) {
  const int64_t memory_before = ProcessMemoryBytes();
  ASSERT_GT(memory_before, 0);
  const Observed seen =
      SendThroughTheWindows(server_.port(), ProbeAnswer::kAfterTheWholeWindow);
  const int64_t growth = ProcessMemoryBytes() - memory_before;
  Print(seen);
  EXPECT_EQ(seen.sent, kToSend);
  EXPECT_FALSE(seen.goaway);
  EXPECT_FALSE(seen.stream_reset);
  EXPECT_FALSE(seen.stalled);
  // The samples grew the stream window, to a quarter of connection_window
  // at most; the connection window never grew.
  const ConnectionOptions& connection = options_.connection;
  EXPECT_GT(seen.max_initial_window, connection.initial_stream_window);
  EXPECT_LE(seen.max_initial_window, connection.connection_window / 4);
  EXPECT_LE(seen.max_stream_credit, connection.connection_window / 4);
  EXPECT_LE(seen.max_connection_credit, connection.connection_window);
  // One probe at a time, none once the window is at its bound, and after a
  // sample that does not grow it the next waits: a few for the whole run.
  EXPECT_GE(seen.probes, 1);
  EXPECT_LE(seen.probes, 16);
  EXPECT_LT(growth, 64 * kMiB);
  const Status echo = Echo();
  EXPECT_TRUE(echo.ok()) << echo.ToString();
}

TEST_F(BdpProbeTest, AnUnansweredProbeIsTheOnlyOneAndGrowsNothing) {
  const Observed seen =
      SendThroughTheWindows(server_.port(), ProbeAnswer::kNever);
  Print(seen);
  EXPECT_EQ(seen.sent, kToSend);
  EXPECT_FALSE(seen.goaway);
  EXPECT_FALSE(seen.stalled);
  EXPECT_EQ(seen.probes, 1);
  EXPECT_EQ(seen.max_initial_window, options_.connection.initial_stream_window);
  const Status echo = Echo();
  EXPECT_TRUE(echo.ok()) << echo.ToString();
}

}  // namespace
}  // namespace h2rpc
