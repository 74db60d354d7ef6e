// A server's AuthMetadataProcessor and AuthContext, with an h2rpc client
// over real sockets: accepting and refusing unary and streaming calls
// (inline on the loop, or blocking on a worker thread), the properties and
// identity the handler sees (TLS, mutual TLS, plaintext), the response
// metadata, and the bounds on a processor that does not decide: its
// timeout, the call's deadline, the client's cancellation.
#include <pthread.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/auth_context.h"
#include "rpc/call_credentials.h"
#include "rpc/channel.h"
#include "rpc/credentials.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::PercentDecode;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using transport::tls::testing::GetTestPki;

// Answers with the caller's identity and its "role" property.
constexpr char kWho[] = "/h2rpc.test.Auth/Who";
// The same, twice, on a server stream.
constexpr char kWhoStream[] = "/h2rpc.test.Auth/WhoStream";

std::string ThreadName() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

// Accepts "Bearer alice-token" as alice (role reader), refuses other tokens
// with PERMISSION_DENIED and none with UNAUTHENTICATED. Its first
// `calls_that_wait` calls block until released.
class TokenProcessor : public AuthMetadataProcessor {
 public:
  static constexpr int kEveryCall = 1 << 30;

  explicit TokenProcessor(bool blocking, int calls_that_wait = 0)
      : blocking_(blocking), calls_that_wait_(calls_that_wait) {}

  bool IsBlocking() const override { return blocking_; }

  Status Process(absl::string_view method, const Metadata& metadata,
                 AuthContext* context, Metadata* response_metadata) override {
    ++running;
    {
      MutexLock lock(&mu);
      threads.push_back(ThreadName());
      methods.push_back(std::string(method));
    }
    if (calls_that_wait_.fetch_sub(1) > 0) release.WaitForNotification();
    --running;
    ++returned;
    auto token = metadata.Get("authorization");
    if (!token.has_value()) {
      response_metadata->Add("x-auth", "missing");
      return Status(StatusCode::kUnauthenticated, "no token");
    }
    if (*token != "Bearer alice-token") {
      response_metadata->Add("x-auth", "denied");
      return Status(StatusCode::kPermissionDenied,
                    absl::StrCat("unknown token ", *token));
    }
    context->AddProperty("user", "alice");
    context->AddProperty("role", "reader");
    EXPECT_TRUE(context->SetPeerIdentityPropertyName("user"));
    response_metadata->Add("x-auth", "ok");
    return Status();
  }

  Mutex mu;
  std::vector<std::string> threads ABSL_GUARDED_BY(mu);
  std::vector<std::string> methods ABSL_GUARDED_BY(mu);
  std::atomic<int> running{0};
  std::atomic<int> returned{0};
  Notification release;

 private:
  const bool blocking_;
  std::atomic<int> calls_that_wait_;
};

std::string Describe(const AuthContext& context) {
  std::vector<std::string> identity;
  for (absl::string_view value : context.GetPeerIdentity()) {
    identity.push_back(std::string(value));
  }
  std::vector<std::string> roles;
  for (absl::string_view value : context.FindPropertyValues("role")) {
    roles.push_back(std::string(value));
  }
  return absl::StrCat(context.GetPeerIdentityPropertyName(), "=",
                      absl::StrJoin(identity, "+"),
                      " role=", absl::StrJoin(roles, "+"));
}

