// Heap allocations per unary RPC once warm, counted (not timed) on each side.
// Empty messages keep protobuf's own allocations out of the figure, so what is
// left is the transport's: h2rpc's goal is (close to) none. Every test runs
// over plaintext and over TLS, where OpenSSL's own per-record allocations
// add the same figure to every case (TlsRecords()).
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/arena.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/arena_options.h"
#include "rpc/call_credentials.h"
#include "rpc/call_metrics.h"
#include "rpc/channel.h"
#include "rpc/channelz.h"
#include "rpc/credentials.h"
#include "rpc/internal/channelz/channelz_registry.h"
#include "rpc/server.h"
#include "rpc/tracing.h"
#include "test/util/allocation_counter.h"
#include "test/util/stub_server.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using testing::AllocationsByRole;
using testing::StubServer;
using testing::ThreadRole;

constexpr char kSync[] = "/h2rpc.test.Alloc/Sync";
constexpr char kCallback[] = "/h2rpc.test.Alloc/Callback";
constexpr char kCompressedEcho[] = "/h2rpc.test.Alloc/CompressedEcho";
constexpr char kSyncEcho[] = "/h2rpc.test.Alloc/SyncEcho";
// Calls kCallback on this server with a ClientContext made from its own.
constexpr char kRelay[] = "/h2rpc.test.Alloc/Relay";

struct PerRpc {
  double client;
  double server;
};

// The parameter: whether the connection is TLS.
class UnaryAllocationTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    const auto& pki = transport::tls::testing::GetTestPki();
    std::shared_ptr<ServerCredentials> server_credentials =
        InsecureServerCredentials();
    std::shared_ptr<ChannelCredentials> channel_credentials =
        InsecureChannelCredentials();
    if (GetParam()) {
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
        .RegisterUnary<Empty, Empty>(kSync, [](ServerContext*, const Empty&,
                                               Empty*) { return Status(); })
        .RegisterCallbackUnary<Empty, Empty>(
            kCallback, [](ServerContext*, const Empty*, Empty*,
                          UnaryDone done) { done(Status()); })
        .RegisterUnary<Empty, Empty>(
            kRelay,
            [this](ServerContext* context, const Empty& request,
                   Empty* response) {
              ClientContext child(*context);
              return relay_channel_->UnaryCall(&child, kCallback, request,
                                               response);
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kSyncEcho,
            [](ServerContext*, const SimpleRequest& request,
               SimpleResponse* response) {
              response->mutable_payload()->set_body(request.payload().body());
              return Status();
            })
        .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
            kCompressedEcho,
            [](ServerContext* context, const SimpleRequest* request,
               SimpleResponse* response, UnaryDone done) {
              // Answers in the request's algorithm, named in its body.
              const absl::string_view body = request->payload().body();
              context->set_compression_algorithm(
                  body.substr(0, 4) == "gzip" ? CompressionAlgorithm::kGzip
                  : body.substr(0, 7) == "deflate"
                      ? CompressionAlgorithm::kDeflate
                      : CompressionAlgorithm::kIdentity);
              response->mutable_payload()->set_body(request->payload().body());
              done(Status());
            });
    const Status status = server_.Start(server_credentials);
    ASSERT_TRUE(status.ok()) << status.ToString();
    server_credentials_ = server_credentials;
    channel_credentials_ = channel_credentials;
    channel_ = server_.NewChannel(ChannelOptions(), channel_credentials_);
  }

  // Blocking calls from this thread: its allocations count as the client's.
  template <class Request, class Response>
  PerRpc Measure(
      const char* method, const Request& request, Response* response,
      int warmup, int calls,
      CompressionAlgorithm compression = CompressionAlgorithm::kIdentity) {
    auto call = [&] {
      ClientContext context;
      context.set_compression_algorithm(compression);
      const Status status =
          channel_->UnaryCall(&context, method, request, response);
      ASSERT_TRUE(status.ok()) << status.ToString();
      ASSERT_EQ(context.last_message_compressed(),
                compression != CompressionAlgorithm::kIdentity);
    };
    return CountPerCall(call, warmup, calls);
  }

  // Allocations per `call()` on each side, after `warmup` calls: the fewest
  // of kWindows windows of `calls` calls, per side. What every call costs
  // shows in every window; a one-off does not: a connection-level frame
  // (the BDP estimator's PING, or the ACK of the peer's) that happens to be
  // queued with a call's frames grows nghttp2's block pool by one block
  // (Nghttp2MemoryPool), once, at a moment the timing decides.
  template <class Call>
  PerRpc CountPerCall(Call call, int warmup, int calls) {
    constexpr int kWindows = 3;
    for (int i = 0; i < warmup; ++i) call();
    PerRpc fewest{1e9, 1e9};
    for (int window = 0; window < kWindows; ++window) {
      const auto client0 = AllocationsByRole(ThreadRole::kClient);
      const auto other0 = AllocationsByRole(ThreadRole::kOther);
      const auto server0 = AllocationsByRole(ThreadRole::kServer);
      for (int i = 0; i < calls; ++i) call();
      const auto client1 = AllocationsByRole(ThreadRole::kClient);
      const auto other1 = AllocationsByRole(ThreadRole::kOther);
      const auto server1 = AllocationsByRole(ThreadRole::kServer);
      fewest.client = std::min(
          fewest.client,
          static_cast<double>(client1.allocations - client0.allocations +
                              other1.allocations - other0.allocations) /
              calls);
      fewest.server = std::min(
          fewest.server,
          static_cast<double>(server1.allocations - server0.allocations) /
              calls);
    }
    return fewest;
  }

  // What OpenSSL 3.0 itself mallocs (and frees) per call on each side over
  // TLS: the bookkeeping of its packet writer (WPACKET, crypto/packet.c), 3
  // per record written and 1 per record read, and each side of a unary call
  // writes one record and reads one.
  double TlsRecords() const { return GetParam() ? 4.0 : 0.0; }

  StubServer server_;
  std::shared_ptr<ServerCredentials> server_credentials_;
  std::shared_ptr<ChannelCredentials> channel_credentials_;
  std::shared_ptr<Channel> channel_;
  // kRelay's, made by the test that calls it (before its first call).
  std::shared_ptr<Channel> relay_channel_;
};

