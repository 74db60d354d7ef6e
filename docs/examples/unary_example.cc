// README's example: an h2rpc server and a client calling it. Built and run
// by `tools/bazel test //docs/examples:all`.
#include <cstdio>
#include <memory>
#include <string>

#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

int main() {
  // --- README example starts here ---
  int port = 0;
  h2rpc::Status status;
  std::unique_ptr<h2rpc::Server> server =
      h2rpc::Server::Builder()
          .AddListeningPort("127.0.0.1:0", &port)  // port 0: pick a free one
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              "/grpc.testing.TestService/UnaryCall",
              [](h2rpc::ServerContext* context, const SimpleRequest& request,
                 SimpleResponse* response) {
                response->mutable_payload()->set_body(request.payload().body());
                return h2rpc::Status();  // OK
              })
          .BuildAndStart(&status);

  h2rpc::Channel channel("127.0.0.1:" + std::to_string(port));
  h2rpc::ClientContext context;
  context.set_timeout(absl::Seconds(5));
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  SimpleResponse response;
  status = channel.UnaryCall(&context, "/grpc.testing.TestService/UnaryCall",
                             request, &response);
  std::printf("%s: %s\n", status.ToString().c_str(),
              response.payload().body().c_str());  // OK: hello
  // --- README example ends here ---
  return status.ok() && response.payload().body() == "hello" ? 0 : 1;
}