class AuthProcessorTest : public ::testing::Test {
 protected:
  void Serve(std::shared_ptr<AuthMetadataProcessor> processor,
             absl::Duration timeout = absl::Seconds(10),
             std::shared_ptr<ServerCredentials> credentials = nullptr) {
    ServerOptions options;
    options.num_loops = 1;
    options.auth_metadata_processor = std::move(processor);
    options.auth_processor_timeout = timeout;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kWho,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse* response) {
              ++handled_;
              response->mutable_payload()->set_body(
                  Describe(context->auth_context()));
              return Status();
            })
        .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
            kWhoStream, [this](ServerContext* context, const SimpleRequest&,
                               ServerWriter<SimpleResponse>* writer) {
              ++handled_;
              SimpleResponse response;
              response.mutable_payload()->set_body(
                  Describe(context->auth_context()));
              for (int i = 0; i < 2; ++i) {
                if (!writer->Write(response)) break;
              }
              return Status();
            });
    if (credentials == nullptr) {
      SslServerCredentialsOptions tls;
      tls.pem_key_cert_pairs.push_back({GetTestPki().server.private_key_pem,
                                        GetTestPki().server.cert_chain_pem});
      tls.pem_root_certs = GetTestPki().ca_pem;
      tls.client_certificate_request =
          SslClientCertificateRequest::kRequestAndVerify;
      credentials = SslServerCredentials(tls);
    }
    const Status status = server_.Start(std::move(credentials));
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  std::shared_ptr<Channel> TlsChannel(bool client_certificate = false) {
    SslCredentialsOptions tls;
    tls.pem_root_certs = GetTestPki().ca_pem;
    if (client_certificate) {
      tls.pem_private_key = GetTestPki().client.private_key_pem;
      tls.pem_cert_chain = GetTestPki().client.cert_chain_pem;
    }
    ChannelOptions options;
    options.ssl_target_name_override = "localhost";
    return server_.NewChannel(options, SslCredentials(tls));
  }

  static Status Call(Channel& channel, const char* token,
                     std::string* shown = nullptr,
                     ClientContext* context = nullptr) {
    ClientContext own;
    if (context == nullptr) {
      context = &own;
      context->set_timeout(kHangTimeout);
    }
    if (token != nullptr)
      context->set_credentials(AccessTokenCredentials(token));
    SimpleResponse response;
    const Status status =
        channel.UnaryCall(context, kWho, SimpleRequest(), &response);
    if (shown != nullptr) *shown = response.payload().body();
    return status;
  }

  StubServer server_;
  std::atomic<int> handled_{0};
};

TEST_F(AuthProcessorTest, AcceptsAndRefusesOnTheLoopWhenItDoesNotBlock) {
  auto processor = std::make_shared<TokenProcessor>(/*blocking=*/false);
  Serve(processor);
  auto channel = TlsChannel();
  ClientContext accepted;
  accepted.set_timeout(kHangTimeout);
  std::string shown;
  Status status = Call(*channel, "alice-token", &shown, &accepted);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "user=alice role=reader");
  EXPECT_EQ(accepted.GetServerInitialMetadata().Get("x-auth"), "ok");

  ClientContext denied;
  denied.set_timeout(kHangTimeout);
  status = Call(*channel, "mallory-token", nullptr, &denied);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << status.ToString();
  EXPECT_EQ(status.message(), "unknown token Bearer mallory-token");
  EXPECT_EQ(denied.GetServerTrailingMetadata().Get("x-auth"), "denied");

  status = Call(*channel, nullptr);
  EXPECT_EQ(status, Status(StatusCode::kUnauthenticated, "no token"));
  EXPECT_EQ(handled_.load(), 1);
  MutexLock lock(&processor->mu);
  EXPECT_THAT(processor->threads,
              ElementsAre("h2rpc-server", "h2rpc-server", "h2rpc-server"));
  EXPECT_THAT(processor->methods, ElementsAre(kWho, kWho, kWho));
}

TEST_F(AuthProcessorTest, ABlockingProcessorRunsOnAWorkerThread) {
  auto processor = std::make_shared<TokenProcessor>(/*blocking=*/true);
  Serve(processor);
  auto channel = TlsChannel();
  std::string shown;
  Status status = Call(*channel, "alice-token", &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "user=alice role=reader");
  status = Call(*channel, "bad");
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << status.ToString();
  EXPECT_EQ(handled_.load(), 1);
  MutexLock lock(&processor->mu);
  EXPECT_THAT(processor->threads, ElementsAre("h2rpc-worker", "h2rpc-worker"));
}

class StreamingAuthTest : public AuthProcessorTest,
                          public ::testing::WithParamInterface<bool> {};

