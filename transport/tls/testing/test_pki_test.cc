#include "transport/tls/testing/test_pki.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace h2rpc::transport::tls::testing {
namespace {

struct BioFree {
  void operator()(BIO* p) const { BIO_free_all(p); }
};
struct GeneralNamesFree {
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
};
struct StoreFree {
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};

using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

constexpr long kHour = 60 * 60;
constexpr long kDay = 24 * kHour;

BioPtr ReadOnlyBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The first certificate of `pem`, or null.
X509Ptr ParseCert(const std::string& pem) {
  BioPtr bio = ReadOnlyBio(pem);
  if (bio == nullptr) return nullptr;
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

PkeyPtr ParseKey(const std::string& pem) {
  BioPtr bio = ReadOnlyBio(pem);
  if (bio == nullptr) return nullptr;
  return PkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

std::string Reason(int error) { return X509_verify_cert_error_string(error); }

// Verifies the leaf `leaf_pem` now, trusting only `root_pem`, with
// X509_V_FLAG_X509_STRICT and, unless 0, the X509_PURPOSE_* `purpose`.
// Returns "ok", or "depth N: <OpenSSL's reason>".
std::string Verify(const std::string& leaf_pem, const std::string& root_pem,
                   int purpose = 0) {
  X509Ptr leaf = ParseCert(leaf_pem);
  X509Ptr root = ParseCert(root_pem);
  if (leaf == nullptr || root == nullptr) return "unparsable PEM";
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
  if (store == nullptr || ctx == nullptr ||
      X509_STORE_add_cert(store.get(), root.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr) != 1 ||
      X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx.get()),
                                  X509_V_FLAG_X509_STRICT) != 1 ||
      (purpose != 0 && X509_STORE_CTX_set_purpose(ctx.get(), purpose) != 1)) {
    ERR_clear_error();
    return "verification setup failed";
  }
  const int verified = X509_verify_cert(ctx.get());
  const int error = X509_STORE_CTX_get_error(ctx.get());
  const int depth = X509_STORE_CTX_get_error_depth(ctx.get());
  ERR_clear_error();
  if (verified == 1)
    return error == X509_V_OK ? "ok" : "ok with " + Reason(error);
  return "depth " + std::to_string(depth) + ": " + Reason(error);
}

std::string CommonName(const X509_NAME* name) {
  char buffer[256];
  const int length =
      X509_NAME_get_text_by_NID(name, NID_commonName, buffer, sizeof(buffer));
  return length < 0 ? "<no CN>" : std::string(buffer, length);
}

// The URIs among the subject alternative names of `cert`.
std::vector<std::string> UriNames(X509* cert) {
  std::unique_ptr<GENERAL_NAMES, GeneralNamesFree> names(
      static_cast<GENERAL_NAMES*>(
          X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  std::vector<std::string> uris;
  if (names == nullptr) return uris;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                      ASN1_STRING_length(uri));
  }
  return uris;
}

int CountCertificates(const std::string& pem) {
  int count = 0;
  for (size_t at = pem.find("-----BEGIN CERTIFICATE-----");
       at != std::string::npos;
       at = pem.find("-----BEGIN CERTIFICATE-----", at + 1)) {
    ++count;
  }
  return count;
}

// First in this file, so (unless tests are shuffled or filtered) these
// threads make the process's first calls and race to generate.
TEST(TestPkiTest, ConcurrentCallersGetTheSameObject) {
  constexpr int kThreads = 4;
  std::vector<const TestPki*> seen(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &GetTestPki(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const TestPki* pki : seen) EXPECT_EQ(pki, &GetTestPki());
}

TEST(TestPkiTest, ServerAndClientVerifyAgainstTheCa) {
  const TestPki& pki = GetTestPki();
  EXPECT_EQ(Verify(pki.ca_pem, pki.ca_pem), "ok");
  EXPECT_EQ(Verify(pki.server.cert_chain_pem, pki.ca_pem), "ok");
  EXPECT_EQ(Verify(pki.client.cert_chain_pem, pki.ca_pem), "ok");
  EXPECT_EQ(Verify(pki.other_ca_pem, pki.other_ca_pem), "ok");
  EXPECT_EQ(Verify(pki.server_from_other_ca.cert_chain_pem, pki.other_ca_pem),
            "ok");
}

TEST(TestPkiTest, ExpiredServerFailsAsExpired) {
  const TestPki& pki = GetTestPki();
  EXPECT_EQ(Verify(pki.expired_server.cert_chain_pem, pki.ca_pem),
            "depth 0: " + Reason(X509_V_ERR_CERT_HAS_EXPIRED));
}

TEST(TestPkiTest, EachRootTrustsOnlyItsOwnLeaves) {
  const TestPki& pki = GetTestPki();
  EXPECT_EQ(Verify(pki.server_from_other_ca.cert_chain_pem, pki.ca_pem),
            "depth 0: " + Reason(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY));
  EXPECT_EQ(Verify(pki.server.cert_chain_pem, pki.other_ca_pem),
            "depth 0: " + Reason(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY));
}

TEST(TestPkiTest, ExtendedKeyUsagesSeparateServerFromClient) {
  const TestPki& pki = GetTestPki();
  EXPECT_EQ(
      Verify(pki.server.cert_chain_pem, pki.ca_pem, X509_PURPOSE_SSL_SERVER),
      "ok");
  EXPECT_EQ(
      Verify(pki.client.cert_chain_pem, pki.ca_pem, X509_PURPOSE_SSL_CLIENT),
      "ok");
  EXPECT_EQ(
      Verify(pki.client.cert_chain_pem, pki.ca_pem, X509_PURPOSE_SSL_SERVER),
      "depth 0: " + Reason(X509_V_ERR_INVALID_PURPOSE));
  EXPECT_EQ(
      Verify(pki.server.cert_chain_pem, pki.ca_pem, X509_PURPOSE_SSL_CLIENT),
      "depth 0: " + Reason(X509_V_ERR_INVALID_PURPOSE));
}

TEST(TestPkiTest, ServerNamesMatchItsSubjectAltNames) {
  for (const KeyAndCert* server :
       {&GetTestPki().server, &GetTestPki().expired_server,
        &GetTestPki().server_from_other_ca}) {
    X509Ptr cert = ParseCert(server->cert_chain_pem);
    ASSERT_NE(cert, nullptr);
    EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
    EXPECT_EQ(
        X509_check_host(cert.get(), "foo.test.h2rpc.example", 0, 0, nullptr),
        1);
    EXPECT_EQ(X509_check_host(cert.get(), "example.com", 0, 0, nullptr), 0);
    // A wildcard covers one label: neither the parent nor two labels.
    EXPECT_EQ(X509_check_host(cert.get(), "test.h2rpc.example", 0, 0, nullptr),
              0);
    EXPECT_EQ(
        X509_check_host(cert.get(), "a.b.test.h2rpc.example", 0, 0, nullptr),
        0);
    EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
    EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
    EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.2", 0), 0);
    EXPECT_EQ(CommonName(X509_get_subject_name(cert.get())),
              "h2rpc test server");
  }
}

TEST(TestPkiTest, ClientNamesMatchItsSubjectAltNames) {
  X509Ptr cert = ParseCert(GetTestPki().client.cert_chain_pem);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(CommonName(X509_get_subject_name(cert.get())), "h2rpc test client");
  EXPECT_EQ(
      X509_check_host(cert.get(), "client.test.h2rpc.example", 0, 0, nullptr),
      1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 0);
  EXPECT_EQ(UriNames(cert.get()),
            std::vector<std::string>{"spiffe://h2rpc.test/client"});
}

TEST(TestPkiTest, IssuersAreTheNamedRoots) {
  const TestPki& pki = GetTestPki();
  X509Ptr ca = ParseCert(pki.ca_pem);
  X509Ptr other_ca = ParseCert(pki.other_ca_pem);
  X509Ptr server = ParseCert(pki.server.cert_chain_pem);
  X509Ptr other_server = ParseCert(pki.server_from_other_ca.cert_chain_pem);
  ASSERT_TRUE(ca && other_ca && server && other_server);
  EXPECT_EQ(CommonName(X509_get_subject_name(ca.get())), "h2rpc test CA");
  EXPECT_EQ(CommonName(X509_get_issuer_name(ca.get())), "h2rpc test CA");
  EXPECT_EQ(CommonName(X509_get_issuer_name(server.get())), "h2rpc test CA");
  EXPECT_EQ(CommonName(X509_get_subject_name(other_ca.get())),
            "h2rpc test other CA");
  EXPECT_EQ(CommonName(X509_get_issuer_name(other_server.get())),
            "h2rpc test other CA");
}

TEST(TestPkiTest, PrivateKeysMatchTheirCertificates) {
  const TestPki& pki = GetTestPki();
  for (const KeyAndCert* leaf : {&pki.server, &pki.expired_server, &pki.client,
                                 &pki.server_from_other_ca}) {
    X509Ptr cert = ParseCert(leaf->cert_chain_pem);
    PkeyPtr key = ParseKey(leaf->private_key_pem);
    ASSERT_NE(cert, nullptr);
    ASSERT_NE(key, nullptr);
    EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
    EXPECT_EQ(leaf->private_key_pem.rfind("-----BEGIN PRIVATE KEY-----", 0),
              0u);
    EXPECT_EQ(CountCertificates(leaf->cert_chain_pem), 1);
  }
  X509Ptr server = ParseCert(pki.server.cert_chain_pem);
  PkeyPtr client_key = ParseKey(pki.client.private_key_pem);
  ASSERT_TRUE(server && client_key);
  EXPECT_EQ(X509_check_private_key(server.get(), client_key.get()), 0);
  ERR_clear_error();
}

TEST(TestPkiTest, KeysAreP256AndSignaturesEcdsaSha256) {
  const TestPki& pki = GetTestPki();
  for (const std::string* pem :
       {&pki.ca_pem, &pki.other_ca_pem, &pki.server.cert_chain_pem,
        &pki.expired_server.cert_chain_pem, &pki.client.cert_chain_pem,
        &pki.server_from_other_ca.cert_chain_pem}) {
    X509Ptr cert = ParseCert(*pem);
    ASSERT_NE(cert, nullptr);
    EXPECT_EQ(X509_get_version(cert.get()), X509_VERSION_3);
    EXPECT_EQ(X509_get_signature_nid(cert.get()), NID_ecdsa_with_SHA256);
    EVP_PKEY* key = X509_get0_pubkey(cert.get());
    ASSERT_NE(key, nullptr);
    char group[64];
    size_t group_length = 0;
    ASSERT_EQ(EVP_PKEY_get_group_name(key, group, sizeof(group), &group_length),
              1);
    EXPECT_EQ(std::string(group, group_length), "prime256v1");
  }
}

TEST(TestPkiTest, LeavesAreValidFromAnHourAgoForADay) {
  const TestPki& pki = GetTestPki();
  for (const KeyAndCert* leaf :
       {&pki.server, &pki.client, &pki.server_from_other_ca}) {
    X509Ptr cert = ParseCert(leaf->cert_chain_pem);
    ASSERT_NE(cert, nullptr);
    const ASN1_TIME* not_before = X509_get0_notBefore(cert.get());
    const ASN1_TIME* not_after = X509_get0_notAfter(cert.get());
    EXPECT_LT(X509_cmp_current_time(not_before), 0);
    EXPECT_GT(X509_cmp_current_time(not_after), 0);
    int days = 0;
    int seconds = 0;
    ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, not_before, not_after), 1);
    // Both ends are taken from the clock separately: allow a second apart.
    const long span = days * kDay + seconds;
    EXPECT_GE(span, kDay + kHour - 1);
    EXPECT_LE(span, kDay + kHour + 1);
  }
  X509Ptr expired = ParseCert(pki.expired_server.cert_chain_pem);
  ASSERT_NE(expired, nullptr);
  EXPECT_LT(X509_cmp_current_time(X509_get0_notAfter(expired.get())), 0);
}

}  // namespace
}  // namespace h2rpc::transport::tls::testing
