#ifndef H2RPC_TRANSPORT_TLS_TLS_SESSION_H_
#define H2RPC_TRANSPORT_TLS_TLS_SESSION_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "base/peer_identity.h"
#include "base/status.h"
#include "transport/io/byte_session.h"
#include "transport/tls/tls_context.h"

typedef struct ssl_st SSL;
typedef struct bio_st BIO;
typedef struct bio_method_st BIO_METHOD;

namespace h2rpc::transport::tls {

// TLS between a wire (the socket driver) and the session it carries (HTTP/2),
// on OpenSSL with in-memory I/O: ciphertext fed in is decrypted and fed to
// the inner session; the inner session's output is encrypted when the wire
// asks for output. Owns no descriptor, thread or clock.
//
// The inner session starts at once (its timers, such as the handshake
// timeout, run from the start) but sees no bytes and has none of its output
// sent until the TLS handshake is done and the peer agreed on ALPN "h2".
// A failed handshake reaches the inner session as OnWireError(UNAVAILABLE)
// with OpenSSL's reason ("TLS handshake failed: ... (certificate has
// expired)"), which closes the connection after OpenSSL's alert, so a peer
// speaking plaintext gets a clean close, never a hang. A client that offers
// no ALPN, or ALPN without h2, fails the handshake with a
// no_application_protocol alert (TlsContext). Until the handshake is done
// CarriesOutput() is false, so the inner session ending the connection
// meanwhile (its handshake timeout) closes the wire at once rather than
// lingering for a GOAWAY that cannot be sent; see CloseWire for the alert.
//
// Loop thread only. Allocates the SSL object and the peer's identity per
// connection; in steady state nothing: ciphertext output goes to one buffer
// reused across writes (at most kOutputBatch of records plus what the
// handshake writes), plaintext input and gathered small output to two
// record-sized buffers the thread's sessions share (allocated on the
// thread's first use), so an idle connection holds neither.
class TlsSession final : public io::ByteFilter {
 public:
  // Plaintext bytes of inner output encrypted per PendingOutput() call.
  static constexpr size_t kOutputBatch = 64 * 1024;
  // Pieces of inner output looked at per record.
  static constexpr size_t kMaxPiecesPerRecord = 32;

  // A client connection: the server's certificate must verify against the
  // context's roots and match `server_name` (a DNS name, also sent as SNI,
  // or an IP address literal). With the context's session cache, the
  // session stored under `session_key` (the server's name and address,
  // say) is resumed if there is one, and the sessions the server sends are
  // stored under it.
  // `http1`: the connection speaks HTTP/1.1 (http1::ClientBridge): ALPN
  // offers "http/1.1" instead of "h2", and a server that names no protocol
  // is taken too.
  static std::unique_ptr<TlsSession> NewClient(
      std::shared_ptr<const TlsContext> context, absl::string_view server_name,
      std::string session_key = std::string(), bool http1 = false);
  // A server connection: the client must negotiate h2 (ALPN), or, when
  // `accepts_http1` (the HTTP/1.1 bridge serves the connection), http/1.1
  // or no protocol at all.
  static std::unique_ptr<TlsSession> NewServer(
      std::shared_ptr<const TlsContext> context, bool accepts_http1 = false);

  ~TlsSession() override;
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // ByteFilter.
  void Attach(io::ByteSession* inner) override { inner_ = inner; }

  // ByteSession (called by the outer wire).
  void Start(io::Wire* wire) override;
  void Feed(absl::string_view bytes) override;
  void OnPeerClosed() override;
  void OnWireError(const Status& why) override;
  absl::string_view PendingOutput() override;
  void ConsumeOutput(size_t n) override;
  bool ExpectsLargeInput() const override {
    return inner_ != nullptr && inner_->ExpectsLargeInput();
  }
  bool PausesInputWhileOutputBlocked() const override {
    return inner_ != nullptr && inner_->PausesInputWhileOutputBlocked();
  }
  bool WantsInput() const override {
    return inner_ == nullptr || inner_->WantsInput();
  }

  // Wire (called by the inner session).
  void RequestFlush() override;
  void ShutdownWrite() override;
  void CloseWire(bool flush_first) override;
  // Once the handshake is done and the peer agreed on h2 (or http/1.1).
  bool CarriesOutput() const override { return handshake_done_; }
  const std::shared_ptr<const PeerIdentity>& peer_identity() const override {
    return identity_;
  }
  bool GetTlsDetails(io::TlsDetails* details) const override;
  int error_number() const override {
    return outer_ != nullptr ? outer_->error_number() : 0;
  }

 private:
  TlsSession(std::shared_ptr<const TlsContext> context, bool client,
             absl::string_view server_name, std::string session_key);

  // Runs the handshake and decrypts what the fed bytes complete.
  void Advance();
  bool FinishHandshake();
  void ReadRecords();
  // Encrypts inner output until kOutputBatch bytes of ciphertext wait.
  void EncryptInnerOutput();
  // The connection cannot go on: tells the inner session, which closes.
  void Fail(const Status& why);
  // A server closing during a handshake it has answered: queues the alerts
  // that cancel it where they can be sent (see CloseWire). Whether it did.
  bool CancelHandshake();
  bool has_output() const { return out_sent_ < out_.size(); }

  // The BIO that connects OpenSSL to in_ and out_.
  static BIO_METHOD* BioMethod();
  static int BioRead(BIO* bio, char* data, int size);
  static int BioWrite(BIO* bio, const char* data, int size);

  const std::shared_ptr<const TlsContext> context_;
  SSL* ssl_ = nullptr;  // null if OpenSSL could not make one
  const bool client_;
  // Clients: where the context's cache keeps this server's sessions (the
  // SSL's app data, for the cache's callback); empty: none.
  const std::string session_key_;
  // The connection may speak HTTP/1.1: servers also take it (NewServer;
  // the SSL's app data points here then), clients offer only it
  // (NewClient).
  bool accepts_http1_ = false;
  io::ByteSession* inner_ = nullptr;
  io::Wire* outer_ = nullptr;
  std::shared_ptr<const PeerIdentity> identity_;
  bool handshake_done_ = false;
  bool hello_sent_ = false;  // a server wrote its hello flight
  bool closed_ = false;      // CloseWire() or a failure: inert
  bool failed_ = false;      // the handshake or a record failed
  bool close_notify_sent_ = false;
  bool shutdown_pending_ = false;  // the inner session shut its write side
  bool write_shut_ = false;        // ... and the outer wire's is shut too
  // Ciphertext fed and not yet read by OpenSSL (during Feed() only).
  absl::string_view in_;
  // Ciphertext to write: out_[out_sent_, size).
  std::string out_;
  size_t out_sent_ = 0;
};

}  // namespace h2rpc::transport::tls

#endif  // H2RPC_TRANSPORT_TLS_TLS_SESSION_H_