// The parameter: whether the processor blocks.
TEST_P(StreamingAuthTest, StreamingCallsAreDecidedBeforeTheirHandler) {
  {
    Serve(std::make_shared<TokenProcessor>(GetParam()));
    auto channel = TlsChannel();
    ClientContext context;
    context.set_timeout(kHangTimeout);
    context.set_credentials(AccessTokenCredentials("alice-token"));
    auto reader = channel->ServerStreamingCall<SimpleRequest, SimpleResponse>(
        &context, kWhoStream, SimpleRequest());
    SimpleResponse response;
    int read = 0;
    while (reader->Read(&response)) {
      ++read;
      EXPECT_EQ(response.payload().body(), "user=alice role=reader");
    }
    Status status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(read, 2);

    ClientContext refused;
    refused.set_timeout(kHangTimeout);
    auto none = channel->ServerStreamingCall<SimpleRequest, SimpleResponse>(
        &refused, kWhoStream, SimpleRequest());
    EXPECT_FALSE(none->Read(&response));
    status = none->Finish();
    EXPECT_EQ(status, Status(StatusCode::kUnauthenticated, "no token"));
    EXPECT_EQ(refused.GetServerTrailingMetadata().Get("x-auth"), "missing");
    EXPECT_EQ(handled_.load(), 1);
  }
}

INSTANTIATE_TEST_SUITE_P(InlineAndBlocking, StreamingAuthTest,
                         ::testing::Bool());

// The transport's properties, with no processor adding any.
class NoteTransport : public AuthMetadataProcessor {
 public:
  bool IsBlocking() const override { return false; }
  Status Process(absl::string_view, const Metadata&, AuthContext* context,
                 Metadata*) override {
    MutexLock lock(&mu);
    properties = context->properties();
    authenticated = context->IsPeerAuthenticated();
    return Status();
  }
  Mutex mu;
  std::vector<std::pair<std::string, std::string>> properties
      ABSL_GUARDED_BY(mu);
  bool authenticated ABSL_GUARDED_BY(mu) = false;
};

TEST_F(AuthProcessorTest, TheTransportsPropertiesNameAVerifiedClient) {
  auto processor = std::make_shared<NoteTransport>();
  Serve(processor);
  std::string shown;
  Status status =
      Call(*TlsChannel(/*client_certificate=*/true), nullptr, &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown,
            "x509_subject_alternative_name=client.test.h2rpc.example+"
            "spiffe://h2rpc.test/client role=");
  {
    MutexLock lock(&processor->mu);
    EXPECT_TRUE(processor->authenticated);
    using P = std::pair<std::string, std::string>;
    EXPECT_THAT(
        processor->properties,
        ElementsAre(
            P("transport_security_type", "ssl"),
            P("security_level", "TSI_PRIVACY_AND_INTEGRITY"),
            P("ssl_session_reused", "false"),
            P("x509_subject", "CN=h2rpc test client"),
            P("x509_common_name", "h2rpc test client"),
            P("x509_subject_alternative_name", "client.test.h2rpc.example"),
            P("x509_subject_alternative_name", "spiffe://h2rpc.test/client"),
            P("peer_dns", "client.test.h2rpc.example"),
            P("peer_uri", "spiffe://h2rpc.test/client")));
  }
  // TLS without a client certificate: no identity.
  status = Call(*TlsChannel(), nullptr, &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "= role=");
}

TEST_F(AuthProcessorTest, PlaintextCallsAreInsecureAndUnauthenticated) {
  Serve(std::make_shared<NoteTransport>(), absl::Seconds(10),
        InsecureServerCredentials());
  std::string shown;
  ASSERT_TRUE(Call(*server_.NewChannel(), nullptr, &shown).ok());
  EXPECT_EQ(shown, "= role=");
}

