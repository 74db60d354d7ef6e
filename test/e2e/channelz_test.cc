// channelz (rpc/channelz.h) fed by real channels and servers over loopback:
// the entities they register, their relations, and the call, stream and
// message counts their loops and connections write.
#include "rpc/channelz.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/internal/channelz/channelz_registry.h"
#include "rpc/server.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using internal::ChannelzAccess;
using internal::ChannelzChannelData;
using internal::ChannelzRegistry;
using internal::ChannelzServerData;
using internal::ChannelzSocketData;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;

constexpr char kEcho[] = "/channelz.Test/Echo";
constexpr char kBidi[] = "/channelz.Test/Bidi";

// The DER form of a PEM certificate.
std::string DerOf(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) return std::string();
  std::string der(static_cast<size_t>(i2d_X509(cert, nullptr)), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509(cert, &out);
  X509_free(cert);
  return der;
}

bool Recent(absl::Time time) {
  return absl::AbsDuration(absl::Now() - time) < absl::Minutes(1);
}

class ChannelzTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = ServerOptions(),
                   std::shared_ptr<ServerCredentials> credentials =
                       InsecureServerCredentials()) {
    options.num_loops = 2;
    options.channelz = channelz_;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kEcho,
            [](ServerContext*, const SimpleRequest& request,
               SimpleResponse* response) {
              if (request.has_response_status()) {
                return Status(
                    static_cast<StatusCode>(request.response_status().code()),
                    "asked for");
              }
              response->mutable_payload()->set_body("r");
              return Status();
            })
        .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
            kBidi,
            [](ServerContext*,
               ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
              SimpleRequest request;
              while (stream->Read(&request)) {
                if (!stream->Write(SimpleResponse())) break;
              }
              return Status();
            });
    const Status status = server_.Start(std::move(credentials));
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  std::shared_ptr<Channel> NewChannel(
      std::shared_ptr<ChannelCredentials> credentials =
          InsecureChannelCredentials()) {
    ChannelOptions options;
    options.channelz = channelz_;
    return server_.NewChannel(options, std::move(credentials));
  }

  static Status Echo(Channel& channel, StatusCode code = StatusCode::kOk) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    if (code != StatusCode::kOk) {
      request.mutable_response_status()->set_code(static_cast<int>(code));
    }
    SimpleResponse response;
    return channel.UnaryCall(&context, kEcho, request, &response);
  }

  ChannelzRegistry& registry() { return ChannelzAccess::Registry(*channelz_); }

  // The only top channel, subchannel, server and server socket, and the
  // client connection.
  ChannelzChannelData OnlyChannel() {
    auto page = registry().TopChannels(0, 0);
    EXPECT_EQ(page.entries.size(), 1u);
    EXPECT_TRUE(page.end);
    return page.entries.empty() ? ChannelzChannelData() : page.entries[0];
  }
  ChannelzChannelData OnlySubchannel() {
    const ChannelzChannelData channel = OnlyChannel();
    EXPECT_EQ(channel.subchannels.size(), 1u);
    if (channel.subchannels.empty()) return ChannelzChannelData();
    return registry().Subchannel(channel.subchannels[0].id).value();
  }
  ChannelzSocketData ClientSocket() {
    const ChannelzChannelData subchannel = OnlySubchannel();
    EXPECT_EQ(subchannel.sockets.size(), 1u);
    if (subchannel.sockets.empty()) return ChannelzSocketData();
    return registry().Socket(subchannel.sockets[0].id).value();
  }
  ChannelzServerData OnlyServer() {
    auto page = registry().Servers(0, 0);
    EXPECT_EQ(page.entries.size(), 1u);
    return page.entries.empty() ? ChannelzServerData() : page.entries[0];
  }
  std::optional<ChannelzSocketData> ServerSocket() {
    auto page = registry().ServerSockets(OnlyServer().ref.id, 0, 0);
    if (!page.has_value() || page->entries.size() != 1) return std::nullopt;
    return registry().Socket(page->entries[0].id);
  }

  std::shared_ptr<Channelz> channelz_ = std::make_shared<Channelz>();
  StubServer server_;
};

