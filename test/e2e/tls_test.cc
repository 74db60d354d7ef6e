// h2rpc client <-> h2rpc server over TLS on loopback sockets: the handshake,
// each way it fails, mutual TLS with the client's identity in the handler,
// and what a peer speaking the wrong protocol gets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/credentials.h"
#include "rpc/server.h"
#include "test/util/stub_server.h"
#include "transport/io/socket.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::StubServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using transport::tls::testing::GetTestPki;
using transport::tls::testing::KeyAndCert;

constexpr char kEcho[] = "/h2rpc.test.Tls/Echo";
constexpr char kWhoAmI[] = "/h2rpc.test.Tls/WhoAmI";
// "resumed" when the connection resumed a TLS session, else "full".
constexpr char kHandshake[] = "/h2rpc.test.Tls/Handshake";

std::shared_ptr<ServerCredentials> ServerTls(
    const KeyAndCert& own, SslClientCertificateRequest request =
                               SslClientCertificateRequest::kDontRequest) {
  SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back(
      {own.private_key_pem, own.cert_chain_pem});
  options.pem_root_certs = GetTestPki().ca_pem;
  options.client_certificate_request = request;
  auto credentials = SslServerCredentials(options);
  EXPECT_TRUE(credentials->status().ok()) << credentials->status().ToString();
  return credentials;
}

std::shared_ptr<ChannelCredentials> ClientTls(const std::string& roots,
                                              const KeyAndCert* own = nullptr) {
  SslCredentialsOptions options;
  options.pem_root_certs = roots;
  if (own != nullptr) {
    options.pem_private_key = own->private_key_pem;
    options.pem_cert_chain = own->cert_chain_pem;
  }
  auto credentials = SslCredentials(options);
  EXPECT_TRUE(credentials->status().ok()) << credentials->status().ToString();
  return credentials;
}

// A server with an echo method and one that reports the client's identity
// ("subject|verified|uri,..." or "plaintext") in the response body.
class TlsTest : public ::testing::Test {
 protected:
  void Serve(std::shared_ptr<ServerCredentials> credentials,
             ServerOptions options = ServerOptions()) {
    options.num_loops = 1;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kEcho,
            [](ServerContext*, const SimpleRequest& request,
               SimpleResponse* response) {
              response->mutable_payload()->set_body(request.payload().body());
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kHandshake,
            [](ServerContext* context, const SimpleRequest&,
               SimpleResponse* response) {
              const auto& identity = context->peer_identity();
              response->mutable_payload()->set_body(
                  identity != nullptr && identity->session_reused ? "resumed"
                                                                  : "full");
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kWhoAmI, [](ServerContext* context, const SimpleRequest&,
                        SimpleResponse* response) {
              const auto& identity = context->peer_identity();
              std::string body = "plaintext";
              if (identity != nullptr) {
                body = identity->subject + "|" +
                       (identity->certificate_verified ? "verified"
                                                       : "unverified");
                for (const std::string& uri : identity->uris) {
                  body += "|" + uri;
                }
              }
              response->mutable_payload()->set_body(body);
              return Status();
            });
    const Status status = server_.Start(std::move(credentials));
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  std::shared_ptr<Channel> Connect(
      std::shared_ptr<ChannelCredentials> credentials,
      const std::string& name_override = "localhost") {
    ChannelOptions options;
    options.ssl_target_name_override = name_override;
    return server_.NewChannel(options, std::move(credentials));
  }

  static Status Call(Channel& channel, const char* method,
                     const std::string& body, std::string* reply = nullptr) {
    ClientContext context;
    context.set_deadline(absl::Now() + absl::Seconds(20));
    SimpleRequest request;
    request.mutable_payload()->set_body(body);
    SimpleResponse response;
    const Status status =
        channel.UnaryCall(&context, method, request, &response);
    if (reply != nullptr) *reply = response.payload().body();
    return status;
  }

  StubServer server_;
};

TEST_F(TlsTest, UnaryCallsOverTls) {
  Serve(ServerTls(GetTestPki().server));
  auto channel = Connect(ClientTls(GetTestPki().ca_pem));
  std::string reply;
  ASSERT_TRUE(Call(*channel, kEcho, "hello", &reply).ok());
  EXPECT_EQ(reply, "hello");
  // A large message spans many records.
  const std::string big(1 << 20, 'b');
  Status status = Call(*channel, kEcho, big, &reply);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(reply, big);
  // No client certificate: TLS, but no verified identity.
  ASSERT_TRUE(Call(*channel, kWhoAmI, "", &reply).ok());
  EXPECT_EQ(reply, "|unverified");
}

// A new connection with the same credentials (another channel, or a
// reconnect) resumes the session of the last one, unless either side turned
// resumption off.
TEST_F(TlsTest, NewConnectionsResumeTheLastSession) {
  Serve(ServerTls(GetTestPki().server));
  auto credentials = ClientTls(GetTestPki().ca_pem);
  std::string reply;
  ASSERT_TRUE(Call(*Connect(credentials), kHandshake, "", &reply).ok());
  EXPECT_EQ(reply, "full");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Call(*Connect(credentials), kHandshake, "", &reply).ok());
    EXPECT_EQ(reply, "resumed");
  }
  // Without a client cache.
  SslCredentialsOptions no_cache;
  no_cache.pem_root_certs = GetTestPki().ca_pem;
  no_cache.session_cache_size = 0;
  auto full = SslCredentials(no_cache);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Call(*Connect(full), kHandshake, "", &reply).ok());
    EXPECT_EQ(reply, "full");
  }
}

