#ifndef H2RPC_RPC_CREDENTIALS_H_
#define H2RPC_RPC_CREDENTIALS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "rpc/call_credentials.h"
#include "rpc/certificate_provider.h"
#include "rpc/status.h"

namespace h2rpc {

namespace transport::tls {
class TlsContextSlot;
}  // namespace transport::tls
namespace internal {
class CredentialsAccess;
}  // namespace internal

// What a client needs for TLS (gRPC's grpc::SslCredentialsOptions).
struct SslCredentialsOptions {
  // Roots trusted to sign servers' certificates, PEM; empty: the system's
  // trust store.
  std::string pem_root_certs;
  // The client's own key and certificate chain (leaf first), PEM, for
  // servers that ask for one (mutual TLS); both empty: none.
  std::string pem_private_key;
  std::string pem_cert_chain;
  // Instead of the three fields above (which must then be empty): the roots
  // and the client's own key and chain from files that may change
  // (rpc/certificate_provider.h); each new connection uses what they hold
  // then.
  std::shared_ptr<FileWatcherCertificateProvider>
      certificate_provider;  // TLS session resumption: the sessions (tickets)
                             // of up to this many
  // servers, by name and address, are kept, so that the next connection to
  // one (a reconnect, another channel with these credentials) resumes
  // instead of making a full handshake; each is used once. 0: off.
  size_t session_cache_size = 256;
};

// How a channel secures its connections: InsecureChannelCredentials()
// (plaintext h2c), LocalCredentials() (plaintext over a unix socket) or
// SslCredentials() (TLS 1.2 or 1.3 with ALPN h2, the server's certificate
// verified against the roots and its name matched to the target's host, or
// to ChannelOptions::ssl_target_name_override); and the call credentials
// every call of the channel carries (CompositeChannelCredentials).
// Immutable; one object may serve any number of channels. Thread-safe.
class ChannelCredentials {
 public:
  ~ChannelCredentials();
  ChannelCredentials(const ChannelCredentials&) = delete;
  ChannelCredentials& operator=(const ChannelCredentials&) = delete;

  // TLS.
  bool secure() const { return secure_; }
  // LocalCredentials(): plaintext that may carry call credentials.
  bool local() const { return local_; }
  // Null: none.
  const std::shared_ptr<CallCredentials>& call_credentials() const {
    return call_credentials_;
  }
  // OK, or why the settings are unusable (INVALID_ARGUMENT naming the field
  // and OpenSSL's reason). A channel made with unusable credentials fails
  // every call with UNAVAILABLE carrying this message.
  const Status& status() const { return status_; }

 private:
  friend class internal::CredentialsAccess;
  friend std::shared_ptr<ChannelCredentials> InsecureChannelCredentials();
  friend std::shared_ptr<ChannelCredentials> SslCredentials(
      const SslCredentialsOptions& options);
  friend std::shared_ptr<ChannelCredentials> LocalCredentials();
  friend std::shared_ptr<ChannelCredentials> CompositeChannelCredentials(
      const std::shared_ptr<ChannelCredentials>& channel_credentials,
      const std::shared_ptr<CallCredentials>& call_credentials);
  ChannelCredentials(bool secure, bool local, Status status,
                     std::shared_ptr<transport::tls::TlsContextSlot> tls,
                     std::shared_ptr<CallCredentials> call_credentials);

