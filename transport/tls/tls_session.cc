#include "transport/tls/tls_session.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::transport::tls {
namespace {

// The largest plaintext of one TLS record.
constexpr size_t kMaxRecordPlaintext = 16 * 1024;

// Where the sessions of one thread put a record's plaintext: what SSL_read
// decrypts (handed to the inner session before the next record is read),
// and small pieces of inner output gathered into one record (encrypted
// before anything else runs). They take turns with these buffers, so an
// idle connection holds none. Allocated on a thread's first use, once.
struct RecordScratch {
  char read[kMaxRecordPlaintext];
  char gathered[kMaxRecordPlaintext];
  // A read's plaintext is being fed to an inner session: a read nested in
  // that feed (none of h2rpc's sessions makes one) gets buffers of its own.
  bool reading = false;
};

RecordScratch& ThreadScratch() {
  thread_local std::unique_ptr<RecordScratch> scratch;
  if (scratch == nullptr) scratch = std::make_unique<RecordScratch>();
  return *scratch;
}

Status Unavailable(absl::string_view what, const char* fallback) {
  return Status(StatusCode::kUnavailable,
                absl::StrCat(what, ": ", TakeOpenSslErrors(fallback)));
}

long BioCtrl(BIO*, int command, long, void*) {
  return command == BIO_CTRL_FLUSH ? 1 : 0;
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

bool IsIpAddress(const std::string& name) {
  unsigned char address[16];
  return inet_pton(AF_INET, name.c_str(), address) == 1 ||
         inet_pton(AF_INET6, name.c_str(), address) == 1;
}

std::string AsString(const ASN1_STRING* value) {
  return std::string(
      reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
      static_cast<size_t>(ASN1_STRING_length(value)));
}

// The peer's leaf certificate's names, in the order the certificate has
// them.
void ReadNames(X509* cert, PeerIdentity* identity) {
  X509_NAME* subject = X509_get_subject_name(cert);
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (X509_NAME_print_ex(bio, subject, 0, XN_FLAG_RFC2253) >= 0) {
      char* data = nullptr;
      const long size = BIO_get_mem_data(bio, &data);
      if (size > 0) identity->subject.assign(data, static_cast<size_t>(size));
    }
    BIO_free(bio);
  }
  const int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (cn >= 0) {
    identity->common_name =
        AsString(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, cn)));
  }
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    switch (name->type) {
      case GEN_DNS:
        identity->dns_names.push_back(AsString(name->d.dNSName));
        break;
      case GEN_URI:
        identity->uris.push_back(AsString(name->d.uniformResourceIdentifier));
        break;
      case GEN_EMAIL:
        identity->emails.push_back(AsString(name->d.rfc822Name));
        break;
      case GEN_IPADD: {
        const ASN1_OCTET_STRING* ip = name->d.iPAddress;
        char text[INET6_ADDRSTRLEN];
        const int length = ASN1_STRING_length(ip);
        const int family =
            length == 4 ? AF_INET : (length == 16 ? AF_INET6 : AF_UNSPEC);
        if (family != AF_UNSPEC &&
            inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof(text))) {
          identity->ip_addresses.push_back(text);
        }
        break;
      }
      default:
        break;
    }
  }
  GENERAL_NAMES_free(names);
}

}  // namespace

std::unique_ptr<TlsSession> TlsSession::NewClient(
    std::shared_ptr<const TlsContext> context, absl::string_view server_name,
    std::string session_key, bool http1) {
  auto session = std::unique_ptr<TlsSession>(
      new TlsSession(std::move(context), /*client=*/true, server_name,
                     std::move(session_key)));
  if (http1 && session->ssl_ != nullptr) {
    // In place of the context's "h2".
    session->accepts_http1_ = SSL_set_alpn_protos(session->ssl_, kAlpnHttp1Wire,
                                                  sizeof(kAlpnHttp1Wire)) == 0;
  }
  return session;
}

