// Heap allocations of warm coroutine calls (rpc/coro), counted (not timed)
// on each side: a coroutine client on the channel's loop and coroutine
// handlers, Empty messages, plaintext. The callback forms allocate nothing
// per warm unary call and per message; per whole streaming call they
// allocate what the application makes (its reactor, the stream wrapper:
// //test/e2e:streaming_allocation_test), and the server allocates a server-
// or client-streaming call's single message (request or response) on the
// heap for either form. The coroutine forms keep their frames and call
// states in the recycling allocator, so they allocate nothing more.
#include <algorithm>
#include <functional>
#include <memory>

#include "gtest/gtest.h"
#include "proto/grpc/testing/empty.pb.h"
#include "rpc/channel.h"
#include "rpc/coro/client.h"
#include "rpc/coro/server.h"
#include "rpc/coro/task.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/stub_server.h"

namespace h2rpc {
namespace {

using grpc::testing::Empty;
using testing::AllocationsByRole;
using testing::StubServer;
using testing::ThreadRole;

constexpr char kUnary[] = "/h2rpc.test.CoroAlloc/Unary";
constexpr char kBidi[] = "/h2rpc.test.CoroAlloc/Bidi";
constexpr char kServerStream[] = "/h2rpc.test.CoroAlloc/ServerStream";
constexpr char kClientStream[] = "/h2rpc.test.CoroAlloc/ClientStream";

struct PerCall {
  double client = 1e9;
  double server = 1e9;
};

class CoroAllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.num_loops = 1;
    Server::Builder& builder = server_.builder();
    builder.SetOptions(options);
    coro::RegisterUnary<Empty, Empty>(
        builder, kUnary,
        [](ServerContext*, const Empty*, Empty*) -> coro::Task<Status> {
          co_return Status();
        });
    coro::RegisterBidiStreaming<Empty, Empty>(
        builder, kBidi,
        [](ServerContext*, coro::ServerReaderWriter<Empty, Empty>* stream)
            -> coro::Task<Status> {
          Empty message;
          while (true) {
            const bool read = co_await stream->Read(&message);
            if (!read) break;
            const bool written = co_await stream->Write(message);
            if (!written) break;
          }
          co_return Status();
        });
    coro::RegisterServerStreaming<Empty, Empty>(
        builder, kServerStream,
        [](ServerContext*, const Empty* request,
           coro::ServerWriter<Empty>* writer) -> coro::Task<Status> {
          co_await writer->Write(*request);
          co_await writer->Write(*request);
          co_return Status();
        });
    coro::RegisterClientStreaming<Empty, Empty>(
        builder, kClientStream,
        [](ServerContext*, coro::ServerReader<Empty>* reader,
           Empty*) -> coro::Task<Status> {
          Empty message;
          while (true) {
            const bool read = co_await reader->Read(&message);
            if (!read) break;
          }
          co_return Status();
        });
    ASSERT_TRUE(server_.Start().ok());
    channel_ = server_.NewChannel();
  }

  // Allocations per `call` on each side after `warmup` calls, all awaited
  // in one coroutine (on the channel's loop from its first call on): the
  // fewest of three windows of `calls` calls, per side, so that a one-off
  // (a connection-level frame growing nghttp2's block pool once) does not
  // count.
  PerCall Measure(std::function<coro::Task<void>()> call, int warmup,
                  int calls) {
    auto run = [&]() -> coro::Task<PerCall> {
      for (int i = 0; i < warmup; ++i) {
        co_await call();
      }
      PerCall fewest;
      for (int window = 0; window < 3; ++window) {
        const auto client0 = AllocationsByRole(ThreadRole::kClient);
        const auto other0 = AllocationsByRole(ThreadRole::kOther);
        const auto server0 = AllocationsByRole(ThreadRole::kServer);
        for (int i = 0; i < calls; ++i) {
          co_await call();
        }
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
      co_return fewest;
    };
    return coro::SyncWait(run());
  }

  StubServer server_;
  std::shared_ptr<Channel> channel_;
};

TEST_F(CoroAllocationTest, WarmUnaryCallsAllocateNothing) {
  Empty request;
  Empty response;
  const PerCall per_call = Measure(
      [&]() -> coro::Task<void> {
        ClientContext context;
        const Status status = co_await coro::UnaryCall(
            *channel_, &context, kUnary, request, &response);
        EXPECT_TRUE(status.ok()) << status.ToString();
      },
      200, 1000);
  EXPECT_EQ(per_call.client, 0);
  EXPECT_EQ(per_call.server, 0);
}

TEST_F(CoroAllocationTest, WarmPingPongAllocatesNothing) {
  coro::BidiStreamingCall<Empty, Empty> stream;
  stream.Start(*channel_, kBidi);
  Empty message;
  const PerCall per_message = Measure(
      [&]() -> coro::Task<void> {
        const bool written = co_await stream.Write(message);
        EXPECT_TRUE(written);
        const bool read = co_await stream.Read(&message);
        EXPECT_TRUE(read);
      },
      200, 1000);
  EXPECT_EQ(per_message.client, 0);
  EXPECT_EQ(per_message.server, 0);
  auto finish = [&]() -> coro::Task<Status> {
    co_await stream.WritesDone();
    co_return co_await stream.Finish();
  };
  EXPECT_TRUE(coro::SyncWait(finish()).ok());
}

TEST_F(CoroAllocationTest, WarmStreamingCallsAllocateNothing) {
  Empty message;
  const PerCall bidi = Measure(
      [&]() -> coro::Task<void> {
        coro::BidiStreamingCall<Empty, Empty> stream;
        stream.Start(*channel_, kBidi);
        const bool written = co_await stream.Write(message);
        EXPECT_TRUE(written);
        const bool read = co_await stream.Read(&message);
        EXPECT_TRUE(read);
        const bool half_closed = co_await stream.WritesDone();
        EXPECT_TRUE(half_closed);
        const Status status = co_await stream.Finish();
        EXPECT_TRUE(status.ok());
      },
      200, 200);
  EXPECT_EQ(bidi.client, 0);
  EXPECT_EQ(bidi.server, 0);

  const PerCall server_streaming = Measure(
      [&]() -> coro::Task<void> {
        coro::ServerStreamingCall<Empty, Empty> stream;
        stream.Start(*channel_, kServerStream, message);
        int read = 0;
        while (true) {
          const bool got_one = co_await stream.Read(&message);
          if (!got_one) break;
          ++read;
        }
        EXPECT_EQ(read, 2);
        const Status status = co_await stream.Finish();
        EXPECT_TRUE(status.ok());
      },
      200, 200);
  EXPECT_EQ(server_streaming.client, 0);
  EXPECT_EQ(server_streaming.server, 1) << "the request message";

  const PerCall client_streaming = Measure(
      [&]() -> coro::Task<void> {
        coro::ClientStreamingCall<Empty, Empty> stream;
        stream.Start(*channel_, kClientStream);
        const bool first_written = co_await stream.Write(message);
        EXPECT_TRUE(first_written);
        const bool second_written = co_await stream.Write(message);
        EXPECT_TRUE(second_written);
        const Status status = co_await stream.Finish();
        EXPECT_TRUE(status.ok());
      },
      200, 200);
  EXPECT_EQ(client_streaming.client, 0);
  EXPECT_EQ(client_streaming.server, 1) << "the response message";
}

}  // namespace
}  // namespace h2rpc
