// An h2rpc channel speaking the Connect protocol's unary form
// (ChannelOptions::connect_unary) to an h2rpc server answering it
// (ServerOptions::web.connect): the response message and the metadata both
// ways, in binary and in JSON (ChannelOptions::connect_json), error
// statuses, the deadline, gzip both ways, the receive limit on
// the response body, streaming calls refused on such a channel, a server
// without Connect, and the client's allocations per call against a gRPC
// channel's.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
// grpc.testing.TestService's descriptors: the JSON mapping of kJsonEcho.
#include "proto/grpc/testing/test.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;

constexpr char kEcho[] = "/connect.Test/Echo";
constexpr char kBidi[] = "/connect.Test/Bidi";
// The same handler under a method the interop proto declares: its
// descriptors give the JSON mapping.
constexpr char kJsonEcho[] = "/grpc.testing.TestService/UnaryCall";

class ConnectClientTest : public ::testing::Test {
 protected:
  void Start(bool connect, bool json = false, bool http1 = false,
             int http1_max_requests_per_connection = 10000) {
    ServerOptions options;
    options.web.connect = connect;
    options.web.http1_max_requests_per_connection =
        http1_max_requests_per_connection;
    const auto echo = [this](ServerContext* context,
                             const SimpleRequest& request,
                             SimpleResponse* response) -> Status {
      last_request_compression_ = context->client_compression_algorithm();
      {
        MutexLock lock(&peers_mu_);
        peers_.insert(context->peer());
      }
      if (request.has_response_status()) {
        return Status(static_cast<StatusCode>(request.response_status().code()),
                      request.response_status().message());
      }
      if (request.fill_username()) {
        // Waits for the deadline to cancel the call.
        return WaitFor([&] { return context->IsCancelled(); })
                   ? Status()
                   : Status(StatusCode::kInternal, "never cancelled");
      }
      if (request.response_compressed().value()) {
        context->set_compression_algorithm(CompressionAlgorithm::kGzip);
      }
      const auto echoed = context->client_metadata().Get("x-echo");
      context->AddInitialMetadata("x-initial", echoed.value_or("none"));
      context->AddTrailingMetadata("x-trailing", "2");
      context->AddTrailingMetadata("x-id-bin", std::string("\x01\x02", 2));
      *response->mutable_payload() = request.payload();
      return Status();
    };
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, echo)
        .RegisterUnary<SimpleRequest, SimpleResponse>(kJsonEcho, echo)
        .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
            kBidi, [](ServerContext*,
                      ServerReaderWriter<SimpleResponse, SimpleRequest>*) {
              return Status();
            });
    ASSERT_TRUE(server_.Start().ok());
    ChannelOptions channel_options;
    channel_options.connect_unary = true;
    channel_options.connect_json = json;
    channel_options.connect_http1 = http1;
    channel_ = server_.NewChannel(channel_options);
  }

  Status Echo(ClientContext* context, const SimpleRequest& request,
              SimpleResponse* response) {
    if (context->deadline() == absl::InfiniteFuture()) {
      context->set_timeout(testing::kHangTimeout);
    }
    return channel_->UnaryCall(context, kEcho, request, response);
  }

  // The client addresses calls came from: one per connection. Declared
  // before the server, whose handlers write it until it is gone.
  Mutex peers_mu_;
  std::set<std::string> peers_ ABSL_GUARDED_BY(peers_mu_);
  StubServer server_;
  std::shared_ptr<Channel> channel_;
  std::atomic<CompressionAlgorithm> last_request_compression_{
      CompressionAlgorithm::kIdentity};
};

TEST_F(ConnectClientTest, UnaryCallCarriesTheMessageAndTheMetadata) {
  Start(true);
  ClientContext context;
  context.AddMetadata("x-echo", "hi");
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  SimpleResponse response;
  ASSERT_TRUE(Echo(&context, request, &response).ok());
  EXPECT_EQ(response.payload().body(), "hello");
  EXPECT_EQ(context.GetServerInitialMetadata().Get("x-initial"), "hi");
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-trailing"), "2");
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-id-bin"),
            std::string("\x01\x02", 2));
  // The trailing metadata are not also initial ones.
  EXPECT_EQ(context.GetServerInitialMetadata().Get("trailer-x-trailing"),
            absl::nullopt);

  // An empty request message is an empty body.
  ClientContext empty_context;
  ASSERT_TRUE(Echo(&empty_context, SimpleRequest(), &response).ok());
  EXPECT_EQ(response.payload().body(), "");
}

