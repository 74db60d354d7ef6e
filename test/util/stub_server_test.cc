#include "test/util/stub_server.h"

#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>

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
  EXPECT_FALSE(server.started());
}

TEST(StubServerTest, StartedFromAGoodStartUntilStop) {
  StubServer server;
  EXPECT_FALSE(server.started());
  EXPECT_EQ(server.port(), -1);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_TRUE(server.started());
  const int port = server.port();
  server.Stop();
  EXPECT_FALSE(server.started());
  EXPECT_EQ(server.port(), port);
}

TEST(StubServerTest, ListenOnAChosenPortServesAgainWhereAStoppedServerWas) {
  StubServer first;
  first.builder().RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo);
  ASSERT_TRUE(first.Start().ok());
  const int port = first.port();
  std::shared_ptr<Channel> channel = first.NewChannel();
  first.Stop();

  StubServer second;
  second.builder().RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo);
  second.ListenOn("127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(second.Start().ok());
  EXPECT_EQ(second.port(), port);
  EXPECT_EQ(second.target(), first.target());
  // The old channel reconnects to the new server; a call may first see the
  // old connection's end.
  SimpleResponse response;
  Status status = Call(*channel, &response);
  if (!status.ok()) status = Call(*channel, &response);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "hello");
}

TEST(StubServerTest, ListensOnEveryAddressGivenInOrder) {
  char dir[] = "/tmp/h2rpc_stub_server_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s";
  {
    StubServer server;
    server.builder().RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo);
    server.ListenOn("unix:" + path).ListenOn("127.0.0.1:0");
    ASSERT_TRUE(server.Start().ok());
    EXPECT_EQ(server.port(0), 0);
    EXPECT_GT(server.port(1), 0);
    EXPECT_EQ(server.port(2), -1);
    EXPECT_EQ(server.target(), "unix:" + path);
    SimpleResponse response;
    Status status = Call(*server.NewChannel(), &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    status = Call(*CreateChannel("127.0.0.1:" + std::to_string(server.port(1))),
                  &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  rmdir(dir);
}

}  // namespace
}  // namespace h2rpc::testing
