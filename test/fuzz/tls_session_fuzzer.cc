// A TlsSession fed arbitrary peer bytes, between a fake socket wire and a
// small inner session that stands in for HTTP/2.
//
// Input: one control byte, then the peer's bytes. The control byte chooses
//   bit 0:    0: a server TlsSession fed a client's bytes; 1: a client
//             TlsSession (server name "localhost") fed a server's bytes after
//             it produced its ClientHello;
//   bits 1-4: the peer's bytes arrive in Feed() calls of 1 << n bytes;
//   bits 5-6: server: the client certificate mode (0 kDontRequest,
//             1 kRequestButDontVerify, 2 kRequireAndVerify,
//             3 kRequestAndVerify); client: bit 5 gives the client a
//             certificate, bit 6 limits it to TLS 1.2;
//   bit 7:    the connection ends with OnPeerClosed() (0) or with
//             OnWireError() (1), unless it closed before.
//
// Invariants checked, each an abort with a message: the inner session is
// fed nothing before the handshake finished (peer_identity() non-null); the
// TlsSession calls neither the wire nor the inner session after each one's
// CloseWire() returned, and PendingOutput() offers nothing after CloseWire();
// the connection always ends once the peer closed or the wire failed.
//
// The contexts and the test PKI are made once per process; the test PKI is
// new in every process, so captured certificates (the seed corpus) never
// verify here, and neither do captured Finished messages. A client's
// ClientHello carries a random legacy_session_id that a TLS 1.3 server
// echoes; in the client role a ServerHello (or HelloRetryRequest) at the
// start of the peer's bytes gets this client's session id written over its
// echo, so that the fuzzer reaches the key exchange and what follows instead
// of stopping at 32 random bytes it cannot guess.
#include <openssl/ssl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/io/byte_session.h"
#include "transport/tls/testing/test_pki.h"
#include "transport/tls/tls_context.h"
#include "transport/tls/tls_session.h"

