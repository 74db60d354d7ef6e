#ifndef H2RPC_TRANSPORT_TLS_TESTING_TEST_PKI_H_
#define H2RPC_TRANSPORT_TLS_TESTING_TEST_PKI_H_

// A throwaway public key infrastructure for TLS tests, generated in the test
// process with OpenSSL: no checked-in keys, no openssl command line.
//
// Every key is EC P-256 and every certificate is X.509 v3 signed with
// ECDSA-SHA256. Each certificate carries subject and authority key
// identifiers, critical basicConstraints and critical keyUsage, so OpenSSL 3
// verification with X509_V_FLAG_X509_STRICT accepts the valid chains.
// Leaf certificates are valid from one hour before generation to one day
// after it. The roots are valid from seven days before to thirty days after.

#include <string>

namespace h2rpc::transport::tls::testing {

// One end entity: its key and its certificate chain, both PEM.
struct KeyAndCert {
  // The unencrypted private key, PKCS#8 ("BEGIN PRIVATE KEY").
  std::string private_key_pem;
  // The leaf certificate only: each leaf is issued directly by its root, and
  // the root is not part of the chain.
  std::string cert_chain_pem;
};

struct TestPki {
  // Self-signed root "CN=h2rpc test CA".
  std::string ca_pem;
  // "CN=h2rpc test server", issued by `ca_pem`. Subject alternative names
  // DNS:localhost, DNS:*.test.h2rpc.example, IP:127.0.0.1 and IP:::1;
  // extended key usage serverAuth.
  KeyAndCert server;
  // The names, usages and issuer of `server`, with a validity that ended:
  // notBefore two days and notAfter one day before generation.
  KeyAndCert expired_server;
  // "CN=h2rpc test client", issued by `ca_pem`. Subject alternative names
  // DNS:client.test.h2rpc.example and URI:spiffe://h2rpc.test/client;
  // extended key usage clientAuth.
  KeyAndCert client;
  // "CN=h2rpc test client 2", issued by `ca_pem`: subject alternative name
  // URI:spiffe://h2rpc.test/client2; extended key usage clientAuth.
  KeyAndCert second_client;
  // A second self-signed root, "CN=h2rpc test other CA", unrelated to
  // `ca_pem`.
  std::string other_ca_pem;
  // The names and usages of `server`, issued by `other_ca_pem`.
  KeyAndCert server_from_other_ca;
};

// The process's test PKI. The first call generates it (a few milliseconds);
// later calls return the same object, which lives until the process exits.
// Any thread may call, concurrently. Generation failing is a broken OpenSSL
// installation: the process prints OpenSSL's error queue and aborts.
const TestPki& GetTestPki();

}  // namespace h2rpc::transport::tls::testing

#endif  // H2RPC_TRANSPORT_TLS_TESTING_TEST_PKI_H_
