// Heap allocations the forwarder of h2rpc_proxy (tools/h2rpc_proxy/
// forwarder.h) makes per forwarded warm unary call, counted (not timed):
// the allocations of the whole process per call through the proxy less
// those per call straight to the backend, with the same client, backend and
// messages (1 KiB each way). None: the server's streaming call, the
// channel's streaming call and the forwarder's call state are pooled, and
// their buffers (ByteBuffers included) keep their capacity
// (docs/design.md, "The proxy").
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/stub_server.h"
#include "tools/h2rpc_proxy/forwarder.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::proxy::Forwarder;
using ::h2rpc::testing::AllocationsByRole;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::ThreadRole;

constexpr char kEcho[] = "/h2rpc.test.Alloc/Echo";

// Allocations of every thread of the process.
int64_t AllAllocations() {
  return AllocationsByRole(ThreadRole::kClient).allocations +
         AllocationsByRole(ThreadRole::kServer).allocations +
         AllocationsByRole(ThreadRole::kOther).allocations;
}

// Allocations per call of `channel`, after a warm-up: the fewest of three
// windows (a one-off, such as nghttp2's block pool growing once, shows in
// one window only).
double PerCall(Channel& channel, const SimpleRequest& request) {
  SimpleResponse response;
  auto call = [&] {
    ClientContext context;
    const Status status =
        channel.UnaryCall(&context, kEcho, request, &response);
    ASSERT_TRUE(status.ok()) << status.ToString();
  };
  for (int i = 0; i < 200; ++i) call();
  constexpr int kCalls = 1000;
  double fewest = 1e9;
  for (int window = 0; window < 3; ++window) {
    const int64_t before = AllAllocations();
    for (int i = 0; i < kCalls; ++i) call();
    fewest = std::min(fewest,
                      static_cast<double>(AllAllocations() - before) / kCalls);
  }
  return fewest;
}

TEST(ProxyAllocationTest, AForwardedWarmUnaryCallAllocatesNothing) {
  StubServer backend;
  ServerOptions options;
  options.num_loops = 1;
  options.min_sync_threads = 1;
  backend.builder()
      .SetOptions(options)
      .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
          kEcho, [](ServerContext*, const SimpleRequest* request,
                    SimpleResponse* response, UnaryDone done) {
            *response->mutable_payload() = request->payload();
            done(Status());
          });
  ASSERT_TRUE(backend.Start().ok());
  Forwarder forwarder({CreateChannel(backend.target())}, Forwarder::Options());
  StubServer proxy;
  proxy.builder().SetOptions(options);
  forwarder.AddTo(proxy.builder());
  ASSERT_TRUE(proxy.Start().ok());

  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(1024, 'p'));
  const double direct = PerCall(*backend.NewChannel(), request);
  const double proxied = PerCall(*proxy.NewChannel(), request);
  EXPECT_EQ(proxied, direct)
      << "direct " << direct << ", through the proxy " << proxied;
}

}  // namespace
}  // namespace h2rpc
