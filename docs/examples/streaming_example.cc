// A bidirectional stream (TestService's FullDuplexCall, generated from
// proto/grpc/testing/test.proto), synchronous on the server (blocking reads
// and writes on a worker thread) and blocking on the client. Built and run
// by `tools/bazel test //docs/examples:all`.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"

using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;

class EchoService final : public TestService::Service {
 public:
  h2rpc::Status FullDuplexCall(
      h2rpc::ServerContext* context,
      h2rpc::ServerReaderWriter<StreamingOutputCallResponse,
                                StreamingOutputCallRequest>* stream) override {
    StreamingOutputCallRequest request;
    StreamingOutputCallResponse response;
    // Read returns false once the client has half-closed.
    while (stream->Read(&request)) {
      response.mutable_payload()->set_body(request.payload().body());
      // Blocks while the client is not reading (backpressure).
      if (!stream->Write(response)) break;  // call cancelled
    }
    return h2rpc::Status();
  }
};

int main() {
  EchoService service;
  int port = 0;
  h2rpc::Status status;
  h2rpc::Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", &port);
  service.AddTo(builder);
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);

  std::shared_ptr<h2rpc::Channel> channel =
      h2rpc::CreateChannel("127.0.0.1:" + std::to_string(port));
  TestService::Stub stub(channel);
  h2rpc::ClientContext context;
  context.set_timeout(absl::Seconds(5));
  auto stream = stub.FullDuplexCall(&context);  // a ClientReaderWriter
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  for (const char* word : {"ping", "pong"}) {
    request.mutable_payload()->set_body(word);
    stream->Write(request);
    stream->Read(&response);  // the echo of `word`
  }
  stream->WritesDone();  // half-close: the server's Read returns false
  status = stream->Finish();

  if (!status.ok() || response.payload().body() != "pong") {
    std::fprintf(stderr, "unexpected: %s, '%s'\n", status.ToString().c_str(),
                 response.payload().body().c_str());
    return 1;
  }
  std::printf("echoed '%s', status OK\n", response.payload().body().c_str());
  return 0;
}
