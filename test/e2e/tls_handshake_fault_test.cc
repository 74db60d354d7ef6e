// A TLS port of an h2rpc server against raw OpenSSL clients over real
// sockets: `openssl s_client` offering no ALPN, or ALPN without h2, gets a
// no_application_protocol alert during the handshake; a peer that goes
// silent during the handshake (before its hello, or after the server's) is
// closed with a FIN at handshake_timeout, not close_linger later, and a
// TLS 1.2 peer that had the server's hello is told user_canceled first.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/credentials.h"
#include "rpc/server.h"
#include "test/util/child_process.h"
#include "test/util/stub_server.h"
#include "transport/io/socket.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::DescribeWaitStatus;
using ::h2rpc::testing::MillisUntil;
using ::h2rpc::testing::ReapWithin;
using ::h2rpc::testing::SpawnedChild;
using ::h2rpc::testing::SpawnWithPipes;
using ::h2rpc::testing::StubServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using transport::io::FileDescriptor;
using transport::tls::testing::GetTestPki;

constexpr char kOpenSsl[] = "/usr/bin/openssl";
// Bounds a step that should take milliseconds; never measures speed.
constexpr absl::Duration kStepTimeout = absl::Seconds(30);

// The handshake timeout of the servers below, and a linger much longer than
// the slack the timing checks allow, so a close after the linger cannot
// pass for one at the timeout.
constexpr absl::Duration kHandshakeTimeout = absl::Seconds(1);
constexpr absl::Duration kCloseLinger = absl::Seconds(6);
// How late after kHandshakeTimeout the close may come (sanitizer builds on
// a busy machine), and how early (the timer starts once the server has the
// connection, after connect() returned, so only clock granularity).
constexpr absl::Duration kLateSlack = absl::Seconds(3);
constexpr absl::Duration kEarlySlack = absl::Milliseconds(20);

class TlsHandshakeFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(kOpenSsl, X_OK), 0)
        << kOpenSsl << " is missing (Debian package openssl)";
    SslServerCredentialsOptions tls;
    tls.pem_key_cert_pairs.push_back({GetTestPki().server.private_key_pem,
                                      GetTestPki().server.cert_chain_pem});
    auto credentials = SslServerCredentials(tls);
    ASSERT_TRUE(credentials->status().ok()) << credentials->status().ToString();
    ServerOptions options;
    options.num_loops = 1;
    options.connection.handshake_timeout = kHandshakeTimeout;
    options.connection.close_linger = kCloseLinger;
    server_.builder().SetOptions(options);
    const Status status = server_.Start(credentials);
    ASSERT_TRUE(server_.started()) << status.ToString();
  }

  // Runs `openssl s_client` against the server with `extra` arguments and
  // its stdin at end of file; returns what it printed (stdout and stderr).
  std::string RunSClient(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kOpenSsl,      "s_client",
                                     "-connect",    server_.target(),
                                     "-servername", "localhost"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    SpawnedChild child;
    std::string error;
    if (!SpawnWithPipes(argv, &child, &error)) {
      ADD_FAILURE() << error;
      return "";
    }
    close(child.stdin_fd);
    std::string output;
    const absl::Time give_up = absl::Now() + kStepTimeout;
    pollfd fds[2] = {{child.stdout_fd, POLLIN, 0},
                     {child.stderr_fd, POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
      const int ready = poll(fds, 2, MillisUntil(give_up));
      if (ready == 0) {
        ADD_FAILURE() << "s_client still running after " << kStepTimeout;
        break;
      }
      if (ready < 0 && errno == EINTR) continue;
      for (pollfd& fd : fds) {
        if (fd.fd < 0 || fd.revents == 0) continue;
        char buffer[4096];
        const ssize_t n = read(fd.fd, buffer, sizeof(buffer));
        if (n > 0) {
          output.append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fd.fd);
          fd.fd = -1;
          --open_fds;
        }
      }
    }
    for (pollfd& fd : fds) {
      if (fd.fd >= 0) close(fd.fd);
    }
    int wait_status = 0;
    if (!ReapWithin(child.pid, kStepTimeout, &wait_status)) {
      ADD_FAILURE() << "s_client did not exit";
    }
    return output + "\n[" + DescribeWaitStatus(wait_status) + "]";
  }

  FileDescriptor Connect() {
    FileDescriptor socket(::socket(AF_INET, SOCK_STREAM, 0));
    EXPECT_TRUE(socket.valid());
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(server_.port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(socket.get(), reinterpret_cast<sockaddr*>(&address),
                      sizeof(address)),
              0);
    return socket;
  }

  StubServer server_;
};

