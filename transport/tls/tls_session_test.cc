#include "transport/tls/tls_session.h"

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/allocation_counter.h"
#include "transport/tls/testing/test_pki.h"
#include "transport/tls/tls_context.h"

namespace h2rpc::transport::tls {
namespace {

using ::testing::ElementsAre;
using testing::GetTestPki;
using ::testing::HasSubstr;

// The protocol above TLS: queues what a test sends, records what arrives,
// closes the wire on an error as the HTTP/2 session does.
class FakeInnerSession : public io::ByteSession {
 public:
  void Start(io::Wire* wire) override {
    wire_ = wire;
    started_ = true;
  }
  void Feed(absl::string_view bytes) override {
    if (before_feed) before_feed();
    received_.append(bytes.data(), bytes.size());
  }
  void OnPeerClosed() override { peer_closed_ = true; }
  void OnWireError(const Status& why) override {
    error_ = why;
    wire_->CloseWire(/*flush_first=*/true);
  }
  // With a piece size, the pending output is offered in pieces of that
  // size, as a session with lent DATA payloads offers them (PendingOutput()
  // is the first piece).
  absl::string_view PendingOutput() override {
    return absl::string_view(out_).substr(
        sent_, piece_size_ == 0 ? std::string::npos : piece_size_);
  }
  size_t PendingOutputPieces(iovec* pieces, size_t max) override {
    if (piece_size_ == 0) return ByteSession::PendingOutputPieces(pieces, max);
    size_t count = 0;
    for (size_t at = sent_; at < out_.size() && count < max;
         at += piece_size_) {
      pieces[count].iov_base = &out_[at];
      pieces[count].iov_len = std::min(piece_size_, out_.size() - at);
      ++count;
    }
    return count;
  }
  void ConsumeOutput(size_t n) override {
    sent_ += n;
    if (sent_ == out_.size()) {
      out_.clear();
      sent_ = 0;
      if (shut_when_written_) wire_->ShutdownWrite();
    }
  }

  void Send(absl::string_view bytes) {
    out_.append(bytes.data(), bytes.size());
    wire_->RequestFlush();
  }
  void set_piece_size(size_t size) { piece_size_ = size; }
  // Runs at the start of every Feed(), while the bytes given are in use.
  std::function<void()> before_feed;
  void ShutdownAfterOutput() {
    shut_when_written_ = true;
    if (out_.empty()) wire_->ShutdownWrite();
  }

  io::Wire* wire() const { return wire_; }
  bool started() const { return started_; }
  std::string& received() { return received_; }
  bool peer_closed() const { return peer_closed_; }
  const Status& error() const { return error_; }

 private:
  io::Wire* wire_ = nullptr;
  bool started_ = false;
  std::string out_;
  size_t sent_ = 0;
  size_t piece_size_ = 0;
  bool shut_when_written_ = false;
  std::string received_;
  bool peer_closed_ = false;
  Status error_;
};

// The socket side of one end: records what the TLS session asks of it.
class FakeSocketWire : public io::Wire {
 public:
  void RequestFlush() override { ++flushes_requested; }
  void ShutdownWrite() override { write_shut = true; }
  void CloseWire(bool flush_first) override {
    closed = true;
    if (flush_first) last_output = std::string(session->PendingOutput());
  }

  io::ByteSession* session = nullptr;
  int flushes_requested = 0;
  bool write_shut = false;
  bool closed = false;
  std::string last_output;  // written by a CloseWire(flush_first = true)
};

// One end of a connection: inner session, TLS, socket.
struct End {
  End(std::unique_ptr<TlsSession> session) : tls(std::move(session)) {
    tls->Attach(&inner);
    socket.session = tls.get();
  }
  void Start() { tls->Start(&socket); }