namespace h2rpc::transport::tls {
namespace {

[[noreturn]] void Violated(const char* what) {
  std::fprintf(stderr, "tls_session_fuzzer: invariant violated: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

// The session TLS carries: queues a preface at Start(), answers what it is
// fed with a few bytes, and closes the wire on OnPeerClosed() or
// OnWireError(), as the HTTP/2 session does (without flushing).
class InnerSession final : public io::ByteSession {
 public:
  void Start(io::Wire* wire) override {
    if (wire_ != nullptr) Violated("the inner session was started twice");
    wire_ = wire;
    out_.assign("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    wire_->RequestFlush();
  }
  void Feed(absl::string_view) override {
    CheckOpen("Feed");
    if (wire_->peer_identity() == nullptr) {
      Violated("the inner session was fed bytes before the TLS handshake");
    }
    out_.append("ack");
    wire_->RequestFlush();
  }
  void OnPeerClosed() override {
    CheckOpen("OnPeerClosed");
    Close();
  }
  void OnWireError(const Status& why) override {
    CheckOpen("OnWireError");
    if (why.ok()) Violated("OnWireError() with an OK status");
    Close();
  }
  absl::string_view PendingOutput() override {
    // The wire may take output inside CloseWire() (closing_).
    if (closed_) Violated("PendingOutput() on the inner session after close");
    return absl::string_view(out_).substr(sent_);
  }
  void ConsumeOutput(size_t n) override {
    if (closed_) Violated("ConsumeOutput() on the inner session after close");
    if (n > out_.size() - sent_)
      Violated("inner ConsumeOutput() beyond output");
    sent_ += n;
    if (sent_ == out_.size()) {
      out_.clear();
      sent_ = 0;
    }
  }

 private:
  void CheckOpen(const char* call) const {
    if (closed_ || closing_) {
      std::fprintf(stderr, "tls_session_fuzzer: inner %s() after CloseWire()\n",
                   call);
      Violated("the TlsSession called the inner session after it closed");
    }
  }
  void Close() {
    closing_ = true;
    wire_->CloseWire(/*flush_first=*/false);
    closing_ = false;
    closed_ = true;
  }

  io::Wire* wire_ = nullptr;
  std::string out_;
  size_t sent_ = 0;
  bool closing_ = false;
  bool closed_ = false;
};

// The socket side: takes the TlsSession's output after each Feed(), in
// pieces of a given size, and calls nothing once the wire closed.
class SocketWire final : public io::Wire {
 public:
  explicit SocketWire(TlsSession* tls) : tls_(tls) {}

  void RequestFlush() override { CheckOpen("RequestFlush"); }
  void ShutdownWrite() override {
    CheckOpen("ShutdownWrite");
    write_shut_ = true;
  }
  void CloseWire(bool flush_first) override {
    CheckOpen("CloseWire");
    // Inside CloseWire() the session may still be asked for output, which
    // may try to close again (ignored).
    if (closing_) return;
    closing_ = true;
    if (flush_first && !write_shut_) {
      written_ += tls_->PendingOutput().size();
    }
    closing_ = false;
    closed_ = true;
  }

  // Writes what the session offers, at most `piece` bytes per write.
  void Drain(size_t piece) {
    while (!closed_ && !write_shut_) {
      const absl::string_view out = tls_->PendingOutput();
      if (closed_) {
        if (!out.empty()) Violated("PendingOutput() offered bytes after close");
        return;
      }
      if (out.empty()) return;
      const size_t n = std::min(out.size(), piece);
      if (head_.size() < kHeadSize) {
        head_.append(out.data(), std::min(n, kHeadSize - head_.size()));
      }
      written_ += n;
      tls_->ConsumeOutput(n);
    }
  }

  bool closed() const { return closed_; }
  size_t written() const { return written_; }
  // The first bytes written (kHeadSize at most).
  absl::string_view head() const { return head_; }

 private:
  void CheckOpen(const char* call) const {
    if (closed_) {
      std::fprintf(stderr, "tls_session_fuzzer: wire %s() after CloseWire()\n",
                   call);
      Violated("the TlsSession called the wire after it closed it");
    }
  }

  static constexpr size_t kHeadSize = 128;

  TlsSession* const tls_;
  std::string head_;
  bool write_shut_ = false;
  bool closing_ = false;
  bool closed_ = false;
  size_t written_ = 0;
};

// Where a ServerHello or ClientHello that starts a record has its
// legacy_session_id (echo): its length byte, after the record header (5),
// the handshake header (4), legacy_version (2) and random (32).
constexpr size_t kSessionIdAt = 5 + 4 + 2 + 32;

// The legacy_session_id of the ClientHello that starts `hello`, or empty.
absl::string_view ClientSessionId(absl::string_view hello) {
  if (hello.size() <= kSessionIdAt || hello[0] != 0x16 || hello[5] != 0x01) {
    return {};
  }
  const size_t n = static_cast<uint8_t>(hello[kSessionIdAt]);
  if (hello.size() < kSessionIdAt + 1 + n) return {};
  return hello.substr(kSessionIdAt + 1, n);
}

// Writes `id` over the session id echo of the ServerHello that starts
// `bytes`, if it starts with one whose echo has the same length.
void EchoSessionId(absl::string_view id, std::string* bytes) {
  std::string& b = *bytes;
  if (id.empty() || b.size() < kSessionIdAt + 1 + id.size() || b[0] != 0x16 ||
      b[5] != 0x02 ||
      size_t{static_cast<uint8_t>(b[kSessionIdAt])} != id.size()) {
    return;
  }
  b.replace(kSessionIdAt + 1, id.size(), id.data(), id.size());
}

struct Contexts {
  std::shared_ptr<const TlsContext> server[4];
  std::shared_ptr<const TlsContext> client[4];
};

void Check(const Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "tls_session_fuzzer: %s: %s\n", what,
               status.message().c_str());
  std::abort();
}

const Contexts& GetContexts() {
  static const Contexts* const contexts = [] {
    const testing::TestPki& pki = testing::GetTestPki();
    auto* made = new Contexts;
    static constexpr ClientCertificateRequest kModes[4] = {
        ClientCertificateRequest::kDontRequest,
        ClientCertificateRequest::kRequestButDontVerify,
        ClientCertificateRequest::kRequireAndVerify,
        ClientCertificateRequest::kRequestAndVerify,
    };
    for (int i = 0; i < 4; ++i) {
      ServerConfig server;
      server.key_certs.push_back(
          {pki.server.private_key_pem, pki.server.cert_chain_pem});
      server.root_certs_pem = pki.ca_pem;
      server.client_certificate_request = kModes[i];
      Check(TlsContext::CreateServer(server, &made->server[i]),
            "server context");

      ClientConfig client;
      client.root_certs_pem = pki.ca_pem;
      if (i & 1) {
        client.key_cert = {pki.client.private_key_pem,
                           pki.client.cert_chain_pem};
      }
      Check(TlsContext::CreateClient(client, &made->client[i]),
            "client context");
      if ((i & 2) && SSL_CTX_set_max_proto_version(made->client[i]->ssl_ctx(),
                                                   TLS1_2_VERSION) != 1) {
        Violated("cannot limit the client context to TLS 1.2");
      }
    }
    return made;
  }();
  return *contexts;
}

void Run(absl::string_view input) {
  if (input.empty()) return;
  const uint8_t control = static_cast<uint8_t>(input[0]);
  input.remove_prefix(1);
  const bool client = (control & 0x01) != 0;
  const size_t chunk = size_t{1} << ((control >> 1) & 0x0f);
  const int mode = (control >> 5) & 0x03;
  const bool end_with_wire_error = (control & 0x80) != 0;

  const Contexts& contexts = GetContexts();
  InnerSession inner;
  std::unique_ptr<TlsSession> tls =
      client ? TlsSession::NewClient(contexts.client[mode], "localhost")
             : TlsSession::NewServer(contexts.server[mode]);
  tls->Attach(&inner);
  SocketWire wire(tls.get());
  tls->Start(&wire);
  wire.Drain(SIZE_MAX);
  std::string peer(input);
  if (client && !wire.closed()) {
    if (wire.written() == 0) Violated("the client sent no ClientHello");
    EchoSessionId(ClientSessionId(wire.head()), &peer);
  }
  input = peer;

  // Every third write is cut into small pieces, as a slow socket would.
  size_t feeds = 0;
  while (!input.empty() && !wire.closed()) {
    const absl::string_view piece = input.substr(0, chunk);
    input.remove_prefix(piece.size());
    tls->Feed(piece);
    ++feeds;
    wire.Drain(feeds % 3 == 0 ? 1 + feeds % 61 : SIZE_MAX);
  }
  if (!wire.closed()) {
    if (end_with_wire_error) {
      tls->OnWireError(
          Status(StatusCode::kUnavailable, "fuzz: connection reset"));
    } else {
      tls->OnPeerClosed();
    }
  }
  if (!wire.closed()) Violated("the connection did not end");
  // Outside the wire's contract (the session is not called after
  // CloseWire()), one probe that the TlsSession is inert.
  if (!tls->PendingOutput().empty()) {
    Violated("PendingOutput() offered bytes after CloseWire()");
  }
}

}  // namespace
}  // namespace h2rpc::transport::tls

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  h2rpc::transport::tls::Run(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
