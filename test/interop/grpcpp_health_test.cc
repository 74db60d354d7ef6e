// gRPC C++ 1.51's health client (the grpc.health.v1 stub grpc_cpp_plugin
// generates, //proto:health_grpc_proto) against h2rpc's HealthCheckService:
//   - in this process, on an h2rpc Server: Check of the overall status, of a
//     service set NOT_SERVING and of an unknown one (NOT_FOUND); Watch
//     getting SERVING then NOT_SERVING after a change, SERVICE_UNKNOWN then
//     SERVING for a service set later, and the server's shutdown ending it
//     with UNAVAILABLE;
//   - h2rpc_interop_server (a child process, found through the
//     H2RPC_INTEROP_SERVER environment variable the BUILD rule sets):
//     Check of the overall status and of grpc.testing.TestService, SERVING.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/grpc/health/v1/health.pb.h"
#include "rpc/health_check_service.h"
#include "rpc/server.h"
#include "rpc/status.h"
#include "test/interop/interop_server_process.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using ::h2rpc::testing::InteropServerProcess;
using ::h2rpc::testing::kHangTimeout;

std::chrono::system_clock::time_point HangDeadline() {
  return std::chrono::system_clock::now() + absl::ToChronoSeconds(kHangTimeout);
}

// A gRPC C++ health stub for 127.0.0.1:`port`.
std::unique_ptr<Health::Stub> GrpcppStub(int port) {
  return Health::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
}

// Check of `service`: the call's status, and the response's in `*serving`.
grpc::Status Check(Health::Stub& stub, const std::string& service,
                   HealthCheckResponse::ServingStatus* serving) {
  grpc::ClientContext context;
  context.set_deadline(HangDeadline());
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  grpc::Status status = stub.Check(&context, request, &response);
  *serving = response.status();
  return status;
}

// An h2rpc server on 127.0.0.1 serving `health` only.
class H2rpcHealthServer {
 public:
  explicit H2rpcHealthServer(HealthCheckService& health) {
    Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_);
    health.AddTo(builder);
    server_ = builder.BuildAndStart(&status_);
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  int port() const { return port_; }
  const Status& status() const { return status_; }
  Server& server() { return *server_; }

 private:
  int port_ = 0;
  Status status_;
  std::unique_ptr<Server> server_;
};

TEST(GrpcppHealthTest, CheckAnswersEachServicesStatus) {
  HealthCheckService health;  // outlives the server
  health.SetServingStatus("down", false);
  H2rpcHealthServer server(health);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::unique_ptr<Health::Stub> stub = GrpcppStub(server.port());

  HealthCheckResponse::ServingStatus serving = HealthCheckResponse::UNKNOWN;
  grpc::Status status = Check(*stub, "", &serving);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(serving, HealthCheckResponse::SERVING);

  status = Check(*stub, "down", &serving);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(serving, HealthCheckResponse::NOT_SERVING);

  status = Check(*stub, "unknown.Service", &serving);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("unknown.Service"), std::string::npos)
      << status.error_message();
}

TEST(GrpcppHealthTest, WatchGetsTheStatusThenEachChange) {
  HealthCheckService health;
  H2rpcHealthServer server(health);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::unique_ptr<Health::Stub> stub = GrpcppStub(server.port());

  grpc::ClientContext context;
  context.set_deadline(HangDeadline());
  HealthCheckRequest request;  // "": the server as a whole
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> reader =
      stub->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);

  health.SetServingStatus("", false);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);

  // The server's shutdown ends the watch (the status is NOT_SERVING
  // already, so nothing more is sent), long before the shutdown returns:
  // that waits for gRPC C++ to close the connection, which its synchronous
  // client may leave to its backup poller (every 5 s).
  std::thread shutdown(
      [&] { server.server().Shutdown(absl::Now() + kHangTimeout); });
  EXPECT_FALSE(reader->Read(&response));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
  EXPECT_NE(status.error_message().find("shutting down"), std::string::npos)
      << status.error_message();
  shutdown.join();
}

TEST(GrpcppHealthTest, WatchOfAnUnknownServiceGetsItOnceSet) {
  HealthCheckService health;
  H2rpcHealthServer server(health);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::unique_ptr<Health::Stub> stub = GrpcppStub(server.port());

  grpc::ClientContext context;
  context.set_deadline(HangDeadline());
  HealthCheckRequest request;
  request.set_service("later.Service");
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> reader =
      stub->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVICE_UNKNOWN);

  health.SetServingStatus("later.Service", true);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);

  context.TryCancel();
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(
      ::h2rpc::testing::WaitFor([&] { return health.open_watches() == 0; }));
}

TEST(GrpcppHealthTest, InteropServerServesHealth) {
  const char* path = std::getenv("H2RPC_INTEROP_SERVER");
  ASSERT_NE(path, nullptr) << "H2RPC_INTEROP_SERVER is not set";
  InteropServerProcess process;
  std::string error;
  ASSERT_TRUE(process.Start(path, kHangTimeout, &error)) << error;
  std::unique_ptr<Health::Stub> stub = GrpcppStub(process.port());

  HealthCheckResponse::ServingStatus serving = HealthCheckResponse::UNKNOWN;
  grpc::Status status = Check(*stub, "", &serving);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(serving, HealthCheckResponse::SERVING);
  status = Check(*stub, "grpc.testing.TestService", &serving);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(serving, HealthCheckResponse::SERVING);
}

}  // namespace
}  // namespace h2rpc