  FakeInnerSession inner;
  std::unique_ptr<TlsSession> tls;
  FakeSocketWire socket;
  bool eof_delivered = false;  // the peer was told this end's write side ended
};

// Moves ciphertext from `from` to `to` in chunks of at most `chunk` bytes;
// returns whether anything moved.
bool Transfer(End& from, End& to, size_t chunk) {
  bool moved = false;
  if (!from.socket.closed && !from.socket.write_shut) {
    for (;;) {
      absl::string_view out = from.tls->PendingOutput();
      if (out.empty() || from.socket.closed) break;
      const size_t n = std::min(out.size(), chunk);
      const std::string piece(out.substr(0, n));
      from.tls->ConsumeOutput(n);
      moved = true;
      if (!to.socket.closed) to.tls->Feed(piece);
    }
  }
  if (!from.socket.last_output.empty()) {
    if (!to.socket.closed) to.tls->Feed(from.socket.last_output);
    from.socket.last_output.clear();
    moved = true;
  }
  if ((from.socket.write_shut || from.socket.closed) && !from.eof_delivered) {
    from.eof_delivered = true;
    if (!to.socket.closed) to.tls->OnPeerClosed();
    moved = true;
  }
  return moved;
}

void Pump(End& client, End& server, size_t chunk = 1 << 20) {
  for (int i = 0; i < 10000; ++i) {
    const bool a = Transfer(client, server, chunk);
    const bool b = Transfer(server, client, chunk);
    if (!a && !b) return;
  }
  FAIL() << "the two ends kept exchanging bytes";
}

std::shared_ptr<const TlsContext> ClientContext(
    const std::string& roots, const testing::KeyAndCert* own = nullptr) {
  ClientConfig config;
  config.root_certs_pem = roots;
  if (own != nullptr) {
    config.key_cert = {own->private_key_pem, own->cert_chain_pem};
  }
  std::shared_ptr<const TlsContext> context;
  const Status status = TlsContext::CreateClient(config, &context);
  EXPECT_TRUE(status.ok()) << status.message();
  return context;
}

std::shared_ptr<const TlsContext> ServerContext(
    const testing::KeyAndCert& own,
    ClientCertificateRequest request = ClientCertificateRequest::kDontRequest) {
  ServerConfig config;
  config.key_certs.push_back({own.private_key_pem, own.cert_chain_pem});
  config.root_certs_pem = GetTestPki().ca_pem;
  config.client_certificate_request = request;
  std::shared_ptr<const TlsContext> context;
  const Status status = TlsContext::CreateServer(config, &context);
  EXPECT_TRUE(status.ok()) << status.message();
  return context;
}

struct Connection {
  Connection(std::shared_ptr<const TlsContext> client_context,
             absl::string_view server_name,
             std::shared_ptr<const TlsContext> server_context,
             std::string session_key = std::string())
      : client(TlsSession::NewClient(std::move(client_context), server_name,
                                     std::move(session_key))),
        server(TlsSession::NewServer(std::move(server_context))) {
    server.Start();
    client.Start();
  }
  End client;
  End server;
};

TEST(TlsSessionTest, HandshakeThenBytesBothWays) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().server));
  EXPECT_TRUE(c.client.inner.started());
  EXPECT_TRUE(c.server.inner.started());
  // Output queued before the handshake waits for it.
  c.client.inner.Send("client preface");
  c.server.inner.Send("server settings");
  Pump(c.client, c.server);
  EXPECT_EQ(c.server.inner.received(), "client preface");
  EXPECT_EQ(c.client.inner.received(), "server settings");
  EXPECT_TRUE(c.client.inner.error().ok()) << c.client.inner.error().message();
  EXPECT_TRUE(c.server.inner.error().ok()) << c.server.inner.error().message();

  const auto& server_seen = c.client.tls->peer_identity();
  ASSERT_NE(server_seen, nullptr);
  EXPECT_EQ(server_seen->protocol, "TLSv1.3");
  EXPECT_TRUE(server_seen->certificate_verified);
  EXPECT_EQ(server_seen->common_name, "h2rpc test server");
  EXPECT_THAT(server_seen->dns_names,
              ElementsAre("localhost", "*.test.h2rpc.example"));
  EXPECT_THAT(server_seen->ip_addresses, ElementsAre("127.0.0.1", "::1"));
  // No client certificate: the server knows the connection is TLS only.
  const auto& client_seen = c.server.tls->peer_identity();
  ASSERT_NE(client_seen, nullptr);
  EXPECT_FALSE(client_seen->certificate_verified);
  EXPECT_TRUE(client_seen->subject.empty());
}