TEST_F(ChannelzTest, ChannelsServersAndConnectionsShowTheirCalls) {
  StartServer();
  std::shared_ptr<Channel> channel = NewChannel();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Echo(*channel).ok());
  ASSERT_EQ(Echo(*channel, StatusCode::kNotFound).code(),
            StatusCode::kNotFound);
  {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    std::unique_ptr<ClientReaderWriter<SimpleRequest, SimpleResponse>> stream =
        channel->BidiStreamingCall<SimpleRequest, SimpleResponse>(&context,
                                                                  kBidi);
    SimpleResponse response;
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(stream->Write(SimpleRequest()));
      ASSERT_TRUE(stream->Read(&response));
    }
    ASSERT_TRUE(stream->WritesDone());
    ASSERT_TRUE(stream->Finish().ok());
  }

  const ChannelzChannelData top = OnlyChannel();
  EXPECT_EQ(top.target, server_.target());
  EXPECT_EQ(top.state, ConnectivityState::kReady);
  EXPECT_EQ(top.calls.started, 5u);
  EXPECT_EQ(top.calls.succeeded, 4u);
  EXPECT_EQ(top.calls.failed, 1u);
  EXPECT_TRUE(Recent(top.calls.last_started));
  EXPECT_TRUE(Recent(top.created));
  EXPECT_TRUE(top.sockets.empty());

  // The subchannel counts the attempts its connection carried.
  const ChannelzChannelData subchannel = OnlySubchannel();
  EXPECT_EQ(subchannel.ref.name, absl::StrCat("127.0.0.1:", server_.port()));
  EXPECT_EQ(subchannel.state, ConnectivityState::kReady);
  EXPECT_EQ(subchannel.calls.started, 5u);
  EXPECT_EQ(subchannel.calls.succeeded, 4u);
  EXPECT_EQ(subchannel.calls.failed, 1u);
  EXPECT_TRUE(Recent(subchannel.calls.last_started));

  const ChannelzSocketData client = ClientSocket();
  EXPECT_FALSE(client.listen);
  EXPECT_EQ(client.remote.port(), server_.port());
  EXPECT_GT(client.local.port(), 0);
  EXPECT_EQ(client.remote_name, subchannel.ref.name);
  EXPECT_EQ(client.streams_started, 5u);
  // A stream that received its trailers succeeded, whatever its status.
  EXPECT_EQ(client.streams_succeeded, 5u);
  EXPECT_EQ(client.streams_failed, 0u);
  // 4 requests and 2 stream messages; 3 responses (NOT_FOUND has none)
  // and 2 stream messages.
  EXPECT_EQ(client.messages_sent, 6u);
  EXPECT_EQ(client.messages_received, 5u);
  EXPECT_TRUE(Recent(client.last_local_stream_created));
  EXPECT_EQ(client.last_remote_stream_created, absl::InfinitePast());
  EXPECT_TRUE(Recent(client.last_message_sent));
  EXPECT_TRUE(Recent(client.last_message_received));
  EXPECT_FALSE(client.tls.has_value());

  // The server counts the same calls once their streams have closed.
  ASSERT_TRUE(WaitFor([&] {
    const ChannelzServerData server = OnlyServer();
    return server.calls.succeeded + server.calls.failed == 5;
  }));
  const ChannelzServerData server = OnlyServer();
  EXPECT_EQ(server.calls.started, 5u);
  EXPECT_EQ(server.calls.succeeded, 4u);
  EXPECT_EQ(server.calls.failed, 1u);
  EXPECT_TRUE(Recent(server.calls.last_started));
  ASSERT_EQ(server.listen_sockets.size(), 1u);
  const std::optional<ChannelzSocketData> listener =
      registry().Socket(server.listen_sockets[0].id);
  ASSERT_TRUE(listener.has_value());
  EXPECT_TRUE(listener->listen);
  EXPECT_EQ(listener->local.port(), server_.port());

  const std::optional<ChannelzSocketData> accepted = ServerSocket();
  ASSERT_TRUE(accepted.has_value());
  EXPECT_EQ(accepted->local.port(), server_.port());
  EXPECT_EQ(accepted->remote.port(), client.local.port());
  EXPECT_EQ(accepted->streams_started, 5u);
  EXPECT_EQ(accepted->streams_succeeded, 5u);
  EXPECT_EQ(accepted->messages_received, 6u);
  EXPECT_EQ(accepted->messages_sent, 5u);
  EXPECT_TRUE(Recent(accepted->last_remote_stream_created));
  EXPECT_EQ(accepted->last_local_stream_created, absl::InfinitePast());
}

