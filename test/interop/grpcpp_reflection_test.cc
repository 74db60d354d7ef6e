// A real reflection client: gRPC C++ 1.51's grpc.reflection.v1alpha stub
// (grpc_cpp_plugin's code, //proto:reflection_grpc_proto) against h2rpc's
// ReflectionService:
//   - h2rpc_interop_server (a child process, found through the
//     H2RPC_INTEROP_SERVER environment variable the BUILD rule sets): the
//     services it lists; the file declaring grpc.testing.TestService, with
//     its dependencies, from which the client builds a descriptor pool and
//     finds UnaryCall's input type, as grpc_cli does; the health service's
//     file; NOT_FOUND for an unknown symbol, the stream going on; the end of
//     the stream on the client's half-close;
//   - in this process, on an h2rpc Server: requests written together
//     answered in order, and a cancelled stream ending on the server.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/descriptor_database.h"
#include "gtest/gtest.h"
#include "proto/grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "proto/grpc/reflection/v1alpha/reflection.pb.h"
#include "rpc/reflection_service.h"
#include "rpc/server.h"
#include "rpc/status.h"
#include "test/interop/interop_server_process.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using google::protobuf::FileDescriptorProto;
using grpc::reflection::v1alpha::ServerReflection;
using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;
using ::h2rpc::testing::InteropServerProcess;
using ::h2rpc::testing::kHangTimeout;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using GrpcppStream =
    grpc::ClientReaderWriter<ServerReflectionRequest, ServerReflectionResponse>;

// A gRPC C++ reflection stream to 127.0.0.1:`port`, with a deadline of
// kHangTimeout.
class GrpcppReflectionClient {
 public:
  explicit GrpcppReflectionClient(int port)
      : stub_(ServerReflection::NewStub(
            grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                grpc::InsecureChannelCredentials()))) {
    context_.set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoSeconds(kHangTimeout));
    stream_ = stub_->ServerReflectionInfo(&context_);
  }

  // Sends `request` and reads its answer; false if the stream ended.
  bool Ask(const ServerReflectionRequest& request,
           ServerReflectionResponse* response) {
    return stream_->Write(request) && stream_->Read(response);
  }
  GrpcppStream& stream() { return *stream_; }
  grpc::ClientContext& context() { return context_; }

 private:
  std::unique_ptr<ServerReflection::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<GrpcppStream> stream_;
};

ServerReflectionRequest SymbolRequest(const std::string& symbol) {
  ServerReflectionRequest request;
  request.set_file_containing_symbol(symbol);
  return request;
}

// The files of `response`, parsed (a file that does not parse is left out,
// which the callers' checks of the names catch).
std::vector<FileDescriptorProto> Files(
    const ServerReflectionResponse& response) {
  std::vector<FileDescriptorProto> files;
  for (const std::string& bytes :
       response.file_descriptor_response().file_descriptor_proto()) {
    FileDescriptorProto file;
    if (file.ParseFromString(bytes)) files.push_back(std::move(file));
  }
  return files;
}

std::vector<std::string> FileNames(const ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const FileDescriptorProto& file : Files(response)) {
    names.push_back(file.name());
  }
  return names;
}