TEST_F(TlsTest, AServerWithoutTicketsMakesEveryHandshakeFull) {
  SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({GetTestPki().server.private_key_pem,
                                        GetTestPki().server.cert_chain_pem});
  options.session_ticket_key_rotation = absl::ZeroDuration();
  Serve(SslServerCredentials(options));
  auto credentials = ClientTls(GetTestPki().ca_pem);
  std::string reply;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Call(*Connect(credentials), kHandshake, "", &reply).ok());
    EXPECT_EQ(reply, "full");
  }
}

// A certificate chain past OpenSSL's limit (max_cert_list, 100 KiB) fails
// the handshake of whichever side receives it, with a clear reason; the
// server goes on serving.
TEST_F(TlsTest, HugeCertificateChainsAreRefused) {
  std::string huge_chain = GetTestPki().client.cert_chain_pem;
  for (int i = 0; i < 400; ++i) huge_chain += GetTestPki().ca_pem;
  ASSERT_GT(huge_chain.size(), 200u << 10);
  Serve(ServerTls(GetTestPki().server,
                  SslClientCertificateRequest::kRequireAndVerify));
  // From a client.
  SslCredentialsOptions hostile;
  hostile.pem_root_certs = GetTestPki().ca_pem;
  hostile.pem_private_key = GetTestPki().client.private_key_pem;
  hostile.pem_cert_chain = huge_chain;
  auto credentials = SslCredentials(hostile);
  ASSERT_TRUE(credentials->status().ok()) << credentials->status().ToString();
  Status status = Call(*Connect(credentials), kEcho, "x");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  // (TLS 1.3: the client hears of it as the server's alert, or as the
  // reset of a connection the server closed, depending on timing.)
  // The server still serves a well-behaved client.
  std::string reply;
  status = Call(*Connect(ClientTls(GetTestPki().ca_pem, &GetTestPki().client)),
                kWhoAmI, "", &reply);
  ASSERT_TRUE(status.ok()) << status.ToString();

  // From a server.
  StubServer hostile_server;
  hostile_server.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
      kEcho, [](ServerContext*, const SimpleRequest&, SimpleResponse*) {
        return Status();
      });
  SslServerCredentialsOptions options;
  std::string huge_server_chain = GetTestPki().server.cert_chain_pem;
  for (int i = 0; i < 400; ++i) huge_server_chain += GetTestPki().ca_pem;
  options.pem_key_cert_pairs.push_back(
      {GetTestPki().server.private_key_pem, huge_server_chain});
  ASSERT_TRUE(hostile_server.Start(SslServerCredentials(options)).ok());
  ChannelOptions channel_options;
  channel_options.ssl_target_name_override = "localhost";
  status = Call(*hostile_server.NewChannel(channel_options,
                                           ClientTls(GetTestPki().ca_pem)),
                kEcho, "x");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("excessive message size"));
}

TEST_F(TlsTest, TargetHostIsTheNameVerifiedWithoutAnOverride) {
  Serve(ServerTls(GetTestPki().server));
  // "127.0.0.1" is one of the certificate's IP subject alternative names.
  auto channel =
      server_.NewChannel(ChannelOptions(), ClientTls(GetTestPki().ca_pem));
  std::string reply;
  const Status status = Call(*channel, kEcho, "by address", &reply);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(reply, "by address");
}

TEST_F(TlsTest, MutualTlsShowsTheClientsIdentityToTheHandler) {
  Serve(ServerTls(GetTestPki().server,
                  SslClientCertificateRequest::kRequireAndVerify));
  auto channel = Connect(ClientTls(GetTestPki().ca_pem, &GetTestPki().client));
  std::string reply;
  const Status status = Call(*channel, kWhoAmI, "", &reply);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(reply, "CN=h2rpc test client|verified|spiffe://h2rpc.test/client");
}

