// Writes the seed corpus of tls_session_fuzzer: real handshakes between a
// client and a server TlsSession, run against each other in memory, cut
// into flights:
//
//   tools/bazel run //test/fuzz:tls_corpus_generator -- $PWD/test/fuzz/corpus
//
// A file is the fuzzer's control byte (see tls_session_fuzzer.cc) followed
// by what one side sent: for the server role the client's ClientHello, or
// its ClientHello and second flight; for the client role the server's first
// flight in answer to a ClientHello. The certificates come from this
// process's test PKI and the flights answer this run's randoms, so in the
// fuzzer they neither verify nor decrypt past the key exchange; they seed
// the record and message parsers with well-formed structure.
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "base/status.h"
#include "transport/io/byte_session.h"
#include "transport/tls/testing/test_pki.h"
#include "transport/tls/tls_context.h"
#include "transport/tls/tls_session.h"

namespace h2rpc::transport::tls {
namespace {

using testing::GetTestPki;

// The protocol above TLS: sends nothing, so the ends exchange handshake
// records only.
class SilentSession final : public io::ByteSession {
 public:
  void Start(io::Wire* wire) override { wire_ = wire; }
  void Feed(absl::string_view) override {}
  void OnPeerClosed() override {}
  void OnWireError(const Status& why) override {
    error = why;
    wire_->CloseWire(/*flush_first=*/true);
  }
  absl::string_view PendingOutput() override { return {}; }
  void ConsumeOutput(size_t) override {}

  Status error;

 private:
  io::Wire* wire_ = nullptr;
};

class Socket final : public io::Wire {
 public:
  void RequestFlush() override {}
  void ShutdownWrite() override {}
  void CloseWire(bool) override { closed = true; }

  bool closed = false;
};

struct End {
  explicit End(std::unique_ptr<TlsSession> session) : tls(std::move(session)) {
    tls->Attach(&inner);
    tls->Start(&socket);
  }
  // Everything the end has to write now.
  std::string Take() {
    std::string out;
    while (!socket.closed) {
      const absl::string_view piece = tls->PendingOutput();
      if (piece.empty()) break;
      out.append(piece.data(), piece.size());
      tls->ConsumeOutput(piece.size());
    }
    return out;
  }

  SilentSession inner;
  Socket socket;
  std::unique_ptr<TlsSession> tls;
};

struct Flights {
  std::string client_hello;
  std::string server_flight;  // the answer to client_hello
  std::string client_flight;  // the answer to server_flight
  bool done = false;          // both ends finished the handshake
};

Flights Capture(std::shared_ptr<const TlsContext> client_context,
                std::shared_ptr<const TlsContext> server_context) {
  End server(TlsSession::NewServer(std::move(server_context)));
  End client(TlsSession::NewClient(std::move(client_context), "localhost"));
  Flights flights;
  flights.client_hello = client.Take();
  server.tls->Feed(flights.client_hello);
  flights.server_flight = server.Take();
  client.tls->Feed(flights.server_flight);
  flights.client_flight = client.Take();
  server.tls->Feed(flights.client_flight);
  client.tls->Feed(server.Take());
  flights.done = client.tls->peer_identity() != nullptr &&
                 server.tls->peer_identity() != nullptr;
  if (!flights.done) {
    std::fprintf(stderr, "handshake did not finish: client: %s; server: %s\n",
                 client.inner.error.message().c_str(),
                 server.inner.error.message().c_str());
  }
  return flights;
}

bool Ok(const Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, status.message().c_str());
  }
  return status.ok();
}

std::shared_ptr<const TlsContext> ServerContext(
    ClientCertificateRequest request) {
  ServerConfig config;
  config.key_certs.push_back({GetTestPki().server.private_key_pem,
                              GetTestPki().server.cert_chain_pem});
  config.root_certs_pem = GetTestPki().ca_pem;
  config.client_certificate_request = request;
  std::shared_ptr<const TlsContext> context;
  if (!Ok(TlsContext::CreateServer(config, &context), "server context")) {
    return nullptr;
  }
  return context;
}

std::shared_ptr<const TlsContext> ClientContext(bool with_certificate,
                                                bool tls12_only) {
  ClientConfig config;
  config.root_certs_pem = GetTestPki().ca_pem;
  if (with_certificate) {
    config.key_cert = {GetTestPki().client.private_key_pem,
                       GetTestPki().client.cert_chain_pem};
  }
  std::shared_ptr<const TlsContext> context;
  if (!Ok(TlsContext::CreateClient(config, &context), "client context")) {
    return nullptr;
  }
  if (tls12_only &&
      SSL_CTX_set_max_proto_version(context->ssl_ctx(), TLS1_2_VERSION) != 1) {
    std::fprintf(stderr, "cannot limit the client to TLS 1.2\n");
    return nullptr;
  }
  return context;
}

// The fuzzer's control byte. `mode`: the server's client certificate mode,
// or for a client bit 0 a certificate and bit 1 TLS 1.2 only.
char Control(bool client, int chunk_log2, int mode, bool wire_error) {
  return static_cast<char>((client ? 0x01 : 0) | chunk_log2 << 1 | mode << 5 |
                           (wire_error ? 0x80 : 0));
}

constexpr int kBig = 15;  // 32 KiB chunks: each flight in one Feed()
constexpr int kServerDontRequest = 0;
constexpr int kServerRequestButDontVerify = 1;
constexpr int kServerRequireAndVerify = 2;
constexpr int kClientWithCertificate = 1;
constexpr int kClientTls12 = 2;

