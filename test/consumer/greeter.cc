// A greeter: serves helloworld.Greeter and calls it.
//   greeter                 serve on a free port of 127.0.0.1, call it once
//   greeter serve ADDRESS   serve on ADDRESS (e.g. 0.0.0.0:50051) until killed
//   greeter call TARGET     call the server at TARGET (e.g. localhost:50051)
#include <iostream>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "helloworld.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/server.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "rpc/version.h"

namespace {

using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;

class GreeterService final : public Greeter::Service {
 public:
  h2rpc::Status SayHello(h2rpc::ServerContext* context,
                         const HelloRequest* request,
                         HelloReply* reply) override {
    reply->set_message("Hello " + request->name());
    return h2rpc::Status();
  }
};

int Call(const std::string& target) {
  Greeter::Stub stub(h2rpc::CreateChannel(target));
  h2rpc::ClientContext context;
  context.set_timeout(absl::Seconds(10));
  HelloRequest request;
  request.set_name("world");
  HelloReply reply;
  h2rpc::Status status = stub.SayHello(&context, request, &reply);
  if (!status.ok()) {
    std::cerr << "SayHello failed: " << status.message() << "\n";
    return 1;
  }
  std::cout << "Greeter received: " << reply.message() << "\n";
  return reply.message() == "Hello world" ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "call" && argc == 3) return Call(argv[2]);
  if (!mode.empty() && !(mode == "serve" && argc == 3)) {
    std::cerr << "usage: greeter [serve ADDRESS | call TARGET]\n";
    return 2;
  }
  GreeterService service;  // outlives the server
  int port = 0;
  h2rpc::Status status;
  h2rpc::Server::Builder builder;
  builder.AddListeningPort(mode.empty() ? "127.0.0.1:0" : argv[2], &port);
  service.AddTo(builder);
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) {
    std::cerr << "server failed: " << status.message() << "\n";
    return 1;
  }
  std::cout << "h2rpc " << h2rpc::Version() << " greeter serving on port "
            << port << std::endl;
  if (!mode.empty()) {
    server->Wait();  // serves until the process is killed
  }
  return Call("127.0.0.1:" + std::to_string(port));
}
