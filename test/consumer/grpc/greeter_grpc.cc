// The greeter on gRPC C++, for test/consumer/run.sh to check that h2rpc's
// greeter calls a gRPC C++ server and serves a gRPC C++ client.
//   greeter_grpc serve ADDRESS   serve helloworld.Greeter until killed
//   greeter_grpc call TARGET     call it once, print the reply
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>

#include "helloworld.grpc.pb.h"

namespace {

using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;

class GreeterService final : public Greeter::Service {
 public:
  grpc::Status SayHello(grpc::ServerContext* context,
                        const HelloRequest* request,
                        HelloReply* reply) override {
    reply->set_message("Hello " + request->name());
    return grpc::Status::OK;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc == 3 ? argv[1] : "";
  if (mode == "call") {
    auto stub = Greeter::NewStub(
        grpc::CreateChannel(argv[2], grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    HelloRequest request;
    request.set_name("world");
    HelloReply reply;
    grpc::Status status = stub->SayHello(&context, request, &reply);
    if (!status.ok()) {
      std::cerr << "SayHello failed: " << status.error_message() << "\n";
      return 1;
    }
    std::cout << "gRPC C++ greeter received: " << reply.message() << "\n";
    return reply.message() == "Hello world" ? 0 : 1;
  }
  if (mode != "serve") {
    std::cerr << "usage: greeter_grpc serve ADDRESS | call TARGET\n";
    return 2;
  }
  GreeterService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(argv[2], grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  std::cout << "gRPC C++ greeter serving on " << argv[2] << std::endl;
  server->Wait();
}
