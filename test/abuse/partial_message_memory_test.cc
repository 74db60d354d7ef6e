// Partial messages pinning memory: one connection opens 100 streams, each
// declaring a 4 MiB request message and sending all of it but its last
// byte, and never ending. A server that credited the bytes of a message
// being gathered back to the peer at once would hold all 420 MB. h2rpc
// credits them only while the memory quota grants the message
// (ServerOptions::memory_quota, ConnectionOptions::memory_quota_share): the
// peer stalls with its bytes unsent, the server's resident memory stays
// bounded, and once the streams are reset the server serves as before.
//
// The server runs in this process: its growth is this process's (see
// ProcessMemoryBytes: VmRSS, after malloc_trim). The raw client sends one
// shared body on every stream, so its own memory is one copy, taken before the
// baseline.

#include <cstdint>
#include <cstdio>
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
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcPrefix;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::ParseGrpcFrames;
using ::h2rpc::testing::ProcessMemoryBytes;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::testing::HasSubstr;
using ::testing::Optional;

constexpr int64_t kMiB = 1 << 20;
constexpr char kEcho[] = "/h2rpc.test.Abuse/Echo";

constexpr int kStreams = 100;
// The default max_receive_message_size: the largest message a stream may
// declare.
constexpr uint32_t kDeclared = 4 << 20;
// What the default options make of the streams. The connection's quota
// share (memory_quota_share, 32 MiB) also carries the connection's nghttp2
// memory, so it grants 7 of the 4 MiB messages, not 8: those streams send
// every byte and wait for their last. Every other stream waits for a grant
// with its credit withheld, and the waiting streams together may hold at
// most a quarter of connection_window (16 MiB): each holds a full stream
// window (1 MiB, grown by BDP probing up to that quarter), so as many as
// fit in the quarter stay open, stalled, and the rest are refused.
constexpr int kGranted = 7;
constexpr size_t kWaitingLimit = (16 << 20) / 4;
// The server may grow by at most this much under the attack (it held 420 MB
// before the quota). With the default options it holds at most its quota
// share (32 MiB of granted messages) plus the bytes sent without credit
// (partial messages waiting for memory: at most a quarter of the 16 MiB
// connection window, in buffers at most twice that), plus allocator and
// nghttp2 overhead.
constexpr int64_t kMaxGrowth = 128 * kMiB;
// How long a PING may take to be answered: the server works through what
// the attacker sent first, slowly under the sanitizers on a loaded machine.
constexpr absl::Duration kPingTimeout = absl::Seconds(60);

class PartialMessageMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status status;
    server_ = Server::Builder()
                  .AddListeningPort("127.0.0.1:0", &port_)
                  .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
                      kEcho,
                      [](ServerContext*, const SimpleRequest* request,
                         SimpleResponse* response, UnaryDone done) {
                        *response->mutable_payload() = request->payload();
                        done(Status());
                      })
                  .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  // A normal call on a fresh connection is answered.
  void ExpectEchoWorks(absl::string_view text) {
    std::string error;
    std::unique_ptr<RawH2Client> client = RawH2Client::Connect(port_, &error);
    ASSERT_NE(client, nullptr) << error;
    SimpleRequest request;
    request.mutable_payload()->set_body(std::string(text));
    RawRequest raw;
    raw.headers = GrpcRequestHeaders(kEcho, port_);
    raw.body = GrpcFrame(request.SerializeAsString());
    const RawResponse response = client->Call(raw, absl::Seconds(30));
    ASSERT_THAT(response.Trailer("grpc-status"), Optional(std::string("0")))
        << response.DebugString();
    std::vector<std::string> messages;
    ASSERT_TRUE(ParseGrpcFrames(response.body, &messages));
    ASSERT_EQ(messages.size(), 1u);
    SimpleResponse echoed;
    ASSERT_TRUE(echoed.ParseFromString(messages[0]));
    EXPECT_EQ(echoed.payload().body(), text);
  }

  // What every attacking stream sends: a kDeclared-byte message's prefix
  // and all of it but its last byte.
  static std::shared_ptr<const std::string> AllButTheLastByte() {
    auto body = std::make_shared<std::string>(GrpcPrefix(0, kDeclared));
    body->append(kDeclared - 1, 'x');
    return body;
  }

  // Starts `count` open-ended Echo streams on `client`, each sending
  // `body`; their ids go to `ids`.
  void StartStreams(RawH2Client* client,
                    const std::shared_ptr<const std::string>& body, int count,
                    std::vector<int32_t>* ids) {
    for (int i = 0; i < count; ++i) {
      RawRequest request;
      request.headers = GrpcRequestHeaders(kEcho, port_);
      request.shared_body = body;
      request.end_stream = false;
      const int32_t id = client->Start(request);
      ASSERT_GT(id, 0) << client->error();
      ids->push_back(id);
    }
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
};

