#include "transport/tls/tls_context.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::transport::tls {
namespace {

// The cipher suites gRPC permits by default: AEADs with forward secrecy.
constexpr char kTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
    "TLS_CHACHA20_POLY1305_SHA256";
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384";
// ALPN protocol list in wire form: length-prefixed "h2".
constexpr unsigned char kAlpnH2[] = {2, 'h', '2'};

struct CtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

Status Invalid(absl::string_view what, const char* fallback) {
  return Status(StatusCode::kInvalidArgument,
                absl::StrCat(what, ": ", TakeOpenSslErrors(fallback)));
}

BioPtr ReadOnlyBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate in `pem`, in order; INVALID_ARGUMENT if there is none
// or one does not parse.
Status ReadCertificates(const std::string& pem, absl::string_view field,
                        std::vector<X509Ptr>* certs) {
  BioPtr bio = ReadOnlyBio(pem);
  if (bio == nullptr) return Invalid(field, "out of memory");
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    certs->push_back(std::move(cert));
  }
  // Reading stops with "no start line" at the end of the input; anything
  // else is a malformed certificate.
  const unsigned long last = ERR_peek_last_error();
  if (ERR_GET_LIB(last) == ERR_LIB_PEM &&
      ERR_GET_REASON(last) == PEM_R_NO_START_LINE && !certs->empty()) {
    ERR_clear_error();
    return Status();
  }
  return Invalid(field, "no PEM certificate found");
}

Status AddRoots(SSL_CTX* ctx, const std::string& pem, bool also_client_cas) {
  std::vector<X509Ptr> roots;
  Status status = ReadCertificates(pem, "pem_root_certs", &roots);
  if (!status.ok()) return status;
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (const X509Ptr& root : roots) {
    if (X509_STORE_add_cert(store, root.get()) != 1) {
      return Invalid("pem_root_certs", "cannot add a root certificate");
    }
    if (also_client_cas && SSL_CTX_add_client_CA(ctx, root.get()) != 1) {
      return Invalid("pem_root_certs", "cannot add a client CA name");
    }
  }
  return Status();
}

Status UseKeyCert(SSL_CTX* ctx, const KeyCertPair& pair) {
  std::vector<X509Ptr> chain;
  Status status =
      ReadCertificates(pair.cert_chain_pem, "pem_cert_chain", &chain);
  if (!status.ok()) return status;
  BioPtr bio = ReadOnlyBio(pair.private_key_pem);
  PkeyPtr key(bio == nullptr ? nullptr
                             : PEM_read_bio_PrivateKey(bio.get(), nullptr,
                                                       nullptr, nullptr));
  if (key == nullptr) return Invalid("pem_private_key", "no PEM private key");
  if (SSL_CTX_use_certificate(ctx, chain[0].get()) != 1) {
    return Invalid("pem_cert_chain", "unusable certificate");
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
      return Invalid("pem_cert_chain", "unusable chain certificate");
    }
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return Invalid("pem_private_key", "does not match the certificate");
  }
  return Status();
}

// Settings both sides share.
Status NewContext(const SSL_METHOD* method, CtxPtr* out) {
  ERR_clear_error();
  CtxPtr ctx(SSL_CTX_new(method));
  if (ctx == nullptr) return Invalid("TLS context", "SSL_CTX_new failed");
  if (SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_ciphersuites(ctx.get(), kTls13Suites) != 1 ||
      SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1) {
    return Invalid("TLS context", "cannot set versions or ciphers");
  }
  // No TLS 1.2 renegotiation (a peer-driven CPU cost); no session tickets
  // unless resumption is on (CreateClient, CreateServer).
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
  *out = std::move(ctx);
  return Status();
}

// Servers: whether the connection also serves HTTP/1.1 (TlsSession::NewServer
// sets its app data then).
bool AcceptsHttp1(SSL* ssl) { return SSL_get_app_data(ssl) != nullptr; }

