// Call credentials between an h2rpc client and an h2rpc server over real
// sockets: access tokens and plugins on the channel and on the call, in
// order; the security level (refused over plaintext, allowed over
// LocalCredentials' unix sockets); where plugins run; how their failures,
// a deadline or a cancellation while they block, and the channel's end
// reach the call; plugin threads beyond their limit queue.
#include "rpc/call_credentials.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/credentials.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"
#include "transport/tls/testing/test_pki.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;
using transport::tls::testing::GetTestPki;

// Answers with every "authorization" and "x-cred" value the call carried,
// in order, joined by ",".
constexpr char kShowCredentials[] = "/h2rpc.test.Creds/Show";
// The same, once per message of a server stream of two.
constexpr char kStreamCredentials[] = "/h2rpc.test.Creds/Stream";

std::shared_ptr<ServerCredentials> ServerTls() {
  SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({GetTestPki().server.private_key_pem,
                                        GetTestPki().server.cert_chain_pem});
  return SslServerCredentials(options);
}

std::shared_ptr<ChannelCredentials> ClientTls() {
  SslCredentialsOptions options;
  options.pem_root_certs = GetTestPki().ca_pem;
  return SslCredentials(options);
}

std::string ThreadName() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

// Adds "x-cred: VALUE"; records where and with what it ran; blocks, when
// told to, until released.
class TestPlugin : public MetadataCredentialsPlugin {
 public:
  struct Record {
    Mutex mu;
    std::vector<std::thread::id> threads ABSL_GUARDED_BY(mu);
    std::vector<std::string> thread_names ABSL_GUARDED_BY(mu);
    absl::Time deadline ABSL_GUARDED_BY(mu);
    std::string service_url ABSL_GUARDED_BY(mu);
    std::string method_name ABSL_GUARDED_BY(mu);
    std::string authority ABSL_GUARDED_BY(mu);
    std::atomic<int> running{0};
    std::atomic<int> most_running{0};
    std::atomic<int> calls{0};
    Notification release;
  };

  TestPlugin(std::shared_ptr<Record> record, std::string value,
             bool blocking = true, bool wait_for_release = false,
             Status result = Status(), std::string key = "x-cred")
      : record_(std::move(record)),
        value_(std::move(value)),
        blocking_(blocking),
        wait_for_release_(wait_for_release),
        result_(std::move(result)),
        key_(std::move(key)) {}

  bool IsBlocking() const override { return blocking_; }

  Status GetMetadata(const AuthMetadataContext& context,
                     Metadata* metadata) override {
    const int running = ++record_->running;
    int most = record_->most_running.load();
    while (running > most &&
           !record_->most_running.compare_exchange_weak(most, running)) {
    }
    {
      MutexLock lock(&record_->mu);
      record_->threads.push_back(std::this_thread::get_id());
      record_->thread_names.push_back(ThreadName());
      record_->deadline = context.deadline;
      record_->service_url = std::string(context.service_url);
      record_->method_name = std::string(context.method_name);
      record_->authority = std::string(context.authority);
    }
    ++record_->calls;
    if (wait_for_release_) record_->release.WaitForNotification();
    --record_->running;
    metadata->Add(key_, value_);
    return result_;
  }

  std::string DebugString() const override { return "test plugin"; }

 private:
  const std::shared_ptr<Record> record_;
  const std::string value_;
  const bool blocking_;
  const bool wait_for_release_;
  const Status result_;
  const std::string key_;
};

std::shared_ptr<CallCredentials> Plugin(
    std::shared_ptr<TestPlugin::Record> record, std::string value,
    bool blocking = true, bool wait_for_release = false,
    Status result = Status(), std::string key = "x-cred") {
  return MetadataCredentialsFromPlugin(std::make_unique<TestPlugin>(
      std::move(record), std::move(value), blocking, wait_for_release,
      std::move(result), std::move(key)));
}

