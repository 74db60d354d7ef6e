// Heap allocations per message on a warm bidi stream (ping-pong: one write
// and one read on each side), and per whole warm streaming call, counted
// (not timed). Empty messages keep
// protobuf's own allocations out of the figure: what is left is h2rpc's, and
// its goal is none; so do ByteBuffers, which keep their capacity, between a
// generic client and a generic service. Over plaintext and TLS, where OpenSSL's
// own per-record allocations add to it (TlsRecords()).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "proto/grpc/testing/empty.pb.h"
#include "rpc/byte_buffer.h"
#include "rpc/channel.h"
#include "rpc/credentials.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/stub_server.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::Empty;
using testing::AllocationsByRole;
using testing::StubServer;
using testing::ThreadRole;

constexpr char kSync[] = "/h2rpc.test.Alloc/SyncPingPong";
constexpr char kCallback[] = "/h2rpc.test.Alloc/CallbackPingPong";

// Served by the generic service (no method registers it).
constexpr char kGeneric[] = "/h2rpc.test.Alloc/GenericPingPong";
// The generic ping-pong's message: 1 KiB of serialized bytes.
constexpr size_t kGenericMessageBytes = 1024;

// Echoes every message until the client half-closes.
template <class Message>
class PingPongReactor final : public ServerBidiReactor<Message, Message> {
 public:
  PingPongReactor() { this->StartRead(&message_); }
  void OnReadDone(bool ok) override {
    if (ok) {
      this->StartWrite(&message_);
    } else {
      this->Finish(Status());
    }
  }
  void OnWriteDone(bool ok) override {
    if (ok) {
      this->StartRead(&message_);
    } else {
      this->Finish(Status(StatusCode::kUnknown, "write failed"));
    }
  }
  void OnDone() override { delete this; }

 private:
  Message message_;
};

// The parameters: the method (synchronous or callback handler), and
// whether the connection is TLS.
class StreamingAllocationTest
    : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
 protected:
  void SetUp() override {
    std::shared_ptr<ServerCredentials> server_credentials =
        InsecureServerCredentials();
    std::shared_ptr<ChannelCredentials> channel_credentials =
        InsecureChannelCredentials();
    if (tls()) {
      const auto& pki = transport::tls::testing::GetTestPki();
      SslServerCredentialsOptions server_tls;
      server_tls.pem_key_cert_pairs.push_back(
          {pki.server.private_key_pem, pki.server.cert_chain_pem});
      server_credentials = SslServerCredentials(server_tls);
      SslCredentialsOptions channel_tls;
      channel_tls.pem_root_certs = pki.ca_pem;
      channel_credentials = SslCredentials(channel_tls);
    }
    ServerOptions options;
    options.num_loops = 1;
    options.min_sync_threads = 1;
    server_.builder()
        .SetOptions(options)
        .RegisterBidiStreaming<Empty, Empty>(
            kSync,
            [](ServerContext*, ServerReaderWriter<Empty, Empty>* stream) {
              Empty message;
              while (stream->Read(&message)) {
                if (!stream->Write(message)) break;
              }
              return Status();
            })
        .RegisterCallbackBidiStreaming<Empty, Empty>(
            kCallback,
            [](ServerContext*) { return new PingPongReactor<Empty>; });
    // The generic service in the form the method parameter names.
    if (method() == kSync) {
      server_.builder().RegisterGenericService(
          [](ServerContext*, GenericServerReaderWriter* stream) {
            ByteBuffer message;
            while (stream->Read(&message)) {
              if (!stream->Write(message)) break;
            }
            return Status();
          });
    } else {
      server_.builder().RegisterCallbackGenericService(
          [](ServerContext*) { return new PingPongReactor<ByteBuffer>; });
    }
    const Status status = server_.Start(server_credentials);
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = server_.NewChannel(ChannelOptions(), channel_credentials);
  }

  const char* method() const { return std::get<0>(GetParam()); }
  bool tls() const { return std::get<1>(GetParam()); }
  // What OpenSSL 3.0 itself mallocs (and frees) per ping-pong on each side
  // over TLS: the bookkeeping of its packet writer (WPACKET,
  // crypto/packet.c), 3 per record written and 1 per record read; each side
  // writes a message's record and reads one.
  int64_t TlsRecords() const { return tls() ? 4 : 0; }

  StubServer server_;
  std::shared_ptr<Channel> channel_;
};