// What a peer read from the server until the server closed.
struct UntilClosed {
  std::string bytes;
  bool fin = false;   // the close was a FIN (read returned 0), not a reset
  absl::Time closed;  // when the close was seen
};

// Reads `socket` until the server closes it (or kStepTimeout passes).
UntilClosed ReadUntilClosed(int socket) {
  UntilClosed result;
  const absl::Time give_up = absl::Now() + kStepTimeout;
  while (true) {
    pollfd fd = {socket, POLLIN, 0};
    const int ready = poll(&fd, 1, MillisUntil(give_up));
    if (ready == 0) {
      ADD_FAILURE() << "the server did not close within " << kStepTimeout;
      return result;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      ADD_FAILURE() << "poll: " << errno;
      return result;
    }
    char buffer[4096];
    const ssize_t n = recv(socket, buffer, sizeof(buffer), 0);
    if (n > 0) {
      result.bytes.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    result.fin = n == 0;
    result.closed = absl::Now();
    return result;
  }
}

TEST_F(TlsHandshakeFaultTest, ClientWithoutAlpnGetsNoApplicationProtocol) {
  for (const char* version : {"-tls1_3", "-tls1_2"}) {
    const std::string output = RunSClient({version});
    EXPECT_THAT(output, HasSubstr("alert no application protocol")) << output;
    EXPECT_THAT(output, HasSubstr("alert number 120")) << output;
  }
}

TEST_F(TlsHandshakeFaultTest, ClientWithoutH2GetsNoApplicationProtocol) {
  for (const char* version : {"-tls1_3", "-tls1_2"}) {
    const std::string output = RunSClient({version, "-alpn", "http/1.1"});
    EXPECT_THAT(output, HasSubstr("alert no application protocol")) << output;
    EXPECT_THAT(output, HasSubstr("alert number 120")) << output;
  }
}

// The control: the same client offering h2 completes the handshake.
TEST_F(TlsHandshakeFaultTest, ClientOfferingH2CompletesTheHandshake) {
  const std::string output = RunSClient({"-alpn", "h2"});
  EXPECT_THAT(output, HasSubstr("ALPN protocol: h2")) << output;
  EXPECT_THAT(output, ::testing::Not(HasSubstr("alert"))) << output;
}

TEST_F(TlsHandshakeFaultTest, SilentPeerIsClosedAtTheHandshakeTimeout) {
  const absl::Time start = absl::Now();
  FileDescriptor socket = Connect();
  const UntilClosed result = ReadUntilClosed(socket.get());
  const absl::Duration elapsed = result.closed - start;
  EXPECT_TRUE(result.fin);
  EXPECT_TRUE(result.bytes.empty());  // no TLS yet: nothing to say
  EXPECT_GE(elapsed, kHandshakeTimeout - kEarlySlack);
  EXPECT_LT(elapsed, kHandshakeTimeout + kLateSlack)
      << "closed " << elapsed << " after connecting: after close_linger?";
}

// A TLS client on memory BIOs whose ClientHello the test sends by hand,
// and which then says nothing more: it has the server's hello flight and
// never answers it. It offers h2 and sees every alert it reads.
class StalledClient {
 public:
  explicit StalledClient(int version) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx_, version);
    SSL_CTX_set_max_proto_version(ctx_, version);
    static const unsigned char kH2[] = {2, 'h', '2'};
    SSL_CTX_set_alpn_protos(ctx_, kH2, sizeof(kH2));
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    ssl_ = SSL_new(ctx_);
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl_, in_, out_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    SSL_set_app_data(ssl_, this);
    SSL_set_info_callback(ssl_, [](const SSL* ssl, int where, int value) {
      if ((where & SSL_CB_READ_ALERT) != 0) {
        static_cast<StalledClient*>(SSL_get_app_data(ssl))
            ->alerts_.push_back(value & 0xff);
      }
    });
    SSL_set_connect_state(ssl_);
  }
  ~StalledClient() {
    SSL_free(ssl_);  // frees the BIOs
    SSL_CTX_free(ctx_);
  }

  // The ClientHello.
  std::string Hello() {
    SSL_do_handshake(ssl_);
    return TakeOutput();
  }
  // Feeds what the server sent; the client's answer is dropped.
  void Receive(const std::string& bytes) {
    BIO_write(in_, bytes.data(), static_cast<int>(bytes.size()));
    SSL_do_handshake(ssl_);
    TakeOutput();
  }
  // Alert descriptions read, in order.
  const std::vector<int>& alerts() const { return alerts_; }

 private:
  std::string TakeOutput() {
    std::string bytes;
    char buffer[4096];
    int n;
    while ((n = BIO_read(out_, buffer, sizeof(buffer))) > 0) {
      bytes.append(buffer, static_cast<size_t>(n));
    }
    return bytes;
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // owned by ssl_
  BIO* out_ = nullptr;  // owned by ssl_
  std::vector<int> alerts_;
};