TEST_F(AuthProcessorTest, AProcessorThatDoesNotDecideIsBoundedByItsTimeout) {
  auto processor =
      std::make_shared<TokenProcessor>(true, TokenProcessor::kEveryCall);
  Serve(processor, absl::Milliseconds(200));
  auto channel = TlsChannel();
  Status status = Call(*channel, "alice-token");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("auth_processor_timeout"));
  EXPECT_EQ(processor->running.load(), 1);  // still deciding
  // The call's deadline, if sooner, ends it first.
  ClientContext short_deadline;
  short_deadline.set_timeout(absl::Milliseconds(50));
  status = Call(*channel, "alice-token", nullptr, &short_deadline);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  processor->release.Notify();
  ASSERT_TRUE(WaitFor([&] { return processor->returned.load() == 2; }));
  // The late decisions were dropped; the server goes on.
  std::string shown;
  status = Call(*channel, "alice-token", &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "user=alice role=reader");
  EXPECT_EQ(handled_.load(), 1);
}

TEST_F(AuthProcessorTest, AClientThatCancelsWhileTheProcessorDecides) {
  auto processor =
      std::make_shared<TokenProcessor>(true, /*calls_that_wait=*/1);
  Serve(processor);
  auto channel = TlsChannel();
  ClientContext context;
  context.set_timeout(kHangTimeout);
  context.set_credentials(AccessTokenCredentials("alice-token"));
  Notification done;
  Status status;
  SimpleResponse response;
  channel->AsyncUnaryCall(&context, kWho, SimpleRequest(), &response,
                          [&](const Status& s) {
                            status = s;
                            done.Notify();
                          });
  ASSERT_TRUE(WaitFor([&] { return processor->running.load() == 1; }));
  context.TryCancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  // A call after it on the same connection: once it is answered, the
  // server has read the cancelled call's RST_STREAM, sent before it.
  std::string shown;
  ASSERT_TRUE(Call(*channel, "alice-token", &shown).ok());
  processor->release.Notify();
  ASSERT_TRUE(WaitFor([&] { return processor->returned.load() == 2; }));
  EXPECT_EQ(handled_.load(), 1);  // the cancelled call never reached it
}

// Oversized tokens never reach the processor: one over the header list
// limit (16 KiB) gets RESOURCE_EXHAUSTED and the connection goes on; a
// 1 MiB one, a single field past what the HPACK decoder takes (64 KiB),
// ends the connection with GOAWAY(COMPRESSION_ERROR), and the server
// serves the next one.
TEST_F(AuthProcessorTest, OversizedTokensNeverReachTheProcessor) {
  auto processor = std::make_shared<TokenProcessor>(/*blocking=*/false);
  Serve(processor, absl::Seconds(10), InsecureServerCredentials());
  auto request_with_token = [&](size_t bytes) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(kWho, server_.port());
    request.headers.emplace_back("authorization",
                                 "Bearer " + std::string(bytes, 't'));
    request.body = GrpcFrame("");
    return request;
  };
  std::string error;
  auto client = RawH2Client::Connect(server_.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  RawResponse response =
      client->Call(request_with_token(40 << 10), kHangTimeout);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_EQ(response.Trailer("grpc-status"), "8") << response.DebugString();
  EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
              HasSubstr("exceeds the limit of 16384 (max_header_list_size)"));
  EXPECT_TRUE(client->Ping()) << client->error();

  response = client->Call(request_with_token(1 << 20), kHangTimeout);
  ASSERT_FALSE(response.timed_out) << response.DebugString();
  EXPECT_TRUE(response.goaway_received) << response.DebugString();
  EXPECT_EQ(response.goaway_error_code, 9u)  // COMPRESSION_ERROR
      << response.DebugString();
  EXPECT_TRUE(response.connection_closed) << response.DebugString();
  EXPECT_EQ(processor->returned.load(), 0);

  client = RawH2Client::Connect(server_.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  RawRequest fine = request_with_token(0);
  fine.headers.back().second = "Bearer alice-token";
  response = client->Call(fine, kHangTimeout);
  EXPECT_EQ(response.Trailer("grpc-status"), "0") << response.DebugString();
  EXPECT_EQ(processor->returned.load(), 1);
}

TEST_F(AuthProcessorTest, ATimeoutOfZeroIsRefused) {
  ServerOptions options;
  options.auth_processor_timeout = absl::ZeroDuration();
  server_.builder().SetOptions(options);
  const Status status = server_.Start();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("auth_processor_timeout"));
}

}  // namespace
}  // namespace h2rpc