std::unique_ptr<TlsSession> TlsSession::NewServer(
    std::shared_ptr<const TlsContext> context, bool accepts_http1) {
  auto session = std::unique_ptr<TlsSession>(
      new TlsSession(std::move(context), /*client=*/false, {}, {}));
  session->accepts_http1_ = accepts_http1;
  // Read by the context's ALPN callbacks (AcceptsHttp1).
  if (accepts_http1 && session->ssl_ != nullptr) {
    SSL_set_app_data(session->ssl_, &session->accepts_http1_);
  }
  return session;
}

TlsSession::TlsSession(std::shared_ptr<const TlsContext> context, bool client,
                       absl::string_view server_name, std::string session_key)
    : context_(std::move(context)),
      client_(client),
      session_key_(std::move(session_key)) {
  ERR_clear_error();
  ssl_ = SSL_new(context_->ssl_ctx());
  BIO* bio = ssl_ == nullptr ? nullptr : BIO_new(BioMethod());
  if (bio == nullptr) {
    SSL_free(ssl_);
    ssl_ = nullptr;
    return;
  }
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways: SSL owns it
  if (!client_) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  const std::string name(server_name);
  bool named;
  if (IsIpAddress(name)) {
    named =
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str()) == 1;
  } else {
    named = SSL_set1_host(ssl_, name.c_str()) == 1 &&
            SSL_set_tlsext_host_name(ssl_, name.c_str()) == 1;
  }
  if (!named) {
    SSL_free(ssl_);
    ssl_ = nullptr;
    return;
  }
  ClientSessionCache* cache = context_->session_cache();
  if (cache == nullptr || session_key_.empty()) return;
  SSL_set_app_data(ssl_, &session_key_);
  if (SSL_SESSION* session = cache->Take(session_key_)) {
    // A session the server no longer takes just means a full handshake.
    SSL_set_session(ssl_, session);
    SSL_SESSION_free(session);
  }
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

BIO_METHOD* TlsSession::BioMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "h2rpc TLS session");
    if (m == nullptr) return m;
    BIO_meth_set_read(m, &TlsSession::BioRead);
    BIO_meth_set_write(m, &TlsSession::BioWrite);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

int TlsSession::BioRead(BIO* bio, char* data, int size) {
  auto* self = static_cast<TlsSession*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (self->in_.empty()) {
    BIO_set_retry_read(bio);
    return -1;
  }
  const size_t n = std::min(self->in_.size(), static_cast<size_t>(size));
  memcpy(data, self->in_.data(), n);
  self->in_.remove_prefix(n);
  return static_cast<int>(n);
}

int TlsSession::BioWrite(BIO* bio, const char* data, int size) {
  auto* self = static_cast<TlsSession*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (!self->client_) self->hello_sent_ = true;
  self->out_.append(data, static_cast<size_t>(size));
  return size;
}

void TlsSession::Start(io::Wire* wire) {
  outer_ = wire;
  inner_->Start(this);
  if (closed_) return;
  if (ssl_ == nullptr) {
    Fail(Unavailable("cannot start TLS", "out of memory"));
    return;
  }
  // A client speaks first: its hello goes out now.
  if (client_) Advance();
}

void TlsSession::Feed(absl::string_view bytes) {
  if (closed_) return;
  in_ = bytes;
  Advance();
  in_ = absl::string_view();
}

void TlsSession::Advance() {
  if (!handshake_done_) {
    ERR_clear_error();
    const int done = SSL_do_handshake(ssl_);
    if (done != 1) {
      if (SSL_get_error(ssl_, done) != SSL_ERROR_WANT_READ) {
        const long verify = SSL_get_verify_result(ssl_);
        std::string reason = TakeOpenSslErrors("connection reset");
        if (verify != X509_V_OK) {
          absl::StrAppend(&reason, " (", X509_verify_cert_error_string(verify),
                          ")");
        }
        Fail(Status(StatusCode::kUnavailable,
                    absl::StrCat("TLS handshake failed: ", reason)));
        return;
      }
      if (has_output()) outer_->RequestFlush();
      return;
    }
    if (!FinishHandshake()) return;
  }
  ReadRecords();
  if (!closed_ && has_output()) outer_->RequestFlush();
}

