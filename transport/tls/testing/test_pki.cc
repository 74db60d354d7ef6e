#include "transport/tls/testing/test_pki.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace h2rpc::transport::tls::testing {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};

using Asn1IntegerPtr =
    std::unique_ptr<ASN1_INTEGER, Deleter<ASN1_INTEGER, ASN1_INTEGER_free>>;
using BignumPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using ExtensionPtr =
    std::unique_ptr<X509_EXTENSION,
                    Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using PkeyCtxPtr =
    std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;

constexpr long kHour = 60 * 60;
constexpr long kDay = 24 * kHour;

// Test-only code: an OpenSSL failure here is a broken installation, not an
// input error, so it ends the process with OpenSSL's own explanation.
[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "h2rpc test PKI: %s failed; OpenSSL errors:\n", what);
  ERR_print_errors_fp(stderr);
  std::fflush(stderr);
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok) Fail(what);
}

template <typename T>
T* CheckNotNull(T* p, const char* what) {
  if (p == nullptr) Fail(what);
  return p;
}

PkeyPtr NewP256Key() {
  PkeyCtxPtr ctx(
      CheckNotNull(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr),
                   "EVP_PKEY_CTX_new_from_name(EC)"));
  Check(EVP_PKEY_keygen_init(ctx.get()) == 1, "EVP_PKEY_keygen_init");
  Check(EVP_PKEY_CTX_set_group_name(ctx.get(), "P-256") == 1,
        "EVP_PKEY_CTX_set_group_name(P-256)");
  EVP_PKEY* key = nullptr;
  Check(EVP_PKEY_keygen(ctx.get(), &key) == 1 && key != nullptr,
        "EVP_PKEY_keygen");
  return PkeyPtr(key);
}

// A random positive serial number of at most 128 bits (RFC 5280 allows 20
// octets), so the certificates of one run never share one.
void SetRandomSerial(X509* cert) {
  BignumPtr bn(CheckNotNull(BN_new(), "BN_new"));
  Check(BN_rand(bn.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1,
        "BN_rand");
  Check(BN_add_word(bn.get(), 1) == 1, "BN_add_word");
  Asn1IntegerPtr serial(CheckNotNull(BN_to_ASN1_INTEGER(bn.get(), nullptr),
                                     "BN_to_ASN1_INTEGER"));
  Check(X509_set_serialNumber(cert, serial.get()) == 1,
        "X509_set_serialNumber");
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value,
                  const char* what) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtensionPtr ext(CheckNotNull(
      X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str()), what));
  Check(X509_add_ext(cert, ext.get(), -1) == 1, "X509_add_ext");
}

// What a certificate says, apart from its key and issuer.
struct CertSpec {
  const char* common_name;
  bool is_ca = false;
  // Seconds from now.
  long not_before = -kHour;
  long not_after = kDay;
  // Leaves only: an extendedKeyUsage and a subjectAltName value in
  // OpenSSL's configuration syntax.
  const char* extended_key_usage = nullptr;
  const char* subject_alt_names = nullptr;
};