TEST_F(ConnectClientTest, JsonCallsCarryTheMessageTheMetadataAndErrors) {
  Start(true, /*json=*/true);
  ClientContext context;
  context.AddMetadata("x-echo", "json");
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string("\x00\xff bytes", 8));
  SimpleResponse response;
  ASSERT_TRUE(
      channel_->UnaryCall(&context, kJsonEcho, request, &response).ok());
  EXPECT_EQ(response.payload().body(), std::string("\x00\xff bytes", 8));
  EXPECT_EQ(context.GetServerInitialMetadata().Get("x-initial"), "json");
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-trailing"), "2");

  ClientContext failing;
  request.mutable_response_status()->set_code(
      static_cast<int32_t>(StatusCode::kNotFound));
  request.mutable_response_status()->set_message("gone");
  const Status status =
      channel_->UnaryCall(&failing, kJsonEcho, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "gone");

  // A method without descriptors in the program has no JSON form.
  ClientContext unknown;
  const Status no_json = Echo(&unknown, SimpleRequest(), &response);
  EXPECT_EQ(no_json.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(no_json.message()), ::testing::HasSubstr("JSON"));
}

TEST_F(ConnectClientTest, CallsGoOverHttp1OneAtATime) {
  Start(true, /*json=*/false, /*http1=*/true);
  ClientContext context;
  context.AddMetadata("x-echo", "http/1.1");
  SimpleRequest request;
  request.mutable_payload()->set_body("over HTTP/1.1");
  SimpleResponse response;
  ASSERT_TRUE(Echo(&context, request, &response).ok());
  EXPECT_EQ(response.payload().body(), "over HTTP/1.1");
  EXPECT_EQ(context.GetServerInitialMetadata().Get("x-initial"), "http/1.1");
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-trailing"), "2");

  // Calls from several threads at once take turns on the connection.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        ClientContext each;
        SimpleRequest numbered;
        numbered.mutable_payload()->set_body(absl::StrCat(t, "/", i));
        SimpleResponse echoed;
        if (Echo(&each, numbered, &echoed).ok() &&
            echoed.payload().body() == absl::StrCat(t, "/", i)) {
          ++ok;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 40);

  ClientContext failing;
  request.mutable_response_status()->set_code(
      static_cast<int32_t>(StatusCode::kNotFound));
  request.mutable_response_status()->set_message("gone");
  const Status status = Echo(&failing, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "gone");
}

TEST_F(ConnectClientTest, AServerClosingAfterEachAnswerGetsAConnectionPerCall) {
  // HTTP/1.1 only: the server's last answer on a connection says
  // Connection: close, and the next call goes to a new connection.
  Start(true, /*json=*/false, /*http1=*/true,
        /*http1_max_requests_per_connection=*/1);
  for (int i = 0; i < 3; ++i) {
    ClientContext context;
    SimpleRequest request;
    request.mutable_payload()->set_body(absl::StrCat(i));
    SimpleResponse response;
    ASSERT_TRUE(Echo(&context, request, &response).ok());
    EXPECT_EQ(response.payload().body(), absl::StrCat(i));
  }
  MutexLock lock(&peers_mu_);
  EXPECT_EQ(peers_.size(), 3u);
}

TEST_F(ConnectClientTest, Http1OverTls) {
  ServerOptions options;
  options.web.connect = true;
  server_.builder()
      .SetOptions(options)
      .RegisterUnary<SimpleRequest, SimpleResponse>(
          kEcho, [](ServerContext*, const SimpleRequest& request,
                    SimpleResponse* response) {
            *response->mutable_payload() = request.payload();
            return Status();
          });
  SslServerCredentialsOptions server_tls;
  server_tls.pem_key_cert_pairs.push_back(
      {transport::tls::testing::GetTestPki().server.private_key_pem,
       transport::tls::testing::GetTestPki().server.cert_chain_pem});
  ASSERT_TRUE(server_.Start(SslServerCredentials(server_tls)).ok());
  SslCredentialsOptions client_tls;
  client_tls.pem_root_certs = transport::tls::testing::GetTestPki().ca_pem;
  ChannelOptions channel_options;
  channel_options.connect_unary = true;
  channel_options.connect_http1 = true;
  channel_options.ssl_target_name_override = "localhost";
  channel_ = server_.NewChannel(channel_options, SslCredentials(client_tls));
  ClientContext context;
  SimpleRequest request;
  request.mutable_payload()->set_body("tls");
  SimpleResponse response;
  const Status status = Echo(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "tls");
}

TEST_F(ConnectClientTest, JsonOverHttp1) {
  Start(true, /*json=*/true, /*http1=*/true);
  ClientContext context;
  SimpleRequest request;
  request.mutable_payload()->set_body("json over HTTP/1.1");
  SimpleResponse response;
  ASSERT_TRUE(
      channel_->UnaryCall(&context, kJsonEcho, request, &response).ok());
  EXPECT_EQ(response.payload().body(), "json over HTTP/1.1");
}