bool TlsSession::FinishHandshake() {
  const unsigned char* alpn = nullptr;
  unsigned int alpn_length = 0;
  SSL_get0_alpn_selected(ssl_, &alpn, &alpn_length);
  const bool h2 = alpn_length == 2 && memcmp(alpn, "h2", 2) == 0;
  // HTTP/1.1 (or a client that named no protocol): the bytes tell
  // (http1::ServerBridge).
  const bool http1 = accepts_http1_ &&
                     (alpn_length == 0 ||
                      (alpn_length == 8 && memcmp(alpn, "http/1.1", 8) == 0));
  if (!h2 && !http1) {
    Fail(Status(StatusCode::kUnavailable,
                "peer did not negotiate h2 (TLS ALPN)"));
    return false;
  }
  auto identity = std::make_shared<PeerIdentity>();
  identity->protocol = SSL_get_version(ssl_);
  identity->session_reused = SSL_session_reused(ssl_) == 1;
  if (X509* cert = SSL_get0_peer_certificate(ssl_)) {
    identity->certificate_verified = SSL_get_verify_result(ssl_) == X509_V_OK;
    ReadNames(cert, identity.get());
  }
  identity_ = std::move(identity);
  handshake_done_ = true;
  // The inner session's queued output (preface, SETTINGS) can go now.
  outer_->RequestFlush();
  return true;
}

namespace {

// `cert` in DER; empty for none.
std::string Der(X509* cert) {
  if (cert == nullptr) return std::string();
  const int size = i2d_X509(cert, nullptr);
  if (size <= 0) return std::string();
  std::string der(static_cast<size_t>(size), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509(cert, &out);
  return der;
}

}  // namespace

bool TlsSession::GetTlsDetails(io::TlsDetails* details) const {
  if (!handshake_done_) return false;
  const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl_);
  details->cipher = cipher != nullptr ? SSL_CIPHER_standard_name(cipher) : "";
  details->local_certificate = Der(SSL_get_certificate(ssl_));
  details->peer_certificate = Der(SSL_get0_peer_certificate(ssl_));
  return true;
}

void TlsSession::ReadRecords() {
  RecordScratch& scratch = ThreadScratch();
  std::unique_ptr<RecordScratch> nested;
  RecordScratch& mine =
      scratch.reading ? *(nested = std::make_unique<RecordScratch>()) : scratch;
  mine.reading = true;
  struct Done {
    RecordScratch& scratch;
    ~Done() { scratch.reading = false; }
  } done{mine};
  while (!closed_) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, mine.read, sizeof(mine.read));
    if (n > 0) {
      inner_->Feed(absl::string_view(mine.read, static_cast<size_t>(n)));
      continue;
    }
    switch (SSL_get_error(ssl_, n)) {
      case SSL_ERROR_WANT_READ:
        return;
      case SSL_ERROR_ZERO_RETURN:  // close_notify: no more input
        inner_->OnPeerClosed();
        return;
      default:
        Fail(Unavailable("TLS read failed", "bad record"));
        return;
    }
  }
}

void TlsSession::OnPeerClosed() {
  if (closed_) return;
  if (!handshake_done_) {
    Fail(Status(StatusCode::kUnavailable,
                "TLS handshake failed: the peer closed the connection"));
    return;
  }
  inner_->OnPeerClosed();
}

void TlsSession::OnWireError(const Status& why) {
  if (!closed_) inner_->OnWireError(why);
}

void TlsSession::EncryptInnerOutput() {
  iovec pieces[kMaxPiecesPerRecord];
  while (!closed_ && out_.size() - out_sent_ < kOutputBatch) {
    const size_t count =
        inner_->PendingOutputPieces(pieces, kMaxPiecesPerRecord);
    if (closed_ || count == 0) return;
    // A piece of a record's size or more, or the only one, is encrypted
    // where it is; smaller pieces (a DATA frame's header before its
    // payload) are gathered into one record rather than each making one.
    const char* plain = static_cast<const char*>(pieces[0].iov_base);
    size_t n = std::min(pieces[0].iov_len, kOutputBatch);
    if (count > 1 && n < kMaxRecordPlaintext) {
      char* const gathered = ThreadScratch().gathered;
      n = 0;
      for (size_t i = 0; i < count && n < kMaxRecordPlaintext; ++i) {
        const size_t take =
            std::min(pieces[i].iov_len, kMaxRecordPlaintext - n);
        std::memcpy(gathered + n, pieces[i].iov_base, take);
        n += take;
      }
      plain = gathered;
    }
    ERR_clear_error();
    const int written = SSL_write(ssl_, plain, static_cast<int>(n));
    if (written <= 0) {
      Fail(Unavailable("TLS write failed", "SSL_write failed"));
      return;
    }
    inner_->ConsumeOutput(static_cast<size_t>(written));
  }
}