TEST_F(PartialMessageMemoryTest, HundredStreamsOfAlmostFourMiBStallTheSender) {
  ExpectEchoWorks("warm");
  const std::shared_ptr<const std::string> body = AllButTheLastByte();
  const size_t full = body->size();

  const int64_t rss_before = ProcessMemoryBytes();
  ASSERT_GT(rss_before, 0);

  std::string error;
  std::unique_ptr<RawH2Client> attacker = RawH2Client::Connect(port_, &error);
  ASSERT_NE(attacker, nullptr) << error;
  std::vector<int32_t> ids;
  ASSERT_NO_FATAL_FAILURE(StartStreams(attacker.get(), body, kStreams, &ids));
  auto total_sent = [&] {
    size_t sent = 0;
    for (int32_t id : ids) sent += attacker->Response(id).request_bytes_sent;
    return sent;
  };

  // Drive the attacker until its sending stops: a round in which it sends
  // nothing although the server has read all it sent before (the PING's
  // answer comes after that) and a second has passed for the server's
  // WINDOW_UPDATEs to let it send more. Or until every byte is sent.
  const absl::Time give_up = absl::Now() + absl::Seconds(300);
  for (size_t before = 0;; before = total_sent()) {
    ASSERT_TRUE(attacker->Ping(kPingTimeout)) << attacker->error();
    size_t last_sent = total_sent();
    absl::Time last_progress = absl::Now();
    attacker->RunUntil(
        [&] {
          const size_t sent = total_sent();
          if (sent != last_sent) {
            last_sent = sent;
            last_progress = absl::Now();
          }
          return sent == full * kStreams ||
                 absl::Now() - last_progress >= absl::Seconds(1);
        },
        absl::Seconds(60));
    const size_t sent = total_sent();
    if (sent == before || sent == full * kStreams) break;
    ASSERT_LT(absl::Now(), give_up) << "the attacker kept sending";
  }
  ASSERT_FALSE(attacker->closed()) << attacker->error();

  const int64_t growth = ProcessMemoryBytes() - rss_before;
  int granted = 0;            // open, every byte sent
  int stalled = 0;            // open, with bytes it could not send
  int refused = 0;            // failed by the server for lack of memory
  int other = 0;              // ended otherwise
  size_t stalled_window = 0;  // what each stalled stream sent
  for (int32_t id : ids) {
    const RawResponse response = attacker->Response(id);
    if (response.stream_closed || response.end_stream_received) {
      if (response.Trailer("grpc-status") == std::string("8")) {
        ++refused;
        EXPECT_THAT(response.Trailer("grpc-message").value_or(""),
                    HasSubstr("memory"))
            << response.DebugString();
      } else {
        ++other;
        ADD_FAILURE() << "stream " << id << ": " << response.DebugString();
      }
      continue;
    }
    if (response.request_bytes_sent == full) {
      ++granted;
      continue;
    }
    ++stalled;
    if (stalled_window == 0) stalled_window = response.request_bytes_sent;
    EXPECT_EQ(response.request_bytes_sent, stalled_window)
        << "stream " << id << ": stalled streams hold unequal windows";
  }
  std::printf(
      "attacker sent %zu of %zu bytes; %d streams granted, %d stalled with "
      "%zu bytes each, %d refused; server RSS grew by %lld bytes (limit "
      "%lld)\n",
      total_sent(), full * kStreams, granted, stalled, stalled_window, refused,
      static_cast<long long>(growth), static_cast<long long>(kMaxGrowth));
  RecordProperty("rss_growth_bytes", std::to_string(growth));
  EXPECT_LT(total_sent(), full * kStreams)
      << "the server credited every byte of the partial messages";
  EXPECT_EQ(granted, kGranted);
  ASSERT_GT(stalled, 0) << "no stream is held back by flow control";
  // Each stalled stream exhausted its window; one more would have passed
  // the waiting limit.
  EXPECT_GE(stalled_window, size_t{1} << 20);
  EXPECT_LE(stalled_window, kWaitingLimit);
  EXPECT_EQ(stalled, static_cast<int>(kWaitingLimit / stalled_window));
  EXPECT_EQ(refused, kStreams - kGranted - stalled);
  EXPECT_EQ(other, 0);
  EXPECT_LT(growth, kMaxGrowth);

  // The stalled connection is alive, and other clients are served meanwhile.
  EXPECT_TRUE(attacker->Ping(kPingTimeout));
  ExpectEchoWorks("during the attack");

  // The attacker gives up: its streams are reset, their memory returns.
  for (int32_t id : ids) {
    const RawResponse response = attacker->Response(id);
    if (!response.stream_closed) {
      attacker->ResetStream(id, NGHTTP2_CANCEL);
    }
  }
  EXPECT_TRUE(attacker->Ping(kPingTimeout));
  ExpectEchoWorks("after the attack");
}