INSTANTIATE_TEST_SUITE_P(PlaintextAndTls, UnaryAllocationTest,
                         ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Tls" : "Plaintext";
                         });

TEST_P(UnaryAllocationTest, WarmCallbackCallsAllocateNothingButTlsRecords) {
  Empty response;
  const PerRpc per_rpc = Measure(kCallback, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
}

// round_robin over two subchannels (two connections to the server): a
// pick per call costs no allocation either.
TEST_P(UnaryAllocationTest, WarmRoundRobinCallsAllocateNothingButTlsRecords) {
  ChannelOptions options;
  options.lb_policy = "round_robin";
  const std::string address = server_.target();
  channel_ = CreateChannel("ipv4:" + address + "," + address,
                           channel_credentials_, options);
  Empty response;
  const PerRpc per_rpc = Measure(kCallback, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
}

// An access token on the channel: the request's headers point at the
// credentials' own copy, and the server keeps it in the storage it reuses.
// TLS only: a plaintext TCP channel refuses call credentials.
TEST_P(UnaryAllocationTest, WarmCallsWithAnAccessTokenAllocateNothingMore) {
  if (!GetParam()) GTEST_SKIP() << "call credentials need a secure channel";
  channel_ = server_.NewChannel(
      ChannelOptions(),
      CompositeChannelCredentials(channel_credentials_,
                                  AccessTokenCredentials("a-static-token")));
  Empty response;
  const PerRpc per_rpc = Measure(kCallback, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
}

// A plugin that never blocks runs on the calling thread into storage the
// call and the thread reuse: nothing more is allocated for it than what the
// plugin itself allocates (nothing, for this one).
class FixedTokenPlugin : public MetadataCredentialsPlugin {
 public:
  bool IsBlocking() const override { return false; }
  Status GetMetadata(const AuthMetadataContext&, Metadata* metadata) override {
    metadata->Add("authorization", "Bearer from-a-plugin");
    return Status();
  }
};

TEST_P(UnaryAllocationTest,
       WarmCallsWithANonBlockingPluginAllocateNothingMore) {
  if (!GetParam()) GTEST_SKIP() << "call credentials need a secure channel";
  channel_ = server_.NewChannel(
      ChannelOptions(),
      CompositeChannelCredentials(
          channel_credentials_,
          MetadataCredentialsFromPlugin(std::make_unique<FixedTokenPlugin>())));
  Empty response;
  const PerRpc per_rpc = Measure(kCallback, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
}

// CallMetrics on both sides (one object for both): recording a call of a
// method and status seen before allocates nothing.
TEST_P(UnaryAllocationTest, WarmCallsWithCallMetricsAllocateNothingMore) {
  auto metrics = std::make_shared<CallMetrics>();
  StubServer server;
  ServerOptions options;
  options.num_loops = 1;
  options.metrics = metrics;
  server.builder().SetOptions(options).RegisterCallbackUnary<Empty, Empty>(
      kCallback, [](ServerContext*, const Empty*, Empty*, UnaryDone done) {
        done(Status());
      });
  ASSERT_TRUE(server.Start(server_credentials_).ok());
  ChannelOptions channel_options;
  channel_options.metrics = metrics;
  channel_ = server.NewChannel(channel_options, channel_credentials_);
  Empty response;
  const PerRpc per_rpc = Measure(kCallback, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
  // And every call was recorded (the server's last one perhaps not yet).
  const CallMetricsSnapshot snapshot = metrics->Snapshot();
  ASSERT_EQ(snapshot.client.size(), 1u);
  EXPECT_EQ(snapshot.client[0].call_duration.count, 200u + 3 * 1000);
  ASSERT_EQ(snapshot.server_started.size(), 1u);
  EXPECT_EQ(snapshot.server_started[0].calls, 200u + 3 * 1000);
  channel_.reset();
}

// channelz on both sides: counting a call, its stream and its messages
// allocates nothing.
TEST_P(UnaryAllocationTest, WarmCallsWithChannelzAllocateNothingMore) {
  auto channelz = std::make_shared<Channelz>();
  StubServer server;
  ServerOptions options;
  options.num_loops = 1;
  options.channelz = channelz;
  server.builder().SetOptions(options).RegisterCallbackUnary<Empty, Empty>(
      kCallback, [](ServerContext*, const Empty*, Empty*, UnaryDone done) {
        done(Status());
      });
  ASSERT_TRUE(server.Start(server_credentials_).ok());
  ChannelOptions channel_options;
  channel_options.channelz = channelz;
  channel_ = server.NewChannel(channel_options, channel_credentials_);
  Empty response;
  const PerRpc per_rpc = Measure(kCallback, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
  // And every call was counted.
  internal::ChannelzRegistry& registry =
      internal::ChannelzAccess::Registry(*channelz);
  const auto channels = registry.TopChannels(0, 0);
  ASSERT_EQ(channels.entries.size(), 1u);
  EXPECT_EQ(channels.entries[0].calls.succeeded, 200u + 3 * 1000);
  channel_.reset();
}

// Tracing on both sides, calls not sampled: drawing ids and sending and
// parsing traceparent allocates nothing.
class NullExporter : public SpanExporter {
 public:
  Status Export(const std::vector<SpanData>&) override { return Status(); }
};

TEST_P(UnaryAllocationTest, WarmUnsampledTracedCallsAllocateNothingMore) {
  TracerOptions tracer_options;
  tracer_options.exporter = std::make_shared<NullExporter>();
  tracer_options.sampling_probability = 0;
  auto tracer = std::make_shared<Tracer>(tracer_options);
  StubServer server;
  ServerOptions options;
  options.num_loops = 1;
  options.tracer = tracer;
  std::atomic<int> traced{0};
  server.builder().SetOptions(options).RegisterCallbackUnary<Empty, Empty>(
      kCallback,
      [&traced](ServerContext* context, const Empty*, Empty*, UnaryDone done) {
        if (context->trace_context().valid()) traced.fetch_add(1);
        done(Status());
      });
  ASSERT_TRUE(server.Start(server_credentials_).ok());
  ChannelOptions channel_options;
  channel_options.tracer = tracer;
  channel_ = server.NewChannel(channel_options, channel_credentials_);
  Empty response;
  const PerRpc per_rpc = Measure(kCallback, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
  // Every call carried a trace context, and none was recorded.
  EXPECT_EQ(traced.load(), 200 + 3 * 1000);
  EXPECT_EQ(tracer->stats().ended, 0u);
  channel_.reset();
}

TEST_P(UnaryAllocationTest, WarmSyncCallsAllocateNothingButTlsRecords) {
  Empty response;
  const PerRpc per_rpc = Measure(kSync, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client, TlsRecords());
  EXPECT_EQ(per_rpc.server, TlsRecords());
}

// A handler's call with a ClientContext made from its ServerContext (linked
// for cancellation, the deadline inherited) costs what two plain calls do.
// The relay's own call runs on the server's worker thread and the channel
// loop it calls through counts as a client's, so the sum of both sides is
// what is compared.
TEST_P(UnaryAllocationTest, WarmPropagatingCallsAllocateNothingButTlsRecords) {
  relay_channel_ = server_.NewChannel(ChannelOptions(), channel_credentials_);
  Empty response;
  const PerRpc per_rpc = Measure(kRelay, Empty(), &response, 200, 1000);
  EXPECT_EQ(per_rpc.client + per_rpc.server, 4 * TlsRecords());
}

// The request and response live on the server call's arena: with a
// sub-message and a 1 KiB bytes field each way, the server allocates only the
// two strings' contents (protobuf keeps those on the heap even for arena
// messages), not the sub-messages and string objects around them. A
// synchronous handler fills the response on a worker thread, for which the
// arena takes a block of that thread's own: a recycled one.
TEST_P(UnaryAllocationTest,
       WarmServerAllocatesOnlyLongStringContentsAndTlsRecords) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(1024, 'a'));
  SimpleResponse response;
  const PerRpc callback =
      Measure(kCompressedEcho, request, &response, 200, 1000);
  EXPECT_EQ(response.payload().body(), request.payload().body());
  EXPECT_EQ(callback.server, 2.0 + TlsRecords());
  response.Clear();
  const PerRpc sync = Measure(kSyncEcho, request, &response, 200, 1000);
  EXPECT_EQ(response.payload().body(), request.payload().body());
  EXPECT_EQ(sync.server, 2.0 + TlsRecords());
}

// The client parses into the caller's response. A reused heap message costs
// three allocations per call: protobuf 3.21's generated Clear() (run by every
// parse) deletes the `payload` sub-message, so the parse allocates a new
// Payload, its body's string object and the body's contents. A response on
// an arena the caller resets between calls (with a first block of its own)
// costs only the contents, when the arena recycles the block protobuf gives
// it for the loop thread that parses (RecyclingArenaOptions).
TEST_P(UnaryAllocationTest,
       WarmClientAllocatesOnlyLongStringContentsAndTlsRecords) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(1024, 'a'));
  SimpleResponse heap_response;
  const PerRpc heap =
      Measure(kCompressedEcho, request, &heap_response, 200, 1000);
  EXPECT_EQ(heap.client, 3.0 + TlsRecords());

  alignas(8) char first_block[4096];
  google::protobuf::Arena arena(
      RecyclingArenaOptions(first_block, sizeof(first_block)));
  auto call = [&] {
    arena.Reset();
    auto* response =
        google::protobuf::Arena::CreateMessage<SimpleResponse>(&arena);
    ClientContext context;
    const Status status =
        channel_->UnaryCall(&context, kCompressedEcho, request, response);
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_EQ(response->payload().body(), request.payload().body());
  };
  EXPECT_EQ(CountPerCall(call, 200, 1000).client, 1.0 + TlsRecords());
}

// Compression reuses each thread's codec and scratch buffers: a warm
// compressed call allocates exactly what the same call uncompressed does
// (protobuf's own allocations for the message's sub-message and strings).
TEST_P(UnaryAllocationTest, WarmCompressedCallsAllocateNoMoreThanPlainOnes) {
  auto measure = [&](CompressionAlgorithm algorithm) {
    SimpleRequest request;
    // The server answers in the algorithm the body starts with.
    request.mutable_payload()->set_body(
        std::string(CompressionAlgorithmName(algorithm)) +
        std::string(1024, 'a'));
    SimpleResponse response;
    const PerRpc per_rpc =
        Measure(kCompressedEcho, request, &response, 200, 1000, algorithm);
    EXPECT_EQ(response.payload().body(), request.payload().body());
    return per_rpc;
  };
  const PerRpc plain = measure(CompressionAlgorithm::kIdentity);
  for (CompressionAlgorithm algorithm :
       {CompressionAlgorithm::kGzip, CompressionAlgorithm::kDeflate}) {
    const PerRpc compressed = measure(algorithm);
    EXPECT_EQ(compressed.client, plain.client) << static_cast<int>(algorithm);
    EXPECT_EQ(compressed.server, plain.server) << static_cast<int>(algorithm);
  }
}

}  // namespace
}  // namespace h2rpc