// The sessions of a thread share their record buffers; a session fed from
// inside another's Feed() (none of h2rpc's does that) still reads into
// buffers of its own.
TEST(TlsSessionTest, AReadNestedInAnotherSessionsFeedKeepsBothRecords) {
  Connection outer(ClientContext(GetTestPki().ca_pem), "localhost",
                   ServerContext(GetTestPki().server));
  Connection nested(ClientContext(GetTestPki().ca_pem), "localhost",
                    ServerContext(GetTestPki().server));
  Pump(outer.client, outer.server);
  Pump(nested.client, nested.server);
  nested.client.inner.Send(std::string(1000, 'n'));
  bool pumped = false;
  outer.server.inner.before_feed = [&] {
    if (pumped) return;
    pumped = true;
    Pump(nested.client, nested.server);
  };
  outer.client.inner.Send(std::string(1000, 'o'));
  Pump(outer.client, outer.server);
  EXPECT_TRUE(pumped);
  EXPECT_EQ(outer.server.inner.received(), std::string(1000, 'o'));
  EXPECT_EQ(nested.server.inner.received(), std::string(1000, 'n'));
}

TEST(TlsSessionTest, SmallPiecesOfOutputAreGatheredIntoFullRecords) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().server));
  Pump(c.client, c.server);
  std::string message(256 * 1024, '\0');
  for (size_t i = 0; i < message.size(); ++i) {
    message[i] = static_cast<char>(i % 253);
  }
  c.client.inner.set_piece_size(1024);
  c.client.inner.Send(message);
  size_t ciphertext = 0;
  for (absl::string_view out = c.client.tls->PendingOutput(); !out.empty();
       out = c.client.tls->PendingOutput()) {
    ciphertext += out.size();
    c.server.tls->Feed(std::string(out));
    c.client.tls->ConsumeOutput(out.size());
  }
  EXPECT_EQ(c.server.inner.received(), message);
  // TLS 1.3 adds 22 bytes per record: 16 KiB records add under 400 bytes
  // here, one record per 1 KiB piece would add over 5,600.
  EXPECT_LT(ciphertext, message.size() + 1024);
}

TEST(TlsSessionTest, MutualTlsGivesTheServerTheClientsIdentity) {
  Connection c(ClientContext(GetTestPki().ca_pem, &GetTestPki().client),
               "localhost",
               ServerContext(GetTestPki().server,
                             ClientCertificateRequest::kRequireAndVerify));
  c.client.inner.Send("hello");
  Pump(c.client, c.server);
  ASSERT_EQ(c.server.inner.received(), "hello");
  const auto& identity = c.server.tls->peer_identity();
  ASSERT_NE(identity, nullptr);
  EXPECT_TRUE(identity->certificate_verified);
  EXPECT_EQ(identity->subject, "CN=h2rpc test client");
  EXPECT_EQ(identity->common_name, "h2rpc test client");
  EXPECT_THAT(identity->dns_names, ElementsAre("client.test.h2rpc.example"));
  EXPECT_THAT(identity->uris, ElementsAre("spiffe://h2rpc.test/client"));
}

TEST(TlsSessionTest, Tls12WithAnAeadSuite) {
  auto client_context = ClientContext(GetTestPki().ca_pem);
  ASSERT_EQ(
      SSL_CTX_set_max_proto_version(client_context->ssl_ctx(), TLS1_2_VERSION),
      1);
  Connection c(client_context, "localhost", ServerContext(GetTestPki().server));
  c.client.inner.Send("over 1.2");
  c.server.inner.Send("back");
  Pump(c.client, c.server);
  EXPECT_EQ(c.server.inner.received(), "over 1.2");
  EXPECT_EQ(c.client.inner.received(), "back");
  ASSERT_NE(c.client.tls->peer_identity(), nullptr);
  EXPECT_EQ(c.client.tls->peer_identity()->protocol, "TLSv1.2");
  EXPECT_EQ(c.server.tls->peer_identity()->protocol, "TLSv1.2");
}

