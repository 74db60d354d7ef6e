// Heap allocations per message on a warm bidi stream (ping-pong: one write
// and one read on each side), counted (not timed). Empty messages keep
// protobuf's own allocations out of the figure: what is left is h2rpc's, and
// its goal is none. Over plaintext and TLS, where OpenSSL's own
// per-record allocations add to it (TlsRecords()).
#include <memory>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "proto/grpc/testing/empty.pb.h"
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

// Echoes every message until the client half-closes.
class PingPongReactor final : public ServerBidiReactor<Empty, Empty> {
 public:
  PingPongReactor() { StartRead(&message_); }
  void OnReadDone(bool ok) override {
    if (ok) {
      StartWrite(&message_);
    } else {
      Finish(Status());
    }
  }
  void OnWriteDone(bool ok) override {
    if (ok) {
      StartRead(&message_);
    } else {
      Finish(Status(StatusCode::kUnknown, "write failed"));
    }
  }
  void OnDone() override { delete this; }

 private:
  Empty message_;
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
            kCallback, [](ServerContext*) { return new PingPongReactor; });
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

TEST_P(StreamingAllocationTest, WarmPingPongAllocatesNothingButTlsRecords) {
  ClientContext context;
  auto stream = channel_->BidiStreamingCall<Empty, Empty>(&context, method());
  Empty message;
  auto ping_pong = [&] {
    ASSERT_TRUE(stream->Write(message));
    ASSERT_TRUE(stream->Read(&message));
  };
  for (int i = 0; i < 200; ++i) ping_pong();
  // This thread is the client's caller: kOther counts for the client.
  const auto client0 = AllocationsByRole(ThreadRole::kClient);
  const auto other0 = AllocationsByRole(ThreadRole::kOther);
  const auto server0 = AllocationsByRole(ThreadRole::kServer);
  constexpr int kMessages = 1000;
  for (int i = 0; i < kMessages; ++i) ping_pong();
  const auto client1 = AllocationsByRole(ThreadRole::kClient);
  const auto other1 = AllocationsByRole(ThreadRole::kOther);
  const auto server1 = AllocationsByRole(ThreadRole::kServer);
  EXPECT_EQ(client1.allocations - client0.allocations + other1.allocations -
                other0.allocations,
            kMessages * TlsRecords());
  EXPECT_EQ(server1.allocations - server0.allocations,
            kMessages * TlsRecords());
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
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
