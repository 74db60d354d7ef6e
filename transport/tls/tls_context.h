#ifndef H2RPC_TRANSPORT_TLS_TLS_CONTEXT_H_
#define H2RPC_TRANSPORT_TLS_TLS_CONTEXT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/status.h"
#include "transport/tls/tls_resumption.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace h2rpc::transport::tls {

// ALPN "http/1.1" in wire form (length-prefixed): what a connection that
// speaks HTTP/1.1 negotiates (TlsSession::NewServer, NewClient).
inline constexpr unsigned char kAlpnHttp1Wire[] = {8,   'h', 't', 't', 'p',
                                                   '/', '1', '.', '1'};

// A private key and the certificate chain that goes with it (leaf first),
// both PEM.
struct KeyCertPair {
  std::string private_key_pem;
  std::string cert_chain_pem;
};

// A client's TLS settings.
struct ClientConfig {
  // Roots trusted to sign the server's certificate, PEM; empty: the
  // system's trust store (OpenSSL's default paths).
  std::string root_certs_pem;
  // The client's own certificate, for servers that ask for one; both empty:
  // none.
  KeyCertPair key_cert;
  // Sessions kept to resume (ClientSessionCache): at most this many
  // servers' (by name and address); 0: every connection makes a full
  // handshake.
  size_t session_cache_size = 0;
};

// Whether a server asks clients for a certificate and what it does with it
// (gRPC's grpc_ssl_client_certificate_request_type).
enum class ClientCertificateRequest {
  kDontRequest,
  kRequestButDontVerify,
  kRequestAndVerify,
  kRequireButDontVerify,
  kRequireAndVerify,
};

// A server's TLS settings.
struct ServerConfig {
  // At least one; at most one per key type (RSA, EC, Ed25519...): OpenSSL
  // serves the pair whose key type the client's signature algorithms allow.
  std::vector<KeyCertPair> key_certs;
  // Roots trusted to sign client certificates, PEM; needed by the two
  // modes that verify.
  std::string root_certs_pem;
  ClientCertificateRequest client_certificate_request =
      ClientCertificateRequest::kDontRequest;
  // Session tickets for clients to resume with, their keys rotated this
  // often (TicketKeyRing; a ticket resumes for at most two rotations);
  // zero: no tickets, every connection makes a full handshake.
  absl::Duration session_ticket_key_rotation = absl::ZeroDuration();
};

// An OpenSSL SSL_CTX configured as gRPC requires: TLS 1.2 or 1.3, the
// cipher suites gRPC permits (AES-GCM and ChaCha20-Poly1305 with ECDHE),
// ALPN "h2" offered (clients) or required (servers; a connection that also
// serves HTTP/1.1 takes "http/1.1" or none, TlsSession::NewServer), peer
// verification on for clients. Its settings are fixed once made; it is shared
// by every connection that uses it (each makes its own SSL object from it), and
// so are its resumption state (a client's session cache, a server's ticket
// keys), which changes behind mutexes. Thread-safe.
class TlsContext {
 public:
  // Bad PEM, a key that does not match its certificate, or a missing
  // setting: INVALID_ARGUMENT naming the field and OpenSSL's reason.
  static Status CreateClient(const ClientConfig& config,
                             std::shared_ptr<const TlsContext>* context);
  static Status CreateServer(const ServerConfig& config,
                             std::shared_ptr<const TlsContext>* context);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  bool is_server() const { return is_server_; }
  SSL_CTX* ssl_ctx() const { return ctx_; }
  // A client's sessions to resume; null when off.
  ClientSessionCache* session_cache() const { return sessions_.get(); }
  // A server's ticket keys; null without tickets.
  TicketKeyRing* ticket_keys() const { return ticket_keys_.get(); }

 private:
  TlsContext(SSL_CTX* ctx, bool is_server,
             std::unique_ptr<ClientSessionCache> sessions,
             std::unique_ptr<TicketKeyRing> ticket_keys);

  SSL_CTX* const ctx_;
  const bool is_server_;
  const std::unique_ptr<ClientSessionCache> sessions_;
  const std::unique_ptr<TicketKeyRing> ticket_keys_;
};

// The TLS context the new connections of a listening port or a channel
// use: fixed, or replaced as certificates rotate (rpc's
// FileWatcherCertificateProvider). A connection keeps the context it was
// made with. Thread-safe; Get() takes a mutex, once per new connection.
class TlsContextSlot {
 public:
  explicit TlsContextSlot(std::shared_ptr<const TlsContext> context)
      : context_(std::move(context)) {}

  std::shared_ptr<const TlsContext> Get() const {
    MutexLock lock(&mu_);
    return context_;
  }
  void Set(std::shared_ptr<const TlsContext> context) {
    {
      MutexLock lock(&mu_);
      context_.swap(context);
    }
    // The old context is released here, outside the lock.
  }

 private:
  mutable Mutex mu_;
  std::shared_ptr<const TlsContext> context_ ABSL_GUARDED_BY(mu_);
};

// OpenSSL's queued errors of this thread as one line ("error:0A000086:SSL
// routines::certificate verify failed; ..."), clearing the queue; `fallback`
// when it is empty.
std::string TakeOpenSslErrors(const char* fallback);

}  // namespace h2rpc::transport::tls

#endif  // H2RPC_TRANSPORT_TLS_TLS_CONTEXT_H_