TEST(TlsSessionTest, Tls11IsRefused) {
  auto client_context = ClientContext(GetTestPki().ca_pem);
  ASSERT_EQ(
      SSL_CTX_set_min_proto_version(client_context->ssl_ctx(), TLS1_VERSION),
      1);
  ASSERT_EQ(
      SSL_CTX_set_max_proto_version(client_context->ssl_ctx(), TLS1_1_VERSION),
      1);
  Connection c(client_context, "localhost", ServerContext(GetTestPki().server));
  Pump(c.client, c.server);
  EXPECT_EQ(c.server.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(c.server.inner.error().message(),
              HasSubstr("TLS handshake failed"));
  EXPECT_TRUE(c.server.socket.closed);
}

TEST(TlsSessionTest, ServerIpAddressIsVerifiedAgainstIpSubjectAltNames) {
  Connection c(ClientContext(GetTestPki().ca_pem), "127.0.0.1",
               ServerContext(GetTestPki().server));
  c.client.inner.Send("x");
  Pump(c.client, c.server);
  EXPECT_EQ(c.server.inner.received(), "x");
  EXPECT_TRUE(c.client.inner.error().ok()) << c.client.inner.error().message();
}

TEST(TlsSessionTest, PartialRecordsInSevenByteChunks) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().server));
  std::string big(300 * 1024, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  c.client.inner.Send(big);
  Pump(c.client, c.server, /*chunk=*/7);
  EXPECT_EQ(c.server.inner.received(), big);
}

// Each certificate failure: the client's inner session gets UNAVAILABLE with
// OpenSSL's reason; the server's learns that the handshake failed; both
// wires close.
void ExpectClientRejects(Connection& c, absl::string_view reason) {
  c.client.inner.Send("never delivered");
  Pump(c.client, c.server);
  EXPECT_EQ(c.client.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(c.client.inner.error().message(),
              HasSubstr("TLS handshake failed"));
  EXPECT_THAT(c.client.inner.error().message(), HasSubstr(reason));
  EXPECT_TRUE(c.client.socket.closed);
  EXPECT_TRUE(c.server.socket.closed);
  EXPECT_EQ(c.server.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(c.server.inner.received().empty());
  EXPECT_EQ(c.client.tls->peer_identity(), nullptr);
}

TEST(TlsSessionTest, WrongHostNameIsRejected) {
  Connection c(ClientContext(GetTestPki().ca_pem), "wrong.example",
               ServerContext(GetTestPki().server));
  ExpectClientRejects(c, "hostname mismatch");
}

TEST(TlsSessionTest, UntrustedCaIsRejected) {
  // The server completes its chain with the root it trusts for client
  // certificates, which this client does not trust.
  Connection c(ClientContext(GetTestPki().other_ca_pem), "localhost",
               ServerContext(GetTestPki().server));
  ExpectClientRejects(c, "self-signed certificate in certificate chain");
}

TEST(TlsSessionTest, ServerCertificateFromAnotherCaIsRejected) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().server_from_other_ca));
  ExpectClientRejects(c, "unable to get local issuer certificate");
}

TEST(TlsSessionTest, ExpiredCertificateIsRejected) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().expired_server));
  ExpectClientRejects(c, "certificate has expired");
}