TEST_F(TlsTest, PlaintextPortsHaveNoPeerIdentity) {
  Serve(InsecureServerCredentials());
  auto channel = server_.NewChannel();
  std::string reply;
  ASSERT_TRUE(Call(*channel, kWhoAmI, "", &reply).ok());
  EXPECT_EQ(reply, "plaintext");
}

// Each handshake failure reaches the caller as UNAVAILABLE with OpenSSL's
// reason; the handler never runs.
void ExpectUnavailable(const Status& status, const std::string& reason) {
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(reason));
}

TEST_F(TlsTest, WrongHostName) {
  Serve(ServerTls(GetTestPki().server));
  auto channel = Connect(ClientTls(GetTestPki().ca_pem), "wrong.example");
  ExpectUnavailable(Call(*channel, kEcho, "x"), "hostname mismatch");
}

TEST_F(TlsTest, UntrustedCertificateAuthority) {
  Serve(ServerTls(GetTestPki().server_from_other_ca));
  auto channel = Connect(ClientTls(GetTestPki().ca_pem));
  ExpectUnavailable(Call(*channel, kEcho, "x"), "certificate verify failed");
}

TEST_F(TlsTest, ExpiredCertificate) {
  Serve(ServerTls(GetTestPki().expired_server));
  auto channel = Connect(ClientTls(GetTestPki().ca_pem));
  ExpectUnavailable(Call(*channel, kEcho, "x"), "certificate has expired");
}

TEST_F(TlsTest, ClientCertificateRequiredButMissing) {
  Serve(ServerTls(GetTestPki().server,
                  SslClientCertificateRequest::kRequireAndVerify));
  auto channel = Connect(ClientTls(GetTestPki().ca_pem));
  ExpectUnavailable(Call(*channel, kEcho, "x"), "certificate required");
}

TEST_F(TlsTest, AFailedHandshakeBacksOffLikeAFailedConnect) {
  Serve(ServerTls(GetTestPki().server));
  auto channel = Connect(ClientTls(GetTestPki().ca_pem), "wrong.example");
  const Status first = Call(*channel, kEcho, "x");
  ExpectUnavailable(first, "hostname mismatch");
  // Within the first backoff (1 s) the next call fails fast with the same
  // error instead of handshaking again.
  const absl::Time start = absl::Now();
  const Status second = Call(*channel, kEcho, "x");
  if (absl::Now() - start < absl::Seconds(1)) {
    EXPECT_EQ(second.message(), first.message());
  }
  ExpectUnavailable(second, "hostname mismatch");
}

TEST_F(TlsTest, PlaintextClientToTlsPortFailsPromptly) {
  Serve(ServerTls(GetTestPki().server));
  auto channel = server_.NewChannel();
  const Status status = Call(*channel, kEcho, "x");
  // Not DEADLINE_EXCEEDED: the server closes the connection.
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
}

TEST_F(TlsTest, TlsClientToPlaintextPortFailsPromptly) {
  Serve(InsecureServerCredentials());
  auto channel = Connect(ClientTls(GetTestPki().ca_pem));
  const Status status = Call(*channel, kEcho, "x");
  ExpectUnavailable(status, "TLS handshake failed");
}

TEST_F(TlsTest, SilentClientIsClosedAfterTheHandshakeTimeout) {
  ServerOptions options;
  options.connection.handshake_timeout = absl::Milliseconds(200);
  Serve(ServerTls(GetTestPki().server), options);
  transport::io::FileDescriptor socket(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(socket.valid());
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server_.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(socket.get(), reinterpret_cast<sockaddr*>(&address),
                    sizeof(address)),
            0);
  // Says nothing; the server must close within its handshake timeout (the
  // receive timeout only bounds the test).
  timeval limit{10, 0};
  ASSERT_EQ(
      setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit)),
      0);
  char byte;
  const absl::Time start = absl::Now();
  EXPECT_EQ(recv(socket.get(), &byte, 1, 0), 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(TlsTest, UnusableCredentialsAreReportedClearly) {
  SslCredentialsOptions bad_roots;
  bad_roots.pem_root_certs = "not a certificate";
  auto credentials = SslCredentials(bad_roots);
  EXPECT_EQ(credentials->status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials->status().message(), HasSubstr("pem_root_certs"));
  Serve(ServerTls(GetTestPki().server));
  auto channel = Connect(credentials);
  ExpectUnavailable(Call(*channel, kEcho, "x"), "unusable channel credentials");

  SslServerCredentialsOptions mismatched;
  mismatched.pem_key_cert_pairs.push_back({GetTestPki().client.private_key_pem,
                                           GetTestPki().server.cert_chain_pem});
  StubServer server;
  const Status status = server.Start(SslServerCredentials(mismatched));
  EXPECT_FALSE(server.started());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("pem_private_key"));
}

}  // namespace
}  // namespace h2rpc
