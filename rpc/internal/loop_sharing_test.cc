#include "rpc/internal/loop_sharing.h"

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/server.h"
#include "test/util/stub_server.h"

namespace h2rpc::internal {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::StubServer;

constexpr char kEcho[] = "/h2rpc.test.Loops/Echo";
constexpr char kRelay[] = "/h2rpc.test.Loops/Relay";

// A server on a channel's loop: its handler runs on that loop's thread and
// calls the backend through the channel; the server shuts down while the
// channel's loop runs on, and the channel still works afterwards.
TEST(LoopSharingTest, AServerOnAChannelsLoopServesThereAndLeavesItRunning) {
  StubServer backend;
  backend.builder().RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
      kEcho, [](ServerContext*, const SimpleRequest* request,
                SimpleResponse* response, UnaryDone done) {
        *response->mutable_payload() = request->payload();
        done(Status());
      });
  ASSERT_TRUE(backend.Start().ok());
  std::shared_ptr<Channel> channel = CreateChannel(backend.target());
  transport::io::EventLoop& loop = ChannelLoop(*channel);

  std::atomic<int> on_other_threads{0};
  int port = 0;
  Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", &port)
      .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
          kRelay, [&](ServerContext* context, const SimpleRequest* request,
                      SimpleResponse* response, UnaryDone done) {
            if (!loop.InLoopThread()) on_other_threads.fetch_add(1);
            auto* child = new ClientContext(*context);
            channel->AsyncUnaryCall(child, kEcho, *request, response,
                                    [&, child, done = std::move(done)](
                                        const Status& status) mutable {
                                      if (!loop.InLoopThread()) {
                                        on_other_threads.fetch_add(1);
                                      }
                                      delete child;
                                      done(status);
                                    });
          });
  ServerBuilderAccess::RunOnLoops(builder, {&loop});
  Status status;
  std::unique_ptr<Server> server = builder.BuildAndStart(&status);
  ASSERT_NE(server, nullptr) << status.ToString();

  std::shared_ptr<Channel> client =
      CreateChannel("127.0.0.1:" + std::to_string(port));
  for (int i = 0; i < 20; ++i) {
    SimpleRequest request;
    request.mutable_payload()->set_body("call " + std::to_string(i));
    SimpleResponse response;
    ClientContext context;
    const Status relayed =
        client->UnaryCall(&context, kRelay, request, &response);
    ASSERT_TRUE(relayed.ok()) << relayed.ToString();
    EXPECT_EQ(response.payload().body(), request.payload().body());
  }
  EXPECT_EQ(on_other_threads.load(), 0);

  server->Shutdown(absl::Now());
  server.reset();
  // The channel's loop still runs, and nothing of the server is left on it.
  SimpleRequest request;
  request.mutable_payload()->set_body("after");
  SimpleResponse response;
  ClientContext context;
  const Status direct = channel->UnaryCall(&context, kEcho, request, &response);
  ASSERT_TRUE(direct.ok()) << direct.ToString();
  EXPECT_EQ(response.payload().body(), "after");
}

}  // namespace
}  // namespace h2rpc::internal