class CallCredentialsTest : public ::testing::Test {
 protected:
  void Serve(std::shared_ptr<ServerCredentials> credentials) {
    ServerOptions options;
    options.num_loops = 1;
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kShowCredentials,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse* response) {
              ++served_;
              response->mutable_payload()->set_body(Shown(*context));
              return Status();
            })
        .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
            kStreamCredentials,
            [this](ServerContext* context, const SimpleRequest&,
                   ServerWriter<SimpleResponse>* writer) {
              ++served_;
              SimpleResponse response;
              response.mutable_payload()->set_body(Shown(*context));
              for (int i = 0; i < 2; ++i) {
                if (!writer->Write(response)) break;
              }
              return Status();
            });
    const Status status = server_.Start(std::move(credentials));
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  std::shared_ptr<Channel> TlsChannel(
      std::shared_ptr<CallCredentials> call_credentials = nullptr) {
    ChannelOptions options;
    options.ssl_target_name_override = "localhost";
    std::shared_ptr<ChannelCredentials> credentials = ClientTls();
    if (call_credentials != nullptr) {
      credentials = CompositeChannelCredentials(credentials, call_credentials);
    }
    return server_.NewChannel(options, credentials);
  }

  static Status Call(Channel& channel, ClientContext* context,
                     std::string* shown = nullptr) {
    if (context->deadline() == absl::InfiniteFuture()) {
      context->set_timeout(kHangTimeout);
    }
    SimpleResponse response;
    const Status status = channel.UnaryCall(context, kShowCredentials,
                                            SimpleRequest(), &response);
    if (shown != nullptr) *shown = response.payload().body();
    return status;
  }

  static std::string Shown(const ServerContext& context) {
    std::vector<std::string> values;
    for (Metadata::Entry entry : context.client_metadata()) {
      if (entry.key == "authorization" || entry.key == "x-cred") {
        values.push_back(absl::StrCat(entry.key, "=", entry.value));
      }
    }
    return absl::StrJoin(values, ",");
  }

  StubServer server_;
  std::atomic<int> served_{0};
};

TEST_F(CallCredentialsTest, AnAccessTokenOnTheChannelReachesTheServer) {
  Serve(ServerTls());
  auto channel = TlsChannel(AccessTokenCredentials("token-1"));
  for (int i = 0; i < 3; ++i) {
    ClientContext context;
    std::string shown;
    const Status status = Call(*channel, &context, &shown);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(shown, "authorization=Bearer token-1");
  }
}

TEST_F(CallCredentialsTest, ChannelCredentialsComeFirstThenTheCallsInOrder) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel = TlsChannel(CompositeCallCredentials(
      AccessTokenCredentials("channel"), Plugin(record, "channel-plugin")));
  ClientContext context;
  context.set_credentials(CompositeCallCredentials(
      Plugin(record, "call-plugin", /*blocking=*/false),
      AccessTokenCredentials("call")));
  std::string shown;
  const Status status = Call(*channel, &context, &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown,
            "authorization=Bearer channel,x-cred=channel-plugin,"
            "x-cred=call-plugin,authorization=Bearer call");
  // Fixed metadata alone on the call, none on the channel.
  auto plain = TlsChannel();
  ClientContext token_only;
  token_only.set_credentials(AccessTokenCredentials("alone"));
  ASSERT_TRUE(Call(*plain, &token_only, &shown).ok());
  EXPECT_EQ(shown, "authorization=Bearer alone");
}

TEST_F(CallCredentialsTest, StreamingCallsCarryThemToo) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel = TlsChannel(AccessTokenCredentials("stream"));
  ClientContext context;
  context.set_timeout(kHangTimeout);
  context.set_credentials(Plugin(record, "streamed"));
  auto reader = channel->ServerStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kStreamCredentials, SimpleRequest());
  SimpleResponse response;
  int read = 0;
  while (reader->Read(&response)) {
    ++read;
    EXPECT_EQ(response.payload().body(),
              "authorization=Bearer stream,x-cred=streamed");
  }
  const Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(read, 2);
  EXPECT_EQ(record->calls.load(), 1);
}

TEST_F(CallCredentialsTest, PlaintextChannelsRefuseCallCredentials) {
  Serve(InsecureServerCredentials());
  auto on_channel = server_.NewChannel(
      ChannelOptions(),
      CompositeChannelCredentials(InsecureChannelCredentials(),
                                  AccessTokenCredentials("must-not-leak")));
  ClientContext context;
  Status status = Call(*on_channel, &context);
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("plaintext"));

  auto plain = server_.NewChannel();
  ClientContext per_call;
  per_call.set_credentials(AccessTokenCredentials("must-not-leak"));
  status = Call(*plain, &per_call);
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated) << status.ToString();
  // The same channel without credentials reaches the server: the refused
  // calls never did.
  ClientContext without;
  ASSERT_TRUE(Call(*plain, &without).ok());
  EXPECT_EQ(served_.load(), 1);
}

