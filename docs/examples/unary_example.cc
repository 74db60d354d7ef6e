// README's example: an h2rpc server and a client calling it, through the
// code generated from proto/grpc/testing/test.proto (TestService; see
// docs/codegen.md). Built and run by `tools/bazel test //docs/examples:all`.
// README.md shows the code between the markers: the two parts, unindented,
// with a blank line between them (test/docs/docs_check_test.py checks it).
#include <cstdio>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::TestService;

// --- README example starts here ---
// The server: override the methods you serve; the others answer UNIMPLEMENTED.
class EchoService final : public TestService::Service {
 public:
  h2rpc::Status UnaryCall(h2rpc::ServerContext* context,
                          const SimpleRequest* request,
                          SimpleResponse* response) override {
    response->mutable_payload()->set_body(request->payload().body());
    return h2rpc::Status();  // OK
  }
};
// --- README example ends here ---

int main() {
  // --- README example starts here ---
  EchoService service;  // must outlive the server
  int port = 0;
  h2rpc::Status status;
  h2rpc::Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", &port);  // port 0: pick a free one
  service.AddTo(builder);  // registers every method of TestService
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);

  std::shared_ptr<h2rpc::Channel> channel =
      h2rpc::CreateChannel("127.0.0.1:" + std::to_string(port));
  TestService::Stub stub(channel);
  h2rpc::ClientContext context;
  context.set_timeout(absl::Seconds(5));
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  SimpleResponse response;
  status = stub.UnaryCall(&context, request, &response);
  // --- README example ends here ---
  std::printf("%s: %s\n", status.ToString().c_str(),
              response.payload().body().c_str());  // OK: hello
  return status.ok() && response.payload().body() == "hello" ? 0 : 1;
}