TEST_F(ConnectClientTest, TheDeadlineEndsACallOverHttp1AndTheNextOneWorks) {
  Start(true, /*json=*/false, /*http1=*/true);
  ClientContext context;
  context.set_timeout(absl::Milliseconds(200));
  SimpleRequest request;
  request.set_fill_username(true);  // the handler waits for cancellation
  SimpleResponse response;
  EXPECT_EQ(Echo(&context, request, &response).code(),
            StatusCode::kDeadlineExceeded);
  // The cancelled call ended its connection; the next call gets another.
  ClientContext next;
  request.set_fill_username(false);
  request.mutable_payload()->set_body("after");
  ASSERT_TRUE(Echo(&next, request, &response).ok());
  EXPECT_EQ(response.payload().body(), "after");
}

TEST_F(ConnectClientTest, ErrorsKeepTheirCodeAndMessage) {
  Start(true);
  for (const StatusCode code :
       {StatusCode::kNotFound, StatusCode::kInvalidArgument,
        StatusCode::kUnavailable, StatusCode::kPermissionDenied}) {
    ClientContext context;
    SimpleRequest request;
    request.mutable_response_status()->set_code(static_cast<int32_t>(code));
    request.mutable_response_status()->set_message("no \"such\" thing");
    SimpleResponse response;
    const Status status = Echo(&context, request, &response);
    EXPECT_EQ(status.code(), code);
    EXPECT_EQ(status.message(), "no \"such\" thing");
  }
}

TEST_F(ConnectClientTest, TheDeadlineTravelsAndEndsTheCall) {
  Start(true);
  ClientContext context;
  context.set_timeout(absl::Milliseconds(200));
  SimpleRequest request;
  request.set_fill_username(true);  // waits for cancellation
  SimpleResponse response;
  EXPECT_EQ(Echo(&context, request, &response).code(),
            StatusCode::kDeadlineExceeded);
}

TEST_F(ConnectClientTest, GzipBothWays) {
  Start(true);
  ClientContext context;
  context.set_compression_algorithm(CompressionAlgorithm::kGzip);
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(4096, 'z'));
  request.mutable_response_compressed()->set_value(true);
  SimpleResponse response;
  ASSERT_TRUE(Echo(&context, request, &response).ok());
  EXPECT_EQ(response.payload().body(), std::string(4096, 'z'));
  EXPECT_EQ(last_request_compression_.load(), CompressionAlgorithm::kGzip);
}

TEST_F(ConnectClientTest, AResponseOverTheReceiveLimitIsResourceExhausted) {
  Start(true);
  ChannelOptions options;
  options.connect_unary = true;
  options.connection.max_receive_message_size = 1000;
  const std::shared_ptr<Channel> limited = server_.NewChannel(options);
  ClientContext context;
  context.set_timeout(testing::kHangTimeout);
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(2000, 'x'));
  SimpleResponse response;
  const Status status = limited->UnaryCall(&context, kEcho, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("max_receive_message_size"),
            std::string::npos)
      << status.message();
}

TEST_F(ConnectClientTest, StreamingCallsAreRefusedOnAConnectChannel) {
  Start(true);
  ClientContext context;
  context.set_timeout(testing::kHangTimeout);
  auto stream = channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kBidi);
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("connect_unary"), std::string::npos)
      << status.message();
}

TEST_F(ConnectClientTest, AServerWithoutConnectIsAnError) {
  Start(false);
  ClientContext context;
  SimpleResponse response;
  const Status status = Echo(&context, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kUnknown);
  EXPECT_NE(status.message().find("415"), std::string::npos)
      << status.message();
}

// A Connect call allocates on the client what a gRPC call does.
TEST_F(ConnectClientTest, AllocationsPerCallAreGrpcs) {
  Start(true);
  const std::shared_ptr<Channel> grpc = server_.NewChannel(ChannelOptions());
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(1024, 'x'));
  const auto client_allocations_per_call = [&](Channel* channel) {
    constexpr int kCalls = 200;
    SimpleResponse response;
    for (int i = 0; i < 50; ++i) {
      ClientContext context;
      EXPECT_TRUE(channel->UnaryCall(&context, kEcho, request, &response).ok());
    }
    const int64_t before =
        testing::AllocationsByRole(testing::ThreadRole::kClient).allocations;
    for (int i = 0; i < kCalls; ++i) {
      ClientContext context;
      EXPECT_TRUE(channel->UnaryCall(&context, kEcho, request, &response).ok());
    }
    const int64_t after =
        testing::AllocationsByRole(testing::ThreadRole::kClient).allocations;
    return static_cast<double>(after - before) / kCalls;
  };
  const double grpc_allocations = client_allocations_per_call(grpc.get());
  const double connect_allocations =
      client_allocations_per_call(channel_.get());
  std::printf("client allocations per call: gRPC %.2f, Connect %.2f\n",
              grpc_allocations, connect_allocations);
  EXPECT_LE(connect_allocations, grpc_allocations);
}

}  // namespace
}  // namespace h2rpc
