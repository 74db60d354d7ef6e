// An h2rpc server rotates its certificate (FileWatcherCertificateProvider)
// under stock gRPC C++ 1.51 clients over real TLS connections: a client's
// open connection keeps working, and new connections see the new
// certificate (a client trusting only the old authority can no longer
// connect, one trusting the new one can).

#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "rpc/certificate_provider.h"
#include "rpc/credentials.h"
#include "rpc/server.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::StubServer;
using transport::tls::testing::GetTestPki;
using transport::tls::testing::KeyAndCert;

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";

void Write(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

std::unique_ptr<grpc::testing::TestService::Stub> GrpcppClient(
    int port, const std::string& roots) {
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = roots;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  // A channel of its own: gRPC C++ would otherwise share one connection
  // between channels with the same target and arguments.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::testing::TestService::NewStub(grpc::CreateCustomChannel(
      absl::StrCat("127.0.0.1:", port), grpc::SslCredentials(tls), args));
}

grpc::Status Call(grpc::testing::TestService::Stub& stub,
                  std::string* connection = nullptr) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoSeconds(kHangTimeout));
  SimpleResponse response;
  grpc::Status status = stub.UnaryCall(&context, SimpleRequest(), &response);
  if (connection != nullptr) *connection = response.payload().body();
  return status;
}

TEST(GrpcppCertificateRotationTest, AGrpcppClientSeesTheNewCertificate) {
  char pattern[] = "/tmp/h2rpc_grpcpp_rotation_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string directory = pattern;
  FileWatcherCertificateProvider::Options files;
  files.private_key_path = directory + "/key.pem";
  files.identity_certificate_path = directory + "/chain.pem";
  files.refresh_interval = absl::Hours(1);  // the test calls Refresh()
  const auto& pki = GetTestPki();
  auto write_identity = [&](const KeyAndCert& identity) {
    Write(files.private_key_path, identity.private_key_pem);
    Write(files.identity_certificate_path, identity.cert_chain_pem);
  };
  write_identity(pki.server);
  auto provider = FileWatcherCertificateProvider::Create(files);
  ASSERT_TRUE(provider->status().ok()) << provider->status().ToString();

  StubServer server;
  server.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
      kUnaryCall, [](ServerContext* context, const SimpleRequest&,
                     SimpleResponse* response) {
        response->mutable_payload()->set_body(
            absl::StrCat(context->connection_id()));
        return Status();
      });
  SslServerCredentialsOptions tls;
  tls.certificate_provider = provider;
  ASSERT_TRUE(server.Start(SslServerCredentials(tls)).ok());

  auto open = GrpcppClient(server.port(), pki.ca_pem);
  std::string before;
  grpc::Status status = Call(*open, &before);
  ASSERT_TRUE(status.ok()) << status.error_message();

  write_identity(pki.server_from_other_ca);
  ASSERT_TRUE(provider->Refresh().ok());
  std::string after;
  status = Call(*open, &after);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(after, before);  // the same connection

  status = Call(*GrpcppClient(server.port(), pki.ca_pem));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
  status = Call(*GrpcppClient(server.port(), pki.other_ca_pem));
  EXPECT_TRUE(status.ok()) << status.error_message();

  server.Stop();
  unlink(files.private_key_path.c_str());
  unlink(files.identity_certificate_path.c_str());
  rmdir(directory.c_str());
}

}  // namespace
}  // namespace h2rpc