TEST_F(CallCredentialsTest, LocalCredentialsCarryThemOverAUnixSocket) {
  char directory[] = "/tmp/h2rpc_creds_test_XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  const std::string path = absl::StrCat(directory, "/socket");
  server_.ListenOn("unix:" + path);
  Serve(InsecureServerCredentials());
  auto channel = CreateChannel(
      "unix:" + path, CompositeChannelCredentials(
                          LocalCredentials(), AccessTokenCredentials("local")));
  ClientContext context;
  std::string shown;
  const Status status = Call(*channel, &context, &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "authorization=Bearer local");
  server_.Stop();
  unlink(path.c_str());
  rmdir(directory);

  // Not over TCP.
  auto tcp = CreateChannel("127.0.0.1:1", LocalCredentials());
  ClientContext over_tcp;
  const Status refused = Call(*tcp, &over_tcp);
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
  EXPECT_THAT(refused.message(), HasSubstr("unix"));
}

TEST_F(CallCredentialsTest, BlockingPluginsRunOnPluginThreadsWithTheCall) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel = TlsChannel(Plugin(record, "v"));
  ClientContext context;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  context.set_deadline(deadline);
  std::string shown;
  const Status status = Call(*channel, &context, &shown);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(shown, "x-cred=v");
  MutexLock lock(&record->mu);
  ASSERT_EQ(record->threads.size(), 1u);
  EXPECT_NE(record->threads[0], std::this_thread::get_id());
  EXPECT_NE(record->thread_names[0], "h2rpc-channel");
  EXPECT_EQ(record->service_url, "https://localhost/h2rpc.test.Creds");
  EXPECT_EQ(record->method_name, "Show");
  EXPECT_EQ(record->authority, "localhost");
  EXPECT_LT(absl::AbsDuration(record->deadline - deadline),
            absl::Milliseconds(100));
}

TEST_F(CallCredentialsTest, NonBlockingPluginsRunOnTheStartingThread) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel = TlsChannel(Plugin(record, "v", /*blocking=*/false));
  ClientContext context;
  ASSERT_TRUE(Call(*channel, &context).ok());
  MutexLock lock(&record->mu);
  ASSERT_EQ(record->threads.size(), 1u);
  EXPECT_EQ(record->threads[0], std::this_thread::get_id());
}

TEST_F(CallCredentialsTest, PluginFailuresFailTheCallBeforeItIsSent) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  struct Case {
    Status result;
    std::string key;
    StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {Status(StatusCode::kInternal, "token endpoint down"), "x-cred",
       StatusCode::kUnavailable, "test plugin) failed: token endpoint down"},
      {Status(StatusCode::kUnauthenticated, "no token"), "x-cred",
       StatusCode::kUnauthenticated, "no token"},
      {Status(StatusCode::kPermissionDenied, "not you"), "x-cred",
       StatusCode::kPermissionDenied, "not you"},
      {Status(), "grpc-status", StatusCode::kUnavailable,
       "'grpc-status' is reserved"},
      {Status(), "Bad Key", StatusCode::kUnavailable, "is invalid"},
  };
  for (bool blocking : {true, false}) {
    for (const Case& c : cases) {
      auto channel = TlsChannel(Plugin(
          record, "v", blocking, /*wait_for_release=*/false, c.result, c.key));
      ClientContext context;
      const Status status = Call(*channel, &context);
      EXPECT_EQ(status.code(), c.code) << status.ToString();
      EXPECT_THAT(status.message(), HasSubstr(c.message));
    }
  }
  EXPECT_EQ(served_.load(), 0);
  // Unusable credentials.
  auto channel = TlsChannel();
  ClientContext context;
  context.set_credentials(AccessTokenCredentials("two\nlines"));
  const Status status = Call(*channel, &context);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("0x20-0x7E"));
  EXPECT_EQ(served_.load(), 0);
}

TEST_F(CallCredentialsTest,
       ADeadlineThatPassesWhileThePluginBlocksEndsTheCall) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel =
      TlsChannel(Plugin(record, "late", true, /*wait_for_release=*/true));
  ClientContext context;
  context.set_timeout(absl::Milliseconds(200));
  const Status status = Call(*channel, &context);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("call credentials"));
  EXPECT_EQ(record->running.load(), 1);  // still blocked
  record->release.Notify();
  // The late result is dropped; the channel goes on.
  ASSERT_TRUE(WaitFor([&] { return record->running.load() == 0; }));
  ClientContext next;
  std::string shown;
  ASSERT_TRUE(Call(*channel, &next, &shown).ok());
  EXPECT_EQ(shown, "x-cred=late");
  EXPECT_EQ(served_.load(), 1);
}