// Three times as many streams: once more than
// ServerSession::kMaxMemoryRefusals (256) of them are refused while no
// message arrives, the server ends the connection with
// GOAWAY(ENHANCE_YOUR_CALM), its memory bounded all along, and serves
// others as before.
TEST_F(PartialMessageMemoryTest, RefusalsWithoutWorkEndTheConnection) {
  constexpr int kManyStreams = 3 * kStreams;
  ExpectEchoWorks("warm");
  const std::shared_ptr<const std::string> body = AllButTheLastByte();
  const int64_t rss_before = ProcessMemoryBytes();
  ASSERT_GT(rss_before, 0);

  std::string error;
  std::unique_ptr<RawH2Client> attacker = RawH2Client::Connect(port_, &error);
  ASSERT_NE(attacker, nullptr) << error;
  std::vector<int32_t> ids;
  ASSERT_NO_FATAL_FAILURE(
      StartStreams(attacker.get(), body, kManyStreams, &ids));
  ASSERT_TRUE(attacker->RunUntil([&] { return attacker->goaway_received(); },
                                 absl::Seconds(120)))
      << "no GOAWAY; " << attacker->error();
  const RawResponse last = attacker->Response(ids.back());
  EXPECT_EQ(last.goaway_error_code, NGHTTP2_ENHANCE_YOUR_CALM)
      << last.DebugString();
  int refused = 0;
  for (int32_t id : ids) {
    if (attacker->Response(id).Trailer("grpc-status") == std::string("8")) {
      ++refused;
    }
  }
  EXPECT_GE(refused, 256);
  EXPECT_LT(ProcessMemoryBytes() - rss_before, kMaxGrowth);
  ExpectEchoWorks("after the connection ended");
}

// A quota that could never grant a message of the largest accepted size
// would stall such a message for ever: the server refuses to start.
TEST(MemoryQuotaOptionsTest, QuotaThatCannotHoldALargestMessageIsRefused) {
  struct Case {
    size_t quota;
    size_t share;
    size_t max_receive;
    const char* message;
  };
  for (const Case& c : {
           Case{256 * kMiB, 4 * kMiB, 4 * kMiB,
                "memory_quota_share is 4194304 bytes; it must hold a message "
                "of max_receive_message_size (4194304)"},
           Case{16 * kMiB, 32 * kMiB, 4 * kMiB,
                "memory_quota_share is 33554432 bytes; it must be at most "
                "memory_quota (16777216)"},
       }) {
    ServerOptions options;
    options.memory_quota = c.quota;
    options.connection.memory_quota_share = c.share;
    options.connection.max_receive_message_size = c.max_receive;
    Status status;
    EXPECT_EQ(Server::Builder()
                  .SetOptions(options)
                  .AddListeningPort("127.0.0.1:0")
                  .BuildAndStart(&status),
              nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace h2rpc