// Servers: a client that offers no ALPN at all is refused with a
// no_application_protocol alert as its hello arrives, as SelectAlpn refuses
// one offering ALPN without h2 (OpenSSL calls SelectAlpn only when ALPN is
// offered), unless the connection also serves HTTP/1.1, whose clients need
// not offer ALPN.
int RequireAlpn(SSL* ssl, int* alert, void*) {
  const unsigned char* extension = nullptr;
  size_t length = 0;
  if (AcceptsHttp1(ssl) ||
      SSL_client_hello_get0_ext(
          ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &extension,
          &length) == 1) {
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  *alert = SSL_AD_NO_APPLICATION_PROTOCOL;
  return SSL_CLIENT_HELLO_ERROR;
}

// Servers: accept only clients that offer h2, or, on a connection that also
// serves HTTP/1.1, http/1.1 when they do not offer h2.
int SelectAlpn(SSL* ssl, const unsigned char** out, unsigned char* out_length,
               const unsigned char* offered, unsigned int offered_length,
               void*) {
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_length, kAlpnH2, sizeof(kAlpnH2),
                            offered,
                            offered_length) == OPENSSL_NPN_NEGOTIATED ||
      (AcceptsHttp1(ssl) &&
       SSL_select_next_proto(&selected, out_length, kAlpnHttp1Wire,
                             sizeof(kAlpnHttp1Wire), offered,
                             offered_length) == OPENSSL_NPN_NEGOTIATED)) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// Modes that request a certificate without verifying it.
int AcceptAnyCertificate(int, X509_STORE_CTX*) { return 1; }

const TlsContext* ContextOf(SSL* ssl) {
  return static_cast<const TlsContext*>(
      SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
}

// Clients: a session (a TLS 1.3 ticket, after the handshake; a TLS 1.2
// one at its end) goes to the context's cache under the connection's key
// (TlsSession::NewClient sets it as the SSL's app data). A copy: OpenSSL
// marks the session of a connection freed without close_notify as not
// resumable, and a connection that ends abruptly does not make its
// ticket any less valid. 0: OpenSSL keeps its own reference.
int StoreNewSession(SSL* ssl, SSL_SESSION* session) {
  const auto* key = static_cast<const std::string*>(SSL_get_app_data(ssl));
  ClientSessionCache* cache = ContextOf(ssl)->session_cache();
  if (key == nullptr || key->empty() || cache == nullptr) return 0;
  if (SSL_SESSION* copy = SSL_SESSION_dup(session)) cache->Put(*key, copy);
  return 0;
}

// Servers: the key that encrypts (`encrypt`) or decrypts a session ticket,
// named in the ticket's first 16 bytes. OpenSSL's contract: 1 use it, 2 use
// it and issue a fresh ticket, 0 no such key (a full handshake), -1
// failure.
int TicketKey(SSL* ssl, unsigned char key_name[16],
              unsigned char iv[EVP_MAX_IV_LENGTH], EVP_CIPHER_CTX* cipher,
              EVP_MAC_CTX* mac, int encrypt) {
  TicketKeyRing* keys = ContextOf(ssl)->ticket_keys();
  TicketKeyRing::Key key;
  if (encrypt) {
    key = keys->Current();
    std::memcpy(key_name, key.name, sizeof(key.name));
    if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1) {
      return -1;
    }
  } else if (!keys->Find(key_name, &key)) {
    return 0;
  }
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key.hmac_key,
                                        sizeof(key.hmac_key)),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end()};
  if (EVP_MAC_CTX_set_params(mac, params) != 1) return -1;
  const int initialized = encrypt
                              ? EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(),
                                                   nullptr, key.aes_key, iv)
                              : EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(),
                                                   nullptr, key.aes_key, iv);
  // A resumed connection always gets a fresh ticket (2), under the current
  // key: clients use each ticket once.
  if (initialized != 1) return -1;
  return encrypt ? 1 : 2;
}

// What a session is bound to: a session made under one server context is
// never resumed under another (OpenSSL requires one when clients are
// verified; each context's ticket keys are its own anyway).
constexpr unsigned char kSessionIdContext[] = "h2rpc";

}  // namespace

TlsContext::TlsContext(SSL_CTX* ctx, bool is_server,
                       std::unique_ptr<ClientSessionCache> sessions,
                       std::unique_ptr<TicketKeyRing> ticket_keys)
    : ctx_(ctx),
      is_server_(is_server),
      sessions_(std::move(sessions)),
      ticket_keys_(std::move(ticket_keys)) {
  SSL_CTX_set_app_data(ctx_, this);
}

std::string TakeOpenSslErrors(const char* fallback) {
  std::string errors;
  char buffer[256];
  while (const unsigned long error = ERR_get_error()) {
    ERR_error_string_n(error, buffer, sizeof(buffer));
    if (!errors.empty()) errors += "; ";
    errors += buffer;
  }
  return errors.empty() ? std::string(fallback) : errors;
}