// Returns what the server sent a client that stalls after its ClientHello,
// checking the close comes with a FIN at the handshake timeout.
UntilClosed StallAfterHello(int socket, StalledClient& client) {
  const absl::Time start = absl::Now();
  const std::string hello = client.Hello();
  EXPECT_FALSE(hello.empty());
  EXPECT_EQ(send(socket, hello.data(), hello.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(hello.size()));
  UntilClosed result = ReadUntilClosed(socket);
  const absl::Duration elapsed = result.closed - start;
  EXPECT_TRUE(result.fin);
  EXPECT_GE(elapsed, kHandshakeTimeout - kEarlySlack);
  EXPECT_LT(elapsed, kHandshakeTimeout + kLateSlack)
      << "closed " << elapsed << " after connecting: after close_linger?";
  client.Receive(result.bytes);
  return result;
}

// TLS 1.3: the server's flight after its ServerHello is under handshake
// keys that only OpenSSL holds, and OpenSSL offers no way to send an alert
// while the handshake is under way, so the close is a FIN alone.
TEST_F(TlsHandshakeFaultTest, Tls13PeerSilentAfterTheServerHelloIsClosed) {
  FileDescriptor socket = Connect();
  StalledClient client(TLS1_3_VERSION);
  const UntilClosed result = StallAfterHello(socket.get(), client);
  EXPECT_FALSE(result.bytes.empty());  // the server's flight
  EXPECT_TRUE(client.alerts().empty());
}

// TLS 1.2: the server's records are plaintext until its ChangeCipherSpec,
// so it cancels the handshake in the open: user_canceled, then
// close_notify.
TEST_F(TlsHandshakeFaultTest, Tls12PeerSilentAfterTheServerHelloIsToldWhy) {
  FileDescriptor socket = Connect();
  StalledClient client(TLS1_2_VERSION);
  StallAfterHello(socket.get(), client);
  EXPECT_THAT(client.alerts(),
              ElementsAre(SSL_AD_USER_CANCELLED, SSL_AD_CLOSE_NOTIFY));
}

}  // namespace
}  // namespace h2rpc
