// Call credentials between h2rpc and stock gRPC C++ 1.51 over TLS on real
// loopback sockets, both ways:
//   - an h2rpc client's access token (on the channel) and blocking plugin
//     (on the call) reach a gRPC C++ server whose handler checks the
//     "authorization" header: accepted with the right token, refused with
//     the status the handler gives otherwise;
//   - a gRPC C++ client's AccessTokenCredentials are checked by an h2rpc
//     server's AuthMetadataProcessor: accepted (the handler sees the
//     identity it set) or refused with UNAUTHENTICATED.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "rpc/auth_context.h"
#include "rpc/call_credentials.h"
#include "rpc/channel.h"
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
using ::testing::HasSubstr;
using transport::tls::testing::GetTestPki;

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";

// Accepts "Bearer good-token" (answering with the header it saw), refuses
// any other token with PERMISSION_DENIED and none with UNAUTHENTICATED.
class TokenCheckingService final : public grpc::testing::TestService::Service {
 public:
  grpc::Status UnaryCall(grpc::ServerContext* context, const SimpleRequest*,
                         SimpleResponse* response) override {
    const auto& metadata = context->client_metadata();
    auto found = metadata.find("authorization");
    if (found == metadata.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no token");
    }
    const std::string value(found->second.data(), found->second.size());
    if (value != "Bearer good-token") {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "wrong token: " + value);
    }
    std::string shown = value;
    for (auto [key, extra] : metadata) {
      if (key == "x-cred") {
        absl::StrAppend(&shown, ",", std::string(extra.data(), extra.size()));
      }
    }
    response->mutable_payload()->set_body(shown);
    return grpc::Status::OK;
  }
};

// Blocks like a token fetch would (it runs on a plugin thread) and adds
// "x-cred: from-plugin".
class FetchingPlugin : public MetadataCredentialsPlugin {
 public:
  Status GetMetadata(const AuthMetadataContext& context,
                     Metadata* metadata) override {
    metadata->Add("x-cred", absl::StrCat("from-plugin:", context.method_name));
    return Status();
  }
};

class GrpcppCallCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::SslServerCredentialsOptions tls;
    tls.pem_key_cert_pairs.push_back({GetTestPki().server.private_key_pem,
                                      GetTestPki().server.cert_chain_pem});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(tls),
                             &grpcpp_port_);
    builder.RegisterService(&service_);
    grpcpp_server_ = builder.BuildAndStart();
    ASSERT_NE(grpcpp_server_, nullptr);
    ASSERT_GT(grpcpp_port_, 0);
  }

  void TearDown() override {
    grpcpp_server_->Shutdown(std::chrono::system_clock::now() +
                             absl::ToChronoSeconds(kHangTimeout));
  }

  std::shared_ptr<Channel> H2rpcChannel(
      std::shared_ptr<CallCredentials> call_credentials) {
    SslCredentialsOptions tls;
    tls.pem_root_certs = GetTestPki().ca_pem;
    ChannelOptions options;
    options.ssl_target_name_override = "localhost";
    return CreateChannel(
        absl::StrCat("127.0.0.1:", grpcpp_port_),
        CompositeChannelCredentials(SslCredentials(tls), call_credentials),
        options);
  }

  static Status Call(Channel& channel, ClientContext* context,
                     std::string* shown = nullptr) {
    context->set_timeout(kHangTimeout);
    SimpleResponse response;
    const Status status =
        channel.UnaryCall(context, kUnaryCall, SimpleRequest(), &response);
    if (shown != nullptr) *shown = response.payload().body();
    return status;
  }

  TokenCheckingService service_;
  int grpcpp_port_ = 0;
  std::unique_ptr<grpc::Server> grpcpp_server_;
};

TEST_F(GrpcppCallCredentialsTest, AnH2rpcClientsTokenIsCheckedByGrpcpp) {
  auto channel = H2rpcChannel(AccessTokenCredentials("good-token"));
  ClientContext context;
  std::string shown;
  Status status = Call(*channel, &context, &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "Bearer good-token");

  // A blocking plugin on the call adds its metadata after the channel's.
  ClientContext with_plugin;
  with_plugin.set_credentials(
      MetadataCredentialsFromPlugin(std::make_unique<FetchingPlugin>()));
  status = Call(*channel, &with_plugin, &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "Bearer good-token,from-plugin:UnaryCall");

  auto wrong = H2rpcChannel(AccessTokenCredentials("bad-token"));
  ClientContext refused;
  status = Call(*wrong, &refused);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("wrong token: Bearer bad-token"));
}

// Accepts "Bearer from-grpcpp" as the user "grpcpp-client".
class GrpcppTokenProcessor : public AuthMetadataProcessor {
 public:
  Status Process(absl::string_view, const Metadata& metadata,
                 AuthContext* context, Metadata*) override {
    if (metadata.Get("authorization") != "Bearer from-grpcpp") {
      return Status(StatusCode::kUnauthenticated, "bad or missing token");
    }
    context->AddProperty("user", "grpcpp-client");
    context->SetPeerIdentityPropertyName("user");
    return Status();
  }
};

TEST_F(GrpcppCallCredentialsTest, AGrpcppClientsTokenIsCheckedByH2rpc) {
  StubServer h2rpc_server;
  ServerOptions options;
  options.auth_metadata_processor = std::make_shared<GrpcppTokenProcessor>();
  h2rpc_server.builder()
      .SetOptions(options)
      .RegisterUnary<SimpleRequest, SimpleResponse>(
          kUnaryCall, [](ServerContext* context, const SimpleRequest&,
                         SimpleResponse* response) {
            const auto identity = context->auth_context().GetPeerIdentity();
            response->mutable_payload()->set_body(
                identity.empty() ? "" : std::string(identity[0]));
            return Status();
          });
  SslServerCredentialsOptions tls;
  tls.pem_key_cert_pairs.push_back({GetTestPki().server.private_key_pem,
                                    GetTestPki().server.cert_chain_pem});
  ASSERT_TRUE(h2rpc_server.Start(SslServerCredentials(tls)).ok());

  auto call = [&](const char* token, SimpleResponse* response) {
    grpc::SslCredentialsOptions client_tls;
    client_tls.pem_root_certs = GetTestPki().ca_pem;
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    auto stub = grpc::testing::TestService::NewStub(grpc::CreateCustomChannel(
        absl::StrCat("127.0.0.1:", h2rpc_server.port()),
        grpc::CompositeChannelCredentials(grpc::SslCredentials(client_tls),
                                          grpc::AccessTokenCredentials(token)),
        args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoSeconds(kHangTimeout));
    return stub->UnaryCall(&context, SimpleRequest(), response);
  };
  SimpleResponse response;
  grpc::Status status = call("from-grpcpp", &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.payload().body(), "grpcpp-client");
  status = call("forged", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(status.error_message(), "bad or missing token");
}

}  // namespace
}  // namespace h2rpc
