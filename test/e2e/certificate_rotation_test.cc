// Certificates rotated while an h2rpc server and its clients run
// (FileWatcherCertificateProvider), over real TLS connections: new
// handshakes get the new certificate, open connections keep going on the
// old one, refused files leave the last good ones in use; the same for a
// client's own certificate under mutual TLS.
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/certificate_provider.h"
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
using transport::tls::testing::KeyAndCert;

// Answers "CONNECTION_ID|FIRST_URI_OF_THE_CLIENT".
constexpr char kWho[] = "/h2rpc.test.Rotation/Who";

class CertificateRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/h2rpc_rotation_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
    files_.private_key_path = directory_ + "/key.pem";
    files_.identity_certificate_path = directory_ + "/chain.pem";
    files_.root_certificate_path = directory_ + "/roots.pem";
    files_.refresh_interval = absl::Hours(1);  // the tests call Refresh()
  }
  void TearDown() override {
    server_.Stop();
    for (const std::string& path :
         {files_.private_key_path, files_.identity_certificate_path,
          files_.root_certificate_path}) {
      unlink(path.c_str());
    }
    rmdir(directory_.c_str());
  }

  void WriteFiles(const KeyAndCert& identity, const std::string& roots) {
    for (const auto& [path, contents] :
         {std::pair<std::string, std::string>(files_.private_key_path,
                                              identity.private_key_pem),
          {files_.identity_certificate_path, identity.cert_chain_pem},
          {files_.root_certificate_path, roots}}) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
    }
  }

  void Serve(std::shared_ptr<ServerCredentials> credentials) {
    ASSERT_TRUE(credentials->status().ok()) << credentials->status().ToString();
    server_.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
        kWho, [](ServerContext* context, const SimpleRequest&,
                 SimpleResponse* response) {
          const auto& identity = context->peer_identity();
          response->mutable_payload()->set_body(absl::StrCat(
              context->connection_id(), "|",
              identity != nullptr && !identity->uris.empty() ? identity->uris[0]
                                                             : ""));
          return Status();
        });
    ASSERT_TRUE(server_.Start(std::move(credentials)).ok());
  }

  std::shared_ptr<Channel> Connect(
      std::shared_ptr<ChannelCredentials> credentials) {
    ChannelOptions options;
    options.ssl_target_name_override = "localhost";
    return server_.NewChannel(options, std::move(credentials));
  }

  static std::shared_ptr<ChannelCredentials> Trusting(
      const std::string& roots) {
    SslCredentialsOptions options;
    options.pem_root_certs = roots;
    return SslCredentials(options);
  }

  static Status Call(Channel& channel, std::string* who = nullptr) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleResponse response;
    const Status status =
        channel.UnaryCall(&context, kWho, SimpleRequest(), &response);
    if (who != nullptr) *who = response.payload().body();
    return status;
  }

  std::string directory_;
  FileWatcherCertificateProvider::Options files_;
  StubServer server_;
};

TEST_F(CertificateRotationTest, AServersNewCertificateServesNewConnections) {
  const auto& pki = GetTestPki();
  WriteFiles(pki.server, pki.ca_pem);
  auto provider = FileWatcherCertificateProvider::Create(files_);
  ASSERT_TRUE(provider->status().ok()) << provider->status().ToString();
  SslServerCredentialsOptions tls;
  tls.certificate_provider = provider;
  Serve(SslServerCredentials(tls));

  auto open = Connect(Trusting(pki.ca_pem));
  std::string before;
  ASSERT_TRUE(Call(*open, &before).ok());

  // Rotated to a certificate of another authority.
  WriteFiles(pki.server_from_other_ca, pki.ca_pem);
  ASSERT_TRUE(provider->Refresh().ok());
  // The open connection goes on (a new handshake would fail: the channel
  // trusts only the first authority).
  std::string after;
  ASSERT_TRUE(Call(*open, &after).ok());
  EXPECT_EQ(after, before);
  // New connections get the new certificate.
  Status status = Call(*Connect(Trusting(pki.ca_pem)));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("certificate verify failed"));
  status = Call(*Connect(Trusting(pki.other_ca_pem)));
  ASSERT_TRUE(status.ok()) << status.ToString();

  // A broken file: the last good certificate stays in use.
  std::ofstream(files_.identity_certificate_path, std::ios::trunc)
      << "-----BEGIN CERTIFICATE-----\nMIIB";
  EXPECT_FALSE(provider->Refresh().ok());
  status = Call(*Connect(Trusting(pki.other_ca_pem)));
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(provider->stats().failures, 1u);
}

TEST_F(CertificateRotationTest, AClientsNewCertificateServesNewConnections) {
  const auto& pki = GetTestPki();
  SslServerCredentialsOptions server_tls;
  server_tls.pem_key_cert_pairs.push_back(
      {pki.server.private_key_pem, pki.server.cert_chain_pem});
  server_tls.pem_root_certs = pki.ca_pem;
  server_tls.client_certificate_request =
      SslClientCertificateRequest::kRequireAndVerify;
  Serve(SslServerCredentials(server_tls));

  WriteFiles(pki.client, pki.ca_pem);
  auto provider = FileWatcherCertificateProvider::Create(files_);
  ASSERT_TRUE(provider->status().ok()) << provider->status().ToString();
  SslCredentialsOptions client_tls;
  client_tls.certificate_provider = provider;
  auto credentials = SslCredentials(client_tls);
  ASSERT_TRUE(credentials->status().ok()) << credentials->status().ToString();

  auto open = Connect(credentials);
  std::string who;
  ASSERT_TRUE(Call(*open, &who).ok());
  EXPECT_THAT(who, HasSubstr("|spiffe://h2rpc.test/client"));
  const std::string first = who;

  WriteFiles(pki.second_client, pki.ca_pem);
  ASSERT_TRUE(provider->Refresh().ok());
  ASSERT_TRUE(Call(*open, &who).ok());
  EXPECT_EQ(who, first);  // the same connection, the same identity
  // A new connection from the same credentials presents the new one.
  ASSERT_TRUE(Call(*Connect(credentials), &who).ok());
  EXPECT_THAT(who, HasSubstr("|spiffe://h2rpc.test/client2"));
}

}  // namespace
}  // namespace h2rpc