Status TlsContext::CreateClient(const ClientConfig& config,
                                std::shared_ptr<const TlsContext>* context) {
  CtxPtr ctx;
  Status status = NewContext(TLS_client_method(), &ctx);
  if (!status.ok()) return status;
  if (config.root_certs_pem.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
      return Invalid("system trust store", "cannot load default roots");
    }
  } else {
    status = AddRoots(ctx.get(), config.root_certs_pem, false);
    if (!status.ok()) return status;
  }
  const KeyCertPair& pair = config.key_cert;
  if (!pair.private_key_pem.empty() || !pair.cert_chain_pem.empty()) {
    status = UseKeyCert(ctx.get(), pair);
    if (!status.ok()) return status;
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  // Unlike the rest of OpenSSL, 0 is success here.
  if (SSL_CTX_set_alpn_protos(ctx.get(), kAlpnH2, sizeof(kAlpnH2)) != 0) {
    return Invalid("TLS context", "cannot set ALPN");
  }
  std::unique_ptr<ClientSessionCache> sessions;
  if (config.session_cache_size > 0) {
    sessions = std::make_unique<ClientSessionCache>(config.session_cache_size);
    SSL_CTX_clear_options(ctx.get(), SSL_OP_NO_TICKET);
    // OpenSSL keeps nothing itself; StoreNewSession gets every session.
    SSL_CTX_set_session_cache_mode(
        ctx.get(), SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx.get(), StoreNewSession);
  } else {
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  }
  context->reset(new TlsContext(ctx.release(), /*is_server=*/false,
                                std::move(sessions), nullptr));
  return Status();
}

Status TlsContext::CreateServer(const ServerConfig& config,
                                std::shared_ptr<const TlsContext>* context) {
  if (config.key_certs.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "TLS server credentials need at least one key/cert pair");
  }
  CtxPtr ctx;
  Status status = NewContext(TLS_server_method(), &ctx);
  if (!status.ok()) return status;
  int key_types[8];
  size_t key_type_count = 0;
  for (const KeyCertPair& pair : config.key_certs) {
    status = UseKeyCert(ctx.get(), pair);
    if (!status.ok()) return status;
    const int type = EVP_PKEY_get_base_id(SSL_CTX_get0_privatekey(ctx.get()));
    for (size_t i = 0; i < key_type_count; ++i) {
      if (key_types[i] == type) {
        return Status(StatusCode::kInvalidArgument,
                      "two key/cert pairs with the same key type: OpenSSL "
                      "serves one pair per key type");
      }
    }
    if (key_type_count == 8) {
      return Status(StatusCode::kInvalidArgument, "more than 8 key/cert pairs");
    }
    key_types[key_type_count++] = type;
  }
  using Request = ClientCertificateRequest;
  const Request request = config.client_certificate_request;
  const bool verify = request == Request::kRequestAndVerify ||
                      request == Request::kRequireAndVerify;
  if (verify && config.root_certs_pem.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "verifying client certificates needs pem_root_certs");
  }
  if (!config.root_certs_pem.empty()) {
    status = AddRoots(ctx.get(), config.root_certs_pem, true);
    if (!status.ok()) return status;
  }
  int mode = SSL_VERIFY_NONE;
  if (request != Request::kDontRequest) mode = SSL_VERIFY_PEER;
  if (request == Request::kRequireButDontVerify ||
      request == Request::kRequireAndVerify) {
    mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  }
  SSL_CTX_set_verify(ctx.get(), mode, verify ? nullptr : AcceptAnyCertificate);
  SSL_CTX_set_client_hello_cb(ctx.get(), RequireAlpn, nullptr);
  SSL_CTX_set_alpn_select_cb(ctx.get(), SelectAlpn, nullptr);
  // No session cache: resumption, when on, is by stateless tickets only
  // (no per-client state on the server).
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  std::unique_ptr<TicketKeyRing> ticket_keys;
  const absl::Duration rotation = config.session_ticket_key_rotation;
  if (rotation > absl::ZeroDuration()) {
    ticket_keys = std::make_unique<TicketKeyRing>(rotation);
    SSL_CTX_clear_options(ctx.get(), SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx.get(), 1);
    SSL_CTX_set_timeout(ctx.get(),
                        static_cast<long>(absl::ToInt64Seconds(2 * rotation)));
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx.get(), TicketKey);
    if (SSL_CTX_set_session_id_context(ctx.get(), kSessionIdContext,
                                       sizeof(kSessionIdContext) - 1) != 1) {
      return Invalid("TLS context", "cannot set the session id context");
    }
  } else {
    SSL_CTX_set_num_tickets(ctx.get(), 0);
  }
  context->reset(new TlsContext(ctx.release(), /*is_server=*/true, nullptr,
                                std::move(ticket_keys)));
  return Status();
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace h2rpc::transport::tls