// Allocations of the client (the threads of its channel, and this thread,
// its caller) and of the server, in total over `runs` runs of `fn` after
// `warm_up` runs: the fewest of three windows, so what every run costs
// shows and a one-off does not (a connection-level frame queued with a
// message's, such as the BDP estimator's PING, grows nghttp2's block pool by
// one block once, at a moment the timing decides).
struct Allocations {
  int64_t client = INT64_MAX;
  int64_t server = INT64_MAX;
};
template <class Fn>
Allocations FewestAllocations(int warm_up, int runs, Fn fn) {
  for (int i = 0; i < warm_up; ++i) fn();
  Allocations fewest;
  for (int window = 0; window < 3; ++window) {
    const auto client0 = AllocationsByRole(ThreadRole::kClient);
    const auto other0 = AllocationsByRole(ThreadRole::kOther);
    const auto server0 = AllocationsByRole(ThreadRole::kServer);
    for (int i = 0; i < runs; ++i) fn();
    const auto client1 = AllocationsByRole(ThreadRole::kClient);
    const auto other1 = AllocationsByRole(ThreadRole::kOther);
    const auto server1 = AllocationsByRole(ThreadRole::kServer);
    fewest.client =
        std::min(fewest.client, client1.allocations - client0.allocations +
                                    other1.allocations - other0.allocations);
    fewest.server =
        std::min(fewest.server, server1.allocations - server0.allocations);
  }
  return fewest;
}

// Ping-pongs `message` on `stream` and expects no allocation per message
// but OpenSSL's, on each side.
template <class Message, class Stream>
void PingPongCountsNothingButTlsRecords(Stream* stream, Message message,
                                        int64_t tls_records) {
  constexpr int kMessages = 1000;
  const Allocations counted = FewestAllocations(200, kMessages, [&] {
    ASSERT_TRUE(stream->Write(message));
    ASSERT_TRUE(stream->Read(&message));
  });
  EXPECT_EQ(counted.client, kMessages * tls_records);
  EXPECT_EQ(counted.server, kMessages * tls_records);
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_P(StreamingAllocationTest, WarmPingPongAllocatesNothingButTlsRecords) {
  ClientContext context;
  auto stream = channel_->BidiStreamingCall<Empty, Empty>(&context, method());
  PingPongCountsNothingButTlsRecords(stream.get(), Empty(), TlsRecords());
}

// ByteBuffers of 1 KiB between a generic client and the generic service:
// the buffers keep their capacity, so nothing at all. Plaintext only: over
// TLS a kibibyte per message also makes the flow-control WINDOW_UPDATEs
// records of their own, whose OpenSSL allocations depend on when the
// windows are replenished, not on the messages.
TEST_P(StreamingAllocationTest, WarmGenericPingPongAllocatesNothing) {
  if (tls()) GTEST_SKIP() << "plaintext only";
  ClientContext context;
  auto stream =
      channel_->BidiStreamingCall<ByteBuffer, ByteBuffer>(&context, kGeneric);
  PingPongCountsNothingButTlsRecords(
      stream.get(), ByteBuffer(std::string(kGenericMessageBytes, 'g')), 0);
}

// Whole warm streaming calls (start, one ping-pong, half-close, status):
// the call objects are pooled on both sides, so what is left per call is
// the application's own: on the client the stream wrapper
// BidiStreamingCall returns; on the server the callback method's reactor
// (its factory's `new`), nothing for a synchronous handler. Plaintext: TLS
// adds OpenSSL's per-record allocations, which the ping-pong test counts.
TEST_P(StreamingAllocationTest, AWarmCallAllocatesOnlyWhatTheApplicationMakes) {
  if (tls()) GTEST_SKIP() << "plaintext only";
  auto call = [&] {
    ClientContext context;
    auto stream = channel_->BidiStreamingCall<Empty, Empty>(&context, method());
    Empty message;
    ASSERT_TRUE(stream->Write(message));
    ASSERT_TRUE(stream->Read(&message));
    ASSERT_TRUE(stream->WritesDone());
    ASSERT_TRUE(stream->Finish().ok());
  };
  constexpr int kCalls = 200;
  const Allocations counted = FewestAllocations(kCalls, kCalls, call);
  EXPECT_EQ(counted.client, kCalls) << "the stream wrapper";
  EXPECT_EQ(counted.server, method() == kCallback ? kCalls : 0)
      << "the reactor";
}

INSTANTIATE_TEST_SUITE_P(
    SyncAndCallback, StreamingAllocationTest,
    ::testing::Combine(::testing::Values(kSync, kCallback), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<const char*, bool>>& info) {
      return std::string(std::get<0>(info.param) == kSync ? "Sync"
                                                          : "Callback") +
             (std::get<1>(info.param) ? "Tls" : "Plaintext");
    });

}  // namespace
}  // namespace h2rpc