  const bool secure_;
  const bool local_;
  const Status status_;
  // The OpenSSL context new connections use; null when insecure or
  // invalid.
  const std::shared_ptr<transport::tls::TlsContextSlot> tls_;
  const std::shared_ptr<CallCredentials> call_credentials_;
};

// Plaintext HTTP/2 (h2c).
std::shared_ptr<ChannelCredentials> InsecureChannelCredentials();
// Plaintext HTTP/2 over a unix socket (gRPC's LocalCredentials(UDS)):
// traffic that never leaves the host, so call credentials may be sent. A
// channel whose target is not unix: or unix-abstract: fails every call with
// UNAVAILABLE saying so.
std::shared_ptr<ChannelCredentials> LocalCredentials();
// `channel_credentials`' connections, with `call_credentials` on every
// call (gRPC C++'s CompositeChannelCredentials); credentials that already
// have call credentials keep them, first. Either null, or unusable: the
// result is unusable (status()) with that reason.
std::shared_ptr<ChannelCredentials> CompositeChannelCredentials(
    const std::shared_ptr<ChannelCredentials>& channel_credentials,
    const std::shared_ptr<CallCredentials>& call_credentials);
// TLS. Parses the PEM and builds the OpenSSL context now; see
// ChannelCredentials::status() for what happens when that fails.
std::shared_ptr<ChannelCredentials> SslCredentials(
    const SslCredentialsOptions& options);

// Whether a TLS server asks clients for a certificate, and whether it
// requires one and verifies it against pem_root_certs (gRPC's
// grpc_ssl_client_certificate_request_type). A client whose certificate
// fails a required verification, or who sends none when one is required,
// fails the handshake.
enum class SslClientCertificateRequest {
  kDontRequest,
  kRequestButDontVerify,
  kRequestAndVerify,
  kRequireButDontVerify,
  kRequireAndVerify,
};

// What a server needs for TLS (gRPC's grpc::SslServerCredentialsOptions).
struct SslServerCredentialsOptions {
  struct PemKeyCertPair {
    std::string private_key;
    std::string cert_chain;  // leaf first
  };
  // At least one; at most one per key type (RSA, EC, ...): the handshake
  // picks the pair whose key type the client supports.
  std::vector<PemKeyCertPair> pem_key_cert_pairs;
  // Roots trusted to sign client certificates, PEM; needed by the modes
  // that verify.
  std::string pem_root_certs;
  SslClientCertificateRequest client_certificate_request =
      SslClientCertificateRequest::kDontRequest;
  // Instead of pem_key_cert_pairs and pem_root_certs (which must then be
  // empty): one key and chain, and the roots, from files that may change
  // (rpc/certificate_provider.h); each new connection uses what they hold
  // then.
  std::shared_ptr<FileWatcherCertificateProvider>
      certificate_provider;  // TLS session tickets, for clients to resume with:
                             // encrypted with keys
  // that only this credentials object holds (random, in memory), rotated
  // this often; a ticket resumes for at most two rotations. No state per
  // client is kept. Zero: no tickets (every connection makes a full
  // handshake).
  absl::Duration session_ticket_key_rotation = absl::Hours(1);
};

// How a server secures the connections of one listening port
// (Server::Builder::AddListeningPort). Immutable; shareable. Thread-safe.
class ServerCredentials {
 public:
  ~ServerCredentials();
  ServerCredentials(const ServerCredentials&) = delete;
  ServerCredentials& operator=(const ServerCredentials&) = delete;

  bool secure() const { return secure_; }
  // OK, or why the settings are unusable (INVALID_ARGUMENT naming the field
  // and OpenSSL's reason); BuildAndStart then fails with it.
  const Status& status() const { return status_; }

 private:
  friend class internal::CredentialsAccess;
  friend std::shared_ptr<ServerCredentials> InsecureServerCredentials();
  friend std::shared_ptr<ServerCredentials> SslServerCredentials(
      const SslServerCredentialsOptions& options);
  ServerCredentials(bool secure, Status status,
                    std::shared_ptr<transport::tls::TlsContextSlot> tls);

  const bool secure_;
  const Status status_;
  const std::shared_ptr<transport::tls::TlsContextSlot> tls_;
};

// Plaintext HTTP/2 (h2c).
std::shared_ptr<ServerCredentials> InsecureServerCredentials();
// TLS; requires ALPN h2 from clients. Builds the OpenSSL context now.
std::shared_ptr<ServerCredentials> SslServerCredentials(
    const SslServerCredentialsOptions& options);

}  // namespace h2rpc

#endif  // H2RPC_RPC_CREDENTIALS_H_