// A certificate for `key` issued by `issuer` (signed with `issuer_key`), or
// self-signed with `key` when `issuer` is null.
X509Ptr NewCert(const CertSpec& spec, EVP_PKEY* key, X509* issuer,
                EVP_PKEY* issuer_key) {
  X509Ptr cert(CheckNotNull(X509_new(), "X509_new"));
  X509* const self = cert.get();
  if (issuer == nullptr) {
    issuer = self;
    issuer_key = key;
  }
  Check(X509_set_version(self, X509_VERSION_3) == 1, "X509_set_version");
  SetRandomSerial(self);
  Check(X509_gmtime_adj(X509_getm_notBefore(self), spec.not_before) != nullptr,
        "X509_gmtime_adj(notBefore)");
  Check(X509_gmtime_adj(X509_getm_notAfter(self), spec.not_after) != nullptr,
        "X509_gmtime_adj(notAfter)");
  X509_NAME* subject =
      CheckNotNull(X509_get_subject_name(self), "X509_get_subject_name");
  Check(X509_NAME_add_entry_by_txt(
            subject, "CN", MBSTRING_UTF8,
            reinterpret_cast<const unsigned char*>(spec.common_name), -1, -1,
            0) == 1,
        "X509_NAME_add_entry_by_txt(CN)");
  Check(X509_set_issuer_name(self, X509_get_subject_name(issuer)) == 1,
        "X509_set_issuer_name");
  Check(X509_set_pubkey(self, key) == 1, "X509_set_pubkey");

  // The subject key identifier comes first: a root's authority key
  // identifier is read from it.
  AddExtension(self, issuer, NID_subject_key_identifier, "hash",
               "subjectKeyIdentifier");
  AddExtension(self, issuer, NID_authority_key_identifier, "keyid:always",
               "authorityKeyIdentifier");
  if (spec.is_ca) {
    AddExtension(self, issuer, NID_basic_constraints, "critical,CA:TRUE",
                 "basicConstraints");
    AddExtension(self, issuer, NID_key_usage, "critical,keyCertSign,cRLSign",
                 "keyUsage");
  } else {
    AddExtension(self, issuer, NID_basic_constraints, "critical,CA:FALSE",
                 "basicConstraints");
    AddExtension(self, issuer, NID_key_usage, "critical,digitalSignature",
                 "keyUsage");
    AddExtension(self, issuer, NID_ext_key_usage,
                 CheckNotNull(spec.extended_key_usage, "a leaf's EKU"),
                 "extendedKeyUsage");
    AddExtension(self, issuer, NID_subject_alt_name,
                 CheckNotNull(spec.subject_alt_names, "a leaf's SAN"),
                 "subjectAltName");
  }
  Check(X509_sign(self, issuer_key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  Check(size > 0 && data != nullptr, "BIO_get_mem_data");
  return std::string(data, static_cast<size_t>(size));
}

std::string CertPem(X509* cert) {
  BioPtr bio(CheckNotNull(BIO_new(BIO_s_mem()), "BIO_new"));
  Check(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  return BioContents(bio.get());
}

std::string KeyPem(EVP_PKEY* key) {
  BioPtr bio(CheckNotNull(BIO_new(BIO_s_mem()), "BIO_new"));
  Check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr,
                                 nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return BioContents(bio.get());
}

struct Authority {
  PkeyPtr key;
  X509Ptr cert;
};

Authority NewAuthority(const char* common_name) {
  CertSpec spec{common_name};
  spec.is_ca = true;
  spec.not_before = -7 * kDay;
  spec.not_after = 30 * kDay;
  Authority ca;
  ca.key = NewP256Key();
  ca.cert = NewCert(spec, ca.key.get(), nullptr, nullptr);
  return ca;
}

KeyAndCert NewLeaf(const CertSpec& spec, const Authority& issuer) {
  PkeyPtr key = NewP256Key();
  X509Ptr cert = NewCert(spec, key.get(), issuer.cert.get(), issuer.key.get());
  return KeyAndCert{KeyPem(key.get()), CertPem(cert.get())};
}

CertSpec ServerSpec() {
  CertSpec spec{"h2rpc test server"};
  spec.extended_key_usage = "serverAuth";
  spec.subject_alt_names =
      "DNS:localhost,DNS:*.test.h2rpc.example,IP:127.0.0.1,IP:::1";
  return spec;
}

TestPki Generate() {
  const Authority ca = NewAuthority("h2rpc test CA");
  const Authority other_ca = NewAuthority("h2rpc test other CA");

  CertSpec expired = ServerSpec();
  expired.not_before = -2 * kDay;
  expired.not_after = -kDay;

  CertSpec client{"h2rpc test client"};
  client.extended_key_usage = "clientAuth";
  client.subject_alt_names =
      "DNS:client.test.h2rpc.example,URI:spiffe://h2rpc.test/client";

  CertSpec second_client{"h2rpc test client 2"};
  second_client.extended_key_usage = "clientAuth";
  second_client.subject_alt_names = "URI:spiffe://h2rpc.test/client2";

  TestPki pki;
  pki.ca_pem = CertPem(ca.cert.get());
  pki.server = NewLeaf(ServerSpec(), ca);
  pki.expired_server = NewLeaf(expired, ca);
  pki.client = NewLeaf(client, ca);
  pki.second_client = NewLeaf(second_client, ca);
  pki.other_ca_pem = CertPem(other_ca.cert.get());
  pki.server_from_other_ca = NewLeaf(ServerSpec(), other_ca);
  return pki;
}

}  // namespace

const TestPki& GetTestPki() {
  // Initialised once, thread-safely; never destroyed.
  static const TestPki* const pki = new TestPki(Generate());
  return *pki;
}

}  // namespace h2rpc::transport::tls::testing