TEST_F(ChannelzTest, CallsFailingBeforeTheLoopCountOnTheChannelOnly) {
  StartServer();
  std::shared_ptr<Channel> channel = NewChannel();
  ASSERT_TRUE(Echo(*channel).ok());
  ClientContext context;
  context.set_deadline(absl::Now() - absl::Seconds(1));
  SimpleResponse response;
  ASSERT_EQ(channel->UnaryCall(&context, kEcho, SimpleRequest(), &response)
                .code(),
            StatusCode::kDeadlineExceeded);

  const ChannelzChannelData top = OnlyChannel();
  EXPECT_EQ(top.calls.started, 2u);
  EXPECT_EQ(top.calls.succeeded, 1u);
  EXPECT_EQ(top.calls.failed, 1u);
  EXPECT_EQ(OnlySubchannel().calls.started, 1u);
}

TEST_F(ChannelzTest, TlsConnectionsShowTheirCipherAndCertificates) {
  const auto& pki = transport::tls::testing::GetTestPki();
  SslServerCredentialsOptions server_tls;
  server_tls.pem_key_cert_pairs.push_back(
      {pki.server.private_key_pem, pki.server.cert_chain_pem});
  StartServer(ServerOptions(), SslServerCredentials(server_tls));
  SslCredentialsOptions channel_tls;
  channel_tls.pem_root_certs = pki.ca_pem;
  std::shared_ptr<Channel> channel = NewChannel(SslCredentials(channel_tls));
  ASSERT_TRUE(Echo(*channel).ok());

  const std::string server_der = DerOf(pki.server.cert_chain_pem);
  ASSERT_FALSE(server_der.empty());
  const ChannelzSocketData client = ClientSocket();
  ASSERT_TRUE(client.tls.has_value());
  EXPECT_EQ(client.tls->standard_name.rfind("TLS_", 0), 0u)
      << client.tls->standard_name;
  EXPECT_EQ(client.tls->remote_certificate, server_der);
  EXPECT_TRUE(client.tls->local_certificate.empty());

  ASSERT_TRUE(WaitFor([&] {
    std::optional<ChannelzSocketData> accepted = ServerSocket();
    return accepted.has_value() && accepted->tls.has_value();
  }));
  const ChannelzSocketData accepted = *ServerSocket();
  EXPECT_EQ(accepted.tls->standard_name, client.tls->standard_name);
  EXPECT_EQ(accepted.tls->local_certificate, server_der);
  EXPECT_TRUE(accepted.tls->remote_certificate.empty());
}

TEST_F(ChannelzTest, KeepalivePingsAreCounted) {
  ServerOptions options;
  options.keepalive_time = absl::Milliseconds(20);
  options.keepalive_permit_without_calls = true;
  StartServer(options);
  std::shared_ptr<Channel> channel = NewChannel();
  ASSERT_TRUE(Echo(*channel).ok());
  ASSERT_TRUE(WaitFor([&] {
    std::optional<ChannelzSocketData> accepted = ServerSocket();
    return accepted.has_value() && accepted->keepalives_sent >= 2;
  }));
  EXPECT_EQ(ClientSocket().keepalives_sent, 0u);
}

TEST_F(ChannelzTest, ClosedConnectionsAndDestroyedChannelsLeave) {
  StartServer();
  std::shared_ptr<Channel> channel = NewChannel();
  ASSERT_TRUE(Echo(*channel).ok());
  ASSERT_TRUE(ServerSocket().has_value());
  const int64_t socket_id = ClientSocket().ref.id;
  channel.reset();
  EXPECT_TRUE(registry().TopChannels(0, 0).entries.empty());
  EXPECT_FALSE(registry().Socket(socket_id).has_value());
  ASSERT_TRUE(WaitFor([&] {
    return registry().ServerSockets(OnlyServer().ref.id, 0, 0)->entries.empty();
  }));
  server_.Stop();
  EXPECT_TRUE(registry().Servers(0, 0).entries.empty());
}

}  // namespace
}  // namespace h2rpc