// An asynchronous call whose plugin is blocked in GetMetadata.
struct BlockedCall {
  ClientContext context;
  Notification done;
  Status status;
  SimpleResponse response;
};

void StartBlocked(Channel& channel, const TestPlugin::Record& record,
                  BlockedCall* call) {
  call->context.set_timeout(kHangTimeout);
  channel.AsyncUnaryCall(&call->context, kShowCredentials, SimpleRequest(),
                         &call->response, [call](const Status& s) {
                           call->status = s;
                           call->done.Notify();
                         });
  ASSERT_TRUE(WaitFor([&] { return record.running.load() == 1; }));
}

TEST_F(CallCredentialsTest, CancellingWhileThePluginBlocksEndsTheCall) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel = TlsChannel(Plugin(record, "v", true, true));
  BlockedCall call;
  StartBlocked(*channel, *record, &call);
  call.context.TryCancel();
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(call.status.code(), StatusCode::kCancelled)
      << call.status.ToString();
  record->release.Notify();
  ASSERT_TRUE(WaitFor([&] { return record->running.load() == 0; }));
  EXPECT_EQ(served_.load(), 0);
}

TEST_F(CallCredentialsTest,
       DestroyingTheChannelWhileThePluginBlocksEndsTheCall) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel = TlsChannel(Plugin(record, "v", true, true));
  BlockedCall call;
  StartBlocked(*channel, *record, &call);
  channel.reset();
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(call.status.code(), StatusCode::kCancelled)
      << call.status.ToString();
  // The plugin finishes after its channel is gone.
  record->release.Notify();
  ASSERT_TRUE(WaitFor([&] { return record->running.load() == 0; }));
}

TEST_F(CallCredentialsTest, CallsBeyondThePluginThreadsWaitForOne) {
  Serve(ServerTls());
  auto record = std::make_shared<TestPlugin::Record>();
  auto channel = TlsChannel(Plugin(record, "v", true, true));
  constexpr int kCalls = 80;  // more than the 64 plugin threads
  std::vector<std::unique_ptr<ClientContext>> contexts;
  std::vector<SimpleResponse> responses(kCalls);
  std::atomic<int> ok{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < kCalls; ++i) {
    contexts.push_back(std::make_unique<ClientContext>());
    contexts.back()->set_timeout(kHangTimeout);
    channel->AsyncUnaryCall(contexts.back().get(), kShowCredentials,
                            SimpleRequest(), &responses[i],
                            [&](const Status& s) {
                              if (s.ok()) ++ok;
                              ++finished;
                            });
  }
  // 64 run; the others wait for them.
  ASSERT_TRUE(WaitFor([&] {
    return record->running.load() == 64 && record->calls.load() == 64;
  }));
  record->release.Notify();
  ASSERT_TRUE(WaitFor([&] { return finished.load() == kCalls; }));
  EXPECT_EQ(ok.load(), kCalls);
  EXPECT_EQ(record->most_running.load(), 64);
  EXPECT_EQ(record->calls.load(), kCalls);
}

// A token over the server's SETTINGS_MAX_HEADER_LIST_SIZE (16 KiB) is not
// sent: the call fails with RESOURCE_EXHAUSTED saying why, and the
// connection serves the next call.
TEST_F(CallCredentialsTest, ATokenOverTheServersHeaderLimitIsNotSent) {
  Serve(ServerTls());
  auto channel = TlsChannel();
  ClientContext context;
  context.set_credentials(AccessTokenCredentials(std::string(1 << 20, 't')));
  const Status status = Call(*channel, &context);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr("over the limit of 16384 that 127.0.0.1:"));
  EXPECT_THAT(status.message(), HasSubstr("SETTINGS_MAX_HEADER_LIST_SIZE"));
  EXPECT_EQ(served_.load(), 0);
  ClientContext small;
  small.set_credentials(AccessTokenCredentials("small"));
  std::string shown;
  ASSERT_TRUE(Call(*channel, &small, &shown).ok());
  EXPECT_EQ(shown, "authorization=Bearer small");
}

}  // namespace
}  // namespace h2rpc
