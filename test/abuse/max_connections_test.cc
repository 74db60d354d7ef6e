// ServerOptions::max_connections: at the limit the server stops accepting, so a
// further client is not served until a connection closes, and then it is, on
// the connection it already opened.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr char kEchoMethod[] = "/grpc.testing.TestService/UnaryCall";

class MaxConnectionsTest : public ::testing::Test {
 protected:
  void StartServer(size_t max_connections) {
    ServerOptions options;
    options.max_connections = max_connections;
    options.num_loops = 2;
    Status status;
    server_ = Server::Builder()
                  .SetOptions(options)
                  .AddListeningPort("127.0.0.1:0", &port_)
                  .RegisterUnary<SimpleRequest, SimpleResponse>(
                      kEchoMethod,
                      [](ServerContext*, const SimpleRequest& request,
                         SimpleResponse* response) {
                        response->mutable_payload()->set_body(
                            request.payload().body());
                        return Status();
                      })
                  .BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
  }

  std::shared_ptr<Channel> NewChannel() {
    return CreateChannel(absl::StrCat("127.0.0.1:", port_));
  }

  // One echo call on `channel` (its own connection) within `timeout`.
  static Status Echo(Channel* channel, absl::Duration timeout) {
    ClientContext context;
    context.set_timeout(timeout);
    SimpleRequest request;
    request.mutable_payload()->set_body("ping");
    SimpleResponse response;
    Status status =
        channel->UnaryCall(&context, kEchoMethod, request, &response);
    if (status.ok() && response.payload().body() != "ping") {
      return Status(StatusCode::kInternal,
                    "wrong echo: " + response.payload().body());
    }
    return status;
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
};

TEST_F(MaxConnectionsTest, AFifthConnectionWaitsUntilOneOfFourCloses) {
  StartServer(4);
  // Four connections, each proven accepted and served.
  std::vector<std::shared_ptr<Channel>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(NewChannel());
    const Status status = Echo(open.back().get(), absl::Seconds(20));
    ASSERT_TRUE(status.ok()) << "connection " << i << ": " << status.ToString();
  }

  // The fifth: its TCP connection completes from the backlog, but the server
  // does not accept it, so its call gets no answer before its deadline.
  std::shared_ptr<Channel> fifth = NewChannel();
  const Status refused = Echo(fifth.get(), absl::Milliseconds(500));
  EXPECT_EQ(refused.code(), StatusCode::kDeadlineExceeded)
      << refused.ToString();
  // The four are still served meanwhile.
  for (auto& channel : open) {
    const Status status = Echo(channel.get(), absl::Seconds(20));
    EXPECT_TRUE(status.ok()) << status.ToString();
  }

  // One closes: the server accepts the fifth.
  open.erase(open.begin());
  const Status served = Echo(fifth.get(), absl::Seconds(20));
  EXPECT_TRUE(served.ok()) << served.ToString();
  // And stops again at four.
  std::shared_ptr<Channel> sixth = NewChannel();
  const Status refused_again = Echo(sixth.get(), absl::Milliseconds(500));
  EXPECT_EQ(refused_again.code(), StatusCode::kDeadlineExceeded)
      << refused_again.ToString();
}

TEST_F(MaxConnectionsTest, ZeroMeansUnlimited) {
  StartServer(0);
  std::vector<std::shared_ptr<Channel>> open;
  for (int i = 0; i < 16; ++i) {
    open.push_back(NewChannel());
    const Status status = Echo(open.back().get(), absl::Seconds(20));
    ASSERT_TRUE(status.ok()) << "connection " << i << ": " << status.ToString();
  }
}

}  // namespace
}  // namespace h2rpc