TEST(TlsSessionTest, RequiredClientCertificateMissing) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().server,
                             ClientCertificateRequest::kRequireAndVerify));
  c.client.inner.Send("request");
  Pump(c.client, c.server);
  EXPECT_EQ(c.server.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(c.server.inner.error().message(),
              HasSubstr("peer did not return a certificate"));
  EXPECT_TRUE(c.server.inner.received().empty());
  // With TLS 1.3 the client finishes its side first and learns of the
  // refusal from the server's alert.
  EXPECT_EQ(c.client.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(c.client.inner.error().message(),
              HasSubstr("certificate required"));
  EXPECT_TRUE(c.client.socket.closed);
  EXPECT_TRUE(c.server.socket.closed);
}

TEST(TlsSessionTest, ClientCertificateFromAnotherCaIsRejected) {
  testing::KeyAndCert stranger = GetTestPki().server_from_other_ca;
  Connection c(ClientContext(GetTestPki().ca_pem, &stranger), "localhost",
               ServerContext(GetTestPki().server,
                             ClientCertificateRequest::kRequestAndVerify));
  Pump(c.client, c.server);
  EXPECT_EQ(c.server.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(c.server.inner.error().message(),
              HasSubstr("certificate verify failed"));
}

TEST(TlsSessionTest, RequestButDontVerifyReportsAnUnverifiedIdentity) {
  testing::KeyAndCert stranger = GetTestPki().server_from_other_ca;
  Connection c(ClientContext(GetTestPki().ca_pem, &stranger), "localhost",
               ServerContext(GetTestPki().server,
                             ClientCertificateRequest::kRequestButDontVerify));
  c.client.inner.Send("hi");
  Pump(c.client, c.server);
  ASSERT_EQ(c.server.inner.received(), "hi");
  const auto& identity = c.server.tls->peer_identity();
  ASSERT_NE(identity, nullptr);
  EXPECT_FALSE(identity->certificate_verified);
  EXPECT_EQ(identity->common_name, "h2rpc test server");
}

TEST(TlsSessionTest, ClientWithoutH2IsRefusedByTheServer) {
  auto client_context = ClientContext(GetTestPki().ca_pem);
  static const unsigned char kHttp11[] = {8,   'h', 't', 't', 'p',
                                          '/', '1', '.', '1'};
  ASSERT_EQ(SSL_CTX_set_alpn_protos(client_context->ssl_ctx(), kHttp11,
                                    sizeof(kHttp11)),
            0);
  Connection c(client_context, "localhost", ServerContext(GetTestPki().server));
  Pump(c.client, c.server);
  EXPECT_THAT(c.server.inner.error().message(),
              HasSubstr("no application protocol"));
  EXPECT_THAT(c.client.inner.error().message(),
              HasSubstr("no application protocol"));
  EXPECT_TRUE(c.server.socket.closed);
}

int SelectNothing(SSL*, const unsigned char**, unsigned char*,
                  const unsigned char*, unsigned int, void*) {
  return SSL_TLSEXT_ERR_NOACK;
}

TEST(TlsSessionTest, ServerWithoutH2FailsTheClientClearly) {
  auto server_context = ServerContext(GetTestPki().server);
  SSL_CTX_set_alpn_select_cb(server_context->ssl_ctx(), SelectNothing, nullptr);
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost", server_context);
  c.client.inner.Send("request");
  Pump(c.client, c.server);
  EXPECT_EQ(c.client.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(c.client.inner.error().message(),
            "peer did not negotiate h2 (TLS ALPN)");
  EXPECT_TRUE(c.client.socket.closed);
  EXPECT_TRUE(c.server.inner.received().empty());
}

TEST(TlsSessionTest, PlaintextHttp2ToATlsServerIsClosedCleanly) {
  End server(TlsSession::NewServer(ServerContext(GetTestPki().server)));
  server.Start();
  server.tls->Feed("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  EXPECT_EQ(server.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(server.inner.error().message(),
              HasSubstr("TLS handshake failed"));
  EXPECT_THAT(server.inner.error().message(),
              HasSubstr("wrong version number"));
  EXPECT_TRUE(server.socket.closed);
  EXPECT_TRUE(server.inner.received().empty());
}

TEST(TlsSessionTest, PeerClosingDuringTheHandshakeFailsIt) {
  End client(
      TlsSession::NewClient(ClientContext(GetTestPki().ca_pem), "localhost"));
  client.Start();
  EXPECT_GT(client.socket.flushes_requested, 0);  // the ClientHello
  EXPECT_FALSE(client.tls->PendingOutput().empty());
  client.tls->OnPeerClosed();
  EXPECT_EQ(client.inner.error().code(), StatusCode::kUnavailable);
  EXPECT_THAT(client.inner.error().message(),
              HasSubstr("the peer closed the connection"));
  EXPECT_TRUE(client.socket.closed);
}

TEST(TlsSessionTest, ShutdownWriteSendsCloseNotifyAfterTheLastBytes) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().server));
  Pump(c.client, c.server);
  c.server.inner.Send("last words");
  c.server.inner.ShutdownAfterOutput();
  EXPECT_FALSE(c.server.socket.write_shut);  // not before they are written
  Pump(c.client, c.server);
  EXPECT_TRUE(c.server.socket.write_shut);
  EXPECT_EQ(c.client.inner.received(), "last words");
  EXPECT_TRUE(c.client.inner.peer_closed());
  EXPECT_TRUE(c.client.inner.error().ok()) << c.client.inner.error().message();
}

