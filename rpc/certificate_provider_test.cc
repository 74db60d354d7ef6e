#include "rpc/certificate_provider.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/credentials.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;
using transport::tls::testing::GetTestPki;
using transport::tls::testing::KeyAndCert;

class CertificateProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/h2rpc_certs_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
    options_.private_key_path = directory_ + "/key.pem";
    options_.identity_certificate_path = directory_ + "/chain.pem";
    options_.root_certificate_path = directory_ + "/roots.pem";
    // Long: the tests read the files themselves (Refresh()) unless they
    // shorten it.
    options_.refresh_interval = absl::Hours(1);
  }
  void TearDown() override {
    for (const std::string& path :
         {options_.private_key_path, options_.identity_certificate_path,
          options_.root_certificate_path}) {
      unlink(path.c_str());
    }
    rmdir(directory_.c_str());
  }

  static void Write(const std::string& path, const std::string& contents) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << contents;
  }
  void WriteIdentity(const KeyAndCert& identity) {
    Write(options_.private_key_path, identity.private_key_pem);
    Write(options_.identity_certificate_path, identity.cert_chain_pem);
  }

  std::string directory_;
  FileWatcherCertificateProvider::Options options_;
};

TEST_F(CertificateProviderTest, LoadsAndReloadsWhenTheFilesChange) {
  WriteIdentity(GetTestPki().server);
  Write(options_.root_certificate_path, GetTestPki().ca_pem);
  auto provider = FileWatcherCertificateProvider::Create(options_);
  ASSERT_TRUE(provider->status().ok()) << provider->status().ToString();
  EXPECT_EQ(provider->stats().loads, 1u);
  // Unchanged: nothing happens.
  ASSERT_TRUE(provider->Refresh().ok());
  EXPECT_EQ(provider->stats().loads, 1u);
  WriteIdentity(GetTestPki().server_from_other_ca);
  ASSERT_TRUE(provider->Refresh().ok());
  EXPECT_EQ(provider->stats().loads, 2u);
  EXPECT_EQ(provider->stats().failures, 0u);
}

TEST_F(CertificateProviderTest, BadContentKeepsTheLastGoodMaterial) {
  WriteIdentity(GetTestPki().server);
  Write(options_.root_certificate_path, GetTestPki().ca_pem);
  auto provider = FileWatcherCertificateProvider::Create(options_);
  ASSERT_TRUE(provider->status().ok()) << provider->status().ToString();
  SslServerCredentialsOptions tls;
  tls.certificate_provider = provider;
  auto credentials = SslServerCredentials(tls);
  ASSERT_TRUE(credentials->status().ok()) << credentials->status().ToString();

  // A key that is not the certificate's.
  Write(options_.private_key_path, GetTestPki().client.private_key_pem);
  Status status = provider->Refresh();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("the last good ones stay"));
  EXPECT_THAT(status.message(), HasSubstr("key values mismatch"));
  EXPECT_EQ(provider->stats().failures, 1u);
  // The same refused content is not counted again.
  EXPECT_FALSE(provider->Refresh().ok());
  EXPECT_EQ(provider->stats().failures, 1u);

  // A certificate half written.
  WriteIdentity(GetTestPki().server_from_other_ca);
  const std::string& chain = GetTestPki().server_from_other_ca.cert_chain_pem;
  Write(options_.identity_certificate_path, chain.substr(0, chain.size() / 2));
  EXPECT_FALSE(provider->Refresh().ok());
  EXPECT_EQ(provider->stats().failures, 2u);
  // Then whole.
  Write(options_.identity_certificate_path, chain);
  ASSERT_TRUE(provider->Refresh().ok());
  EXPECT_EQ(provider->stats().loads, 2u);

  // A file gone.
  unlink(options_.root_certificate_path.c_str());
  status = provider->Refresh();
  EXPECT_THAT(status.message(), HasSubstr("cannot read"));
  EXPECT_EQ(provider->stats().failures, 3u);
  EXPECT_THAT(provider->stats().last_error, HasSubstr("cannot read"));
}

TEST_F(CertificateProviderTest, MaterialACredentialsObjectCannotUseIsRefused) {
  // A server that verifies clients needs roots; the provider has none.
  options_.root_certificate_path.clear();
  WriteIdentity(GetTestPki().server);
  auto provider = FileWatcherCertificateProvider::Create(options_);
  ASSERT_TRUE(provider->status().ok()) << provider->status().ToString();
  SslServerCredentialsOptions tls;
  tls.certificate_provider = provider;
  tls.client_certificate_request =
      SslClientCertificateRequest::kRequireAndVerify;
  EXPECT_THAT(SslServerCredentials(tls)->status().message(),
              HasSubstr("needs pem_root_certs"));
  // The provider and the PEM fields together.
  SslServerCredentialsOptions both;
  both.certificate_provider = provider;
  both.pem_root_certs = GetTestPki().ca_pem;
  EXPECT_THAT(SslServerCredentials(both)->status().message(),
              HasSubstr("exclude each other"));
}

TEST_F(CertificateProviderTest, ItsThreadReadsTheFilesEveryInterval) {
  options_.refresh_interval = absl::Milliseconds(20);
  WriteIdentity(GetTestPki().server);
  Write(options_.root_certificate_path, GetTestPki().ca_pem);
  auto provider = FileWatcherCertificateProvider::Create(options_);
  ASSERT_TRUE(provider->status().ok()) << provider->status().ToString();
  WriteIdentity(GetTestPki().server_from_other_ca);
  ASSERT_TRUE(WaitFor([&] { return provider->stats().loads == 2; }));
  Write(options_.private_key_path, "not a key");
  ASSERT_TRUE(WaitFor([&] { return provider->stats().failures == 1; }));
}

TEST_F(CertificateProviderTest, AFirstReadThatFailsMakesUnusableCredentials) {
  auto provider = FileWatcherCertificateProvider::Create(options_);
  EXPECT_THAT(provider->status().message(), HasSubstr("refused: cannot read"));
  EXPECT_EQ(provider->Refresh(), provider->status());
  SslCredentialsOptions tls;
  tls.certificate_provider = provider;
  EXPECT_EQ(SslCredentials(tls)->status(), provider->status());

  FileWatcherCertificateProvider::Options none;
  EXPECT_THAT(FileWatcherCertificateProvider::Create(none)->status().message(),
              HasSubstr("no files"));
  FileWatcherCertificateProvider::Options key_only;
  key_only.private_key_path = options_.private_key_path;
  EXPECT_THAT(
      FileWatcherCertificateProvider::Create(key_only)->status().message(),
      HasSubstr("go together"));
}

}  // namespace
}  // namespace h2rpc