TEST(GrpcppReflectionTest, DescribesTheInteropServer) {
  const char* path = std::getenv("H2RPC_INTEROP_SERVER");
  ASSERT_NE(path, nullptr) << "H2RPC_INTEROP_SERVER is not set";
  InteropServerProcess process;
  std::string error;
  ASSERT_TRUE(process.Start(path, kHangTimeout, &error)) << error;
  GrpcppReflectionClient client(process.port());
  ServerReflectionResponse response;

  ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(client.Ask(list, &response));
  std::vector<std::string> services;
  for (const auto& service : response.list_services_response().service()) {
    services.push_back(service.name());
  }
  EXPECT_THAT(services, ElementsAre("grpc.channelz.v1.Channelz",
                                    "grpc.health.v1.Health",
                                    "grpc.reflection.v1alpha.ServerReflection",
                                    "grpc.testing.TestService"))
      << response.DebugString();

  ASSERT_TRUE(client.Ask(SymbolRequest("grpc.testing.TestService"), &response));
  EXPECT_THAT(FileNames(response),
              ElementsAre("proto/grpc/testing/test.proto",
                          "proto/grpc/testing/empty.proto",
                          "proto/grpc/testing/messages.proto"))
      << response.DebugString();
  // A descriptor pool of the client's own from those files, as grpc_cli
  // builds one (ProtoReflectionDescriptorDatabase).
  google::protobuf::SimpleDescriptorDatabase database;
  for (const FileDescriptorProto& file : Files(response)) {
    ASSERT_TRUE(database.Add(file)) << file.name();
  }
  google::protobuf::DescriptorPool pool(&database);
  const google::protobuf::ServiceDescriptor* service =
      pool.FindServiceByName("grpc.testing.TestService");
  ASSERT_NE(service, nullptr);
  const google::protobuf::MethodDescriptor* method =
      service->FindMethodByName("UnaryCall");
  ASSERT_NE(method, nullptr);
  EXPECT_EQ(method->input_type()->full_name(), "grpc.testing.SimpleRequest");
  EXPECT_NE(method->input_type()->FindFieldByName("payload"), nullptr);

  ASSERT_TRUE(client.Ask(SymbolRequest("no.such.Service"), &response));
  ASSERT_TRUE(response.has_error_response()) << response.DebugString();
  EXPECT_EQ(response.error_response().error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(response.error_response().error_message(),
              HasSubstr("no.such.Service"));

  // The stream goes on after the error.
  ASSERT_TRUE(
      client.Ask(SymbolRequest("grpc.health.v1.Health.Watch"), &response));
  EXPECT_THAT(FileNames(response),
              ElementsAre("proto/grpc/health/v1/health.proto"));

  ASSERT_TRUE(client.stream().WritesDone());
  EXPECT_FALSE(client.stream().Read(&response));
  const grpc::Status status = client.stream().Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// An h2rpc server on 127.0.0.1 serving `reflection` only.
class H2rpcReflectionServer {
 public:
  explicit H2rpcReflectionServer(ReflectionService& reflection) {
    Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_);
    reflection.AddTo(builder);
    server_ = builder.BuildAndStart(&status_);
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  const Status& status() const { return status_; }

 private:
  int port_ = 0;
  Status status_;
  std::unique_ptr<Server> server_;
};

TEST(GrpcppReflectionTest, AnswersRequestsWrittenTogetherInOrder) {
  ReflectionService reflection;
  H2rpcReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  GrpcppReflectionClient client(server.port());

  const std::vector<std::string> symbols = {
      "grpc.reflection.v1alpha.ServerReflection", "missing.Symbol",
      "grpc.reflection.v1alpha.ServerReflectionRequest"};
  for (const std::string& symbol : symbols) {
    ASSERT_TRUE(client.stream().Write(SymbolRequest(symbol)));
  }
  ASSERT_TRUE(client.stream().WritesDone());
  for (const std::string& symbol : symbols) {
    ServerReflectionResponse response;
    ASSERT_TRUE(client.stream().Read(&response)) << symbol;
    EXPECT_EQ(response.original_request().file_containing_symbol(), symbol);
    EXPECT_EQ(response.has_error_response(), symbol == "missing.Symbol")
        << response.ShortDebugString();
  }
  ServerReflectionResponse extra;
  EXPECT_FALSE(client.stream().Read(&extra));
  const grpc::Status status = client.stream().Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(::h2rpc::testing::WaitFor(
      [&] { return reflection.open_streams() == 0; }));
}

TEST(GrpcppReflectionTest, ACancelledStreamEndsOnTheServer) {
  ReflectionService reflection;
  H2rpcReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  GrpcppReflectionClient client(server.port());

  ServerReflectionRequest list;
  list.set_list_services("");
  ServerReflectionResponse response;
  ASSERT_TRUE(client.Ask(list, &response));
  EXPECT_THAT(response.list_services_response().service(),
              ::testing::SizeIs(1));
  EXPECT_EQ(reflection.open_streams(), 1u);
  client.context().TryCancel();
  EXPECT_FALSE(client.stream().Read(&response));
  EXPECT_EQ(client.stream().Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(::h2rpc::testing::WaitFor(
      [&] { return reflection.open_streams() == 0; }));
}

}  // namespace
}  // namespace h2rpc