TEST(TlsSessionTest, SteadyStateExchangesAllocateOnlyInsideOpenSsl) {
  Connection c(ClientContext(GetTestPki().ca_pem), "localhost",
               ServerContext(GetTestPki().server));
  const std::string message(1024, 'm');
  // Warm up: the buffers reach their working size.
  for (int i = 0; i < 4; ++i) {
    c.client.inner.Send(message);
    c.server.inner.Send(message);
    Pump(c.client, c.server);
  }
  c.client.inner.received().reserve(1 << 20);
  c.server.inner.received().reserve(1 << 20);
  h2rpc::testing::AllocationCounter heap;
  for (int i = 0; i < 100; ++i) {
    c.client.inner.Send(message);
    c.server.inner.Send(message);
    while (c.client.tls->PendingOutput().size() > 0 ||
           c.server.tls->PendingOutput().size() > 0) {
      for (End* from : {&c.client, &c.server}) {
        End* to = from == &c.client ? &c.server : &c.client;
        const absl::string_view out = from->tls->PendingOutput();
        if (out.empty()) continue;
        to->tls->Feed(out);
        from->tls->ConsumeOutput(out.size());
      }
    }
  }
  EXPECT_EQ(c.server.inner.received().size(), 104 * message.size());
  // OpenSSL 3.0 mallocs (and frees) the sub-packet bookkeeping of a
  // WPACKET per record: 3 per record written, 1 per record read
  // (crypto/packet.c); nothing else allocates. Each message here is one
  // record each way.
  constexpr int kRecords = 100 * 2;
  EXPECT_EQ(heap.allocations(), kRecords * 3 + kRecords * 1);
}

// ---------------------------------------------------------------------------
// Session resumption: a client's cache, a server's rotated ticket keys.

std::shared_ptr<const TlsContext> ResumingClient(
    const testing::KeyAndCert* own = nullptr, int max_version = 0) {
  ClientConfig config;
  config.root_certs_pem = GetTestPki().ca_pem;
  if (own != nullptr) {
    config.key_cert = {own->private_key_pem, own->cert_chain_pem};
  }
  config.session_cache_size = 8;
  std::shared_ptr<const TlsContext> context;
  const Status status = TlsContext::CreateClient(config, &context);
  EXPECT_TRUE(status.ok()) << status.message();
  if (max_version != 0) {
    SSL_CTX_set_max_proto_version(context->ssl_ctx(), max_version);
  }
  return context;
}

std::shared_ptr<const TlsContext> TicketServer(
    ClientCertificateRequest request = ClientCertificateRequest::kDontRequest,
    absl::Duration rotation = absl::Hours(1)) {
  ServerConfig config;
  config.key_certs.push_back({GetTestPki().server.private_key_pem,
                              GetTestPki().server.cert_chain_pem});
  config.root_certs_pem = GetTestPki().ca_pem;
  config.client_certificate_request = request;
  config.session_ticket_key_rotation = rotation;
  std::shared_ptr<const TlsContext> context;
  const Status status = TlsContext::CreateServer(config, &context);
  EXPECT_TRUE(status.ok()) << status.message();
  return context;
}

// Connects once with `key`, exchanging a message each way (the client reads
// the ticket the server sends after the handshake); whether the server saw
// a resumed session.
bool ConnectResumed(const std::shared_ptr<const TlsContext>& client,
                    const std::shared_ptr<const TlsContext>& server,
                    const std::string& key) {
  Connection c(client, "localhost", server, key);
  c.client.inner.Send("ping");
  c.server.inner.Send("pong");
  Pump(c.client, c.server);
  EXPECT_EQ(c.server.inner.received(), "ping");
  EXPECT_EQ(c.client.inner.received(), "pong");
  EXPECT_NE(c.server.tls->peer_identity(), nullptr);
  EXPECT_NE(c.client.tls->peer_identity(), nullptr);
  if (c.server.tls->peer_identity() == nullptr ||
      c.client.tls->peer_identity() == nullptr) {
    return false;
  }
  // Both ends agree, and the client's view of the server is intact.
  EXPECT_EQ(c.client.tls->peer_identity()->session_reused,
            c.server.tls->peer_identity()->session_reused);
  EXPECT_TRUE(c.client.tls->peer_identity()->certificate_verified);
  EXPECT_EQ(c.client.tls->peer_identity()->common_name, "h2rpc test server");
  return c.server.tls->peer_identity()->session_reused;
}