absl::string_view TlsSession::PendingOutput() {
  if (closed_) return absl::string_view();
  if (!has_output()) {
    out_.clear();
    out_sent_ = 0;
  }
  if (handshake_done_ && !close_notify_sent_) EncryptInnerOutput();
  if (!has_output()) {
    if (shutdown_pending_ && !write_shut_ && !closed_) {
      write_shut_ = true;
      outer_->ShutdownWrite();
    }
    return absl::string_view();
  }
  return absl::string_view(out_.data() + out_sent_, out_.size() - out_sent_);
}

void TlsSession::ConsumeOutput(size_t n) { out_sent_ += n; }

void TlsSession::RequestFlush() {
  if (!closed_) outer_->RequestFlush();
}

void TlsSession::ShutdownWrite() {
  if (closed_ || shutdown_pending_) return;
  shutdown_pending_ = true;
  if (handshake_done_ && !close_notify_sent_) {
    close_notify_sent_ = true;
    ERR_clear_error();
    SSL_shutdown(ssl_);  // queues close_notify; the peer's is not awaited
    ERR_clear_error();
  }
  outer_->RequestFlush();
}

void TlsSession::CloseWire(bool flush_first) {
  if (closed_) return;
  if (flush_first && handshake_done_ && !close_notify_sent_) {
    EncryptInnerOutput();
    if (closed_) return;
    close_notify_sent_ = true;
    ERR_clear_error();
    SSL_shutdown(ssl_);
    ERR_clear_error();
  }
  const bool cancelled = CancelHandshake();
  // The outer wire's last write reads PendingOutput(): what is encrypted,
  // or after a failure the alert that tells the peer why, or the alerts
  // that cancel the handshake.
  outer_->CloseWire(flush_first || failed_ || cancelled);
  closed_ = true;
}

bool TlsSession::CancelHandshake() {
  // Only a server that answered a hello and has neither finished nor
  // failed the handshake. In TLS 1.2 its records stay plaintext until its
  // ChangeCipherSpec, which a full handshake (no resumption: no session
  // cache or tickets) sends only once the handshake is done, so the alerts
  // can be written as plain records: user_canceled, then close_notify, both
  // warnings (RFC 5246, 7.2.2). In TLS 1.3 everything after the ServerHello
  // is under handshake keys that only OpenSSL holds, and OpenSSL has no
  // call that sends an alert during a handshake (SSL_shutdown refuses), so
  // the close goes without one; before a hello there is no TLS to speak.
  if (client_ || handshake_done_ || failed_ || !hello_sent_ ||
      SSL_version(ssl_) != TLS1_2_VERSION || SSL_session_reused(ssl_) != 0) {
    return false;
  }
  static constexpr char kAlerts[] = {
      // type alert, version TLS 1.2, length 2, warning, user_canceled (90)
      0x15, 0x03, 0x03, 0x00, 0x02, 0x01, 0x5a,
      // type alert, version TLS 1.2, length 2, warning, close_notify (0)
      0x15, 0x03, 0x03, 0x00, 0x02, 0x01, 0x00};
  out_.append(kAlerts, sizeof(kAlerts));
  return true;
}

void TlsSession::Fail(const Status& why) {
  if (closed_) return;
  failed_ = true;
  inner_->OnWireError(why);
  // The inner session closes the wire on an error; if it had closed
  // already, the wire still ends here.
  if (!closed_) CloseWire(/*flush_first=*/false);
}

}  // namespace h2rpc::transport::tls