class Writer {
 public:
  explicit Writer(std::string dir) : dir_(std::move(dir)) {}

  void Write(const char* name, char control, absl::string_view bytes) {
    if (bytes.empty()) {
      std::fprintf(stderr, "%s: nothing captured\n", name);
      ok_ = false;
      return;
    }
    std::ofstream file(dir_ + "/" + name, std::ios::binary | std::ios::trunc);
    file.put(control);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) {
      std::fprintf(stderr, "%s/%s: cannot write\n", dir_.c_str(), name);
      ok_ = false;
    }
  }
  void Require(bool condition, const char* what) {
    if (!condition) {
      std::fprintf(stderr, "%s\n", what);
      ok_ = false;
    }
  }
  bool ok() const { return ok_; }

 private:
  const std::string dir_;
  bool ok_ = true;
};

bool WriteCorpus(const std::string& dir) {
  using Request = ClientCertificateRequest;
  Writer out(dir);
  const auto plain_client = ClientContext(false, false);
  const auto mtls_client = ClientContext(true, false);
  const auto tls12_client = ClientContext(false, true);
  const auto tls12_mtls_client = ClientContext(true, true);
  const auto server = ServerContext(Request::kDontRequest);
  const auto require_server = ServerContext(Request::kRequireAndVerify);
  const auto request_server = ServerContext(Request::kRequestButDontVerify);
  if (!plain_client || !mtls_client || !tls12_client || !tls12_mtls_client ||
      !server || !require_server || !request_server) {
    return false;
  }

  const Flights tls13 = Capture(plain_client, server);
  const Flights mtls13 = Capture(mtls_client, require_server);
  const Flights tls12 = Capture(tls12_client, server);
  const Flights mtls12 = Capture(tls12_mtls_client, request_server);
  out.Require(tls13.done && mtls13.done && tls12.done && mtls12.done,
              "a handshake failed");

  // Server role: what a client sends.
  out.Write("client_hello_tls13",
            Control(false, kBig, kServerDontRequest, false),
            tls13.client_hello);
  out.Write("client_hello_tls13_small",
            Control(false, 3, kServerRequireAndVerify, true),
            tls13.client_hello);
  out.Write("client_hello_tls12",
            Control(false, kBig, kServerDontRequest, false),
            tls12.client_hello);
  out.Write("client_flights_tls13",
            Control(false, kBig, kServerDontRequest, false),
            tls13.client_hello + tls13.client_flight);
  out.Write("client_flights_tls13_mtls",
            Control(false, kBig, kServerRequireAndVerify, false),
            mtls13.client_hello + mtls13.client_flight);
  out.Write("client_flights_tls12",
            Control(false, kBig, kServerDontRequest, false),
            tls12.client_hello + tls12.client_flight);
  out.Write("client_flights_tls12_mtls",
            Control(false, kBig, kServerRequestButDontVerify, false),
            mtls12.client_hello + mtls12.client_flight);
  {
    // A client that offers only http/1.1: the server refuses it.
    const auto http11_client = ClientContext(false, false);
    static const unsigned char kHttp11[] = {8,   'h', 't', 't', 'p',
                                            '/', '1', '.', '1'};
    out.Require(http11_client != nullptr &&
                    SSL_CTX_set_alpn_protos(http11_client->ssl_ctx(), kHttp11,
                                            sizeof(kHttp11)) == 0,
                "cannot set ALPN http/1.1");
    if (http11_client != nullptr) {
      End client(TlsSession::NewClient(http11_client, "localhost"));
      out.Write("client_hello_no_h2",
                Control(false, kBig, kServerDontRequest, false), client.Take());
    }
  }
  {
    // Plaintext HTTP/2: the connection preface and an empty SETTINGS frame.
    static const char kPlaintext[] =
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    out.Write("plaintext_preface",
              Control(false, kBig, kServerDontRequest, false),
              absl::string_view(kPlaintext, sizeof(kPlaintext) - 1));
  }

  // Client role: what a server answers to a ClientHello.
  out.Write("server_flight_tls13", Control(true, kBig, 0, false),
            tls13.server_flight);
  out.Write("server_flight_tls13_small", Control(true, 4, 0, true),
            tls13.server_flight);
  out.Write("server_flight_tls13_mtls",
            Control(true, kBig, kClientWithCertificate, false),
            mtls13.server_flight);
  out.Write("server_flight_tls12", Control(true, kBig, kClientTls12, false),
            tls12.server_flight);
  out.Write("server_flight_tls12_mtls",
            Control(true, kBig, kClientTls12 | kClientWithCertificate, false),
            mtls12.server_flight);
  {
    // A server that accepts only P-256 answers the client's X25519 key
    // share with a HelloRetryRequest.
    const auto p256_server = ServerContext(Request::kDontRequest);
    out.Require(
        p256_server != nullptr &&
            SSL_CTX_set1_groups_list(p256_server->ssl_ctx(), "P-256") == 1,
        "cannot limit the server to P-256");
    if (p256_server != nullptr) {
      End server_end(TlsSession::NewServer(p256_server));
      End client(TlsSession::NewClient(plain_client, "localhost"));
      server_end.tls->Feed(client.Take());
      out.Write("hello_retry_request", Control(true, kBig, 0, false),
                server_end.Take());
    }
  }
  return out.ok();
}

}  // namespace
}  // namespace h2rpc::transport::tls

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT (test/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const std::string dir = std::string(argv[1]) + "/tls_session";
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::perror(dir.c_str());
    return 1;
  }
  return h2rpc::transport::tls::WriteCorpus(dir) ? 0 : 1;
}