TEST(TlsResumptionTest, TheNextConnectionResumesItsServersSession) {
  auto client = ResumingClient();
  auto server = TicketServer();
  EXPECT_FALSE(ConnectResumed(client, server, "localhost|a"));
  EXPECT_EQ(client->session_cache()->size(), 1u);
  EXPECT_TRUE(ConnectResumed(client, server, "localhost|a"));
  // The resumed connection got a fresh ticket, and resumes again.
  EXPECT_TRUE(ConnectResumed(client, server, "localhost|a"));
  // Another server (key) has no session yet.
  EXPECT_FALSE(ConnectResumed(client, server, "localhost|b"));
  EXPECT_EQ(client->session_cache()->size(), 2u);
}

TEST(TlsResumptionTest, TicketsOutliveOneKeyRotationNotTwo) {
  auto client = ResumingClient();
  auto server = TicketServer();
  EXPECT_FALSE(ConnectResumed(client, server, "k"));
  server->ticket_keys()->Rotate();
  // Issued under the previous key: accepted, and renewed under the current.
  EXPECT_TRUE(ConnectResumed(client, server, "k"));
  server->ticket_keys()->Rotate();
  EXPECT_TRUE(ConnectResumed(client, server, "k"));
  server->ticket_keys()->Rotate();
  server->ticket_keys()->Rotate();
  EXPECT_FALSE(ConnectResumed(client, server, "k"));
}

TEST(TlsResumptionTest, AResumedConnectionKeepsTheClientsVerifiedIdentity) {
  auto client = ResumingClient(&GetTestPki().client);
  auto server = TicketServer(ClientCertificateRequest::kRequireAndVerify);
  EXPECT_FALSE(ConnectResumed(client, server, "k"));
  Connection c(client, "localhost", server, "k");
  c.client.inner.Send("again");
  Pump(c.client, c.server);
  ASSERT_EQ(c.server.inner.received(), "again");
  const auto& identity = c.server.tls->peer_identity();
  ASSERT_NE(identity, nullptr);
  EXPECT_TRUE(identity->session_reused);
  EXPECT_TRUE(identity->certificate_verified);
  EXPECT_THAT(identity->uris, ElementsAre("spiffe://h2rpc.test/client"));
}

TEST(TlsResumptionTest, Tls12ResumesToo) {
  auto client = ResumingClient(nullptr, TLS1_2_VERSION);
  auto server = TicketServer();
  EXPECT_FALSE(ConnectResumed(client, server, "k"));
  EXPECT_TRUE(ConnectResumed(client, server, "k"));
}

TEST(TlsResumptionTest, NothingResumesWithoutTicketsOrACache) {
  // A server without tickets.
  auto client = ResumingClient();
  auto no_tickets = TicketServer(ClientCertificateRequest::kDontRequest,
                                 absl::ZeroDuration());
  EXPECT_FALSE(ConnectResumed(client, no_tickets, "k"));
  EXPECT_FALSE(ConnectResumed(client, no_tickets, "k"));
  EXPECT_EQ(client->session_cache()->size(), 0u);
  // A client without a cache.
  auto no_cache = ClientContext(GetTestPki().ca_pem);
  EXPECT_EQ(no_cache->session_cache(), nullptr);
  auto server = TicketServer();
  EXPECT_FALSE(ConnectResumed(no_cache, server, "k"));
  EXPECT_FALSE(ConnectResumed(no_cache, server, "k"));
  // A session a server with other ticket keys cannot read: a full
  // handshake, no failure.
  EXPECT_FALSE(ConnectResumed(client, server, "k"));
  EXPECT_FALSE(ConnectResumed(client, TicketServer(), "k"));
}

TEST(ClientSessionCacheTest, KeepsTheNewestUpToItsCapacity) {
  ClientSessionCache cache(2);
  cache.Put("a", SSL_SESSION_new());
  cache.Put("b", SSL_SESSION_new());
  cache.Put("a", SSL_SESSION_new());  // replaces a's
  EXPECT_EQ(cache.size(), 2u);
  cache.Put("c", SSL_SESSION_new());  // drops b, the oldest
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Take("b"), nullptr);
  SSL_SESSION* a = cache.Take("a");
  ASSERT_NE(a, nullptr);
  SSL_SESSION_free(a);
  EXPECT_EQ(cache.Take("a"), nullptr);  // used once
  EXPECT_EQ(cache.size(), 1u);
}

}  // namespace
}  // namespace h2rpc::transport::tls
