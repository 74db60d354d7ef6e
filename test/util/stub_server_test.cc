#include "test/util/stub_server.h"

#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"

namespace h2rpc::testing {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr char kEcho[] = "/test.Stub/Echo";

Status Echo(ServerContext*, const SimpleRequest& request,
            SimpleResponse* response) {
  response->mutable_payload()->set_body(request.payload().body());
  return Status();
}

Status Call(Channel& channel, SimpleResponse* response) {
  ClientContext context;
  context.set_timeout(absl::Seconds(30));
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  return channel.UnaryCall(&context, kEcho, request, response);
}

TEST(StubServerTest, ServesWhatTheCaseRegisteredOnALoopbackPort) {
  StubServer server;
  ServerOptions options;
  options.num_loops = 1;
  server.builder()
      .SetOptions(options)
      .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_GT(server.port(), 0);
  EXPECT_EQ(server.target(), "127.0.0.1:" + std::to_string(server.port()));
  SimpleResponse response;
  const Status status = Call(*server.NewChannel(), &response);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "hello");
}

TEST(StubServerTest, AfterStopCallsFailUnavailable) {
  StubServer server;
  server.builder().RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo);
  ASSERT_TRUE(server.Start().ok());
  std::shared_ptr<Channel> channel = server.NewChannel();
  server.Stop();
  SimpleResponse response;
  EXPECT_EQ(Call(*channel, &response).code(), StatusCode::kUnavailable);
}

TEST(StubServerTest, ABuildErrorIsWhatStartReturns) {
  StubServer server;
  ServerOptions options;
  options.max_sync_threads = 0;  // refused: at least 1
  server.builder().SetOptions(options);
  EXPECT_EQ(server.Start().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace h2rpc::testing
