// max_connection_age and max_connection_age_grace between an h2rpc Channel
// and an h2rpc Server over real sockets, through a TCP proxy
// (test/util/tcp_proxy.h) that counts the connections and the GOAWAYs: a
// continuous stream of unary calls loses no call across several age-outs,
// and a stream longer than the age plus the grace is served through the
// grace and then cancelled. Option values are short so that every test
// ends in seconds; the exact timing is checked on a fake clock in
// transport/http2/session_test.cc.

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "test/util/tcp_proxy.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::TcpProxy;
using ::testing::AnyOf;

constexpr char kEcho[] = "/h2rpc.test.Age/Echo";
constexpr char kStream[] = "/h2rpc.test.Age/Stream";

// On top of the option values, for a loaded (sanitized) machine; only ever
// waited for when something is wrong.
constexpr absl::Duration kSlack = absl::Seconds(10);
// max_connection_age is jittered by up to 10% either way.
constexpr double kJitter = 0.1;
// The proxy's and this test's clock (absl::Now) against the transport's
// monotonic clock.
constexpr absl::Duration kClockTolerance = absl::Milliseconds(5);

// A server with a unary echo and a bidirectional echo stream that records
// its cancellation.
class AgeServer {
 public:
  explicit AgeServer(const ServerOptions& options) {
    server_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kEcho,
            [](ServerContext*, const SimpleRequest& request,
               SimpleResponse* response) {
              *response->mutable_payload() = request.payload();
              return Status();
            })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
            kStream,
            [this](ServerContext* context,
                   ServerReaderWriter<StreamingOutputCallResponse,
                                      StreamingOutputCallRequest>* stream) {
              StreamingOutputCallRequest request;
              StreamingOutputCallResponse response;
              while (stream->Read(&request)) {
                *response.mutable_payload() = request.payload();
                if (!stream->Write(response)) break;
              }
              if (context->IsCancelled()) {
                cancelled_at_ = absl::Now();
                cancelled.Notify();
              }
              return Status();
            });
    status_ = server_.Start();
  }
  // Stops the server before cancelled_at_, which its handler writes, is
  // destroyed (it is declared after server_).
  ~AgeServer() { server_.Stop(); }

  bool ok() const { return server_.started(); }
  const Status& status() const { return status_; }
  int port() const { return server_.port(); }
  // Valid once `cancelled` is notified.
  absl::Time cancelled_at() const { return cancelled_at_; }

  Notification cancelled;

 private:
  StubServer server_;
  Status status_;
  absl::Time cancelled_at_;
};

// The connections (by the proxy's index) that received a GOAWAY.
std::set<int> ConnectionsToldToGoAway(const TcpProxy::Counters& counters) {
  std::set<int> connections;
  for (const TcpProxy::GoAway& goaway : counters.to_client.goaways) {
    connections.insert(goaway.connection);
  }
  return connections;
}

// Blocking unary calls on several threads, each starting its next call as
// soon as the last one ended, until Stop().
class Load {
 public:
  Load(Channel* channel, int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, channel, i] { Run(channel, i); });
    }
  }
  ~Load() { Stop(); }

  void Stop() {
    stop_ = true;
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }
  int64_t ok() const { return ok_.load(); }
  int64_t failed() const { return failed_.load(); }
  std::string first_failure() {
    MutexLock lock(&mu_);
    return first_failure_;
  }

 private:
  void Run(Channel* channel, int thread) {
    SimpleRequest request;
    SimpleResponse response;
    for (int64_t n = 0; !stop_.load(); ++n) {
      const std::string body = absl::StrCat(thread, "/", n);
      request.mutable_payload()->set_body(body);
      ClientContext context;
      context.set_timeout(kHangTimeout);  // a guard against a hang only
      const Status status =
          channel->UnaryCall(&context, kEcho, request, &response);
      if (status.ok() && response.payload().body() == body) {
        ++ok_;
        continue;
      }
      ++failed_;
      MutexLock lock(&mu_);
      if (first_failure_.empty()) {
        first_failure_ = status.ok() ? "wrong response" : status.ToString();
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ok_{0};
  std::atomic<int64_t> failed_{0};
  Mutex mu_;
  std::string first_failure_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

TEST(ConnectionAgeTest, ContinuousUnaryCallsLoseNothingAcrossAgeOuts) {
  ServerOptions options;
  options.max_connection_age = absl::Milliseconds(300);
  options.max_connection_age_grace = absl::Seconds(2);
  AgeServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target());

  constexpr int kAgeOuts = 3;
  Load load(channel.get(), /*threads=*/8);
  const bool aged_out = proxy.WaitUntil(
      [&](const TcpProxy::Counters& c) {
        return c.accepted > kAgeOuts &&
               static_cast<int>(ConnectionsToldToGoAway(c).size()) >= kAgeOuts;
      },
      (kAgeOuts + 1) * options.max_connection_age * (1 + kJitter) + kSlack);
  load.Stop();
  const TcpProxy::Counters counters = proxy.counters();
  ASSERT_TRUE(aged_out) << counters.ToString();
  EXPECT_EQ(load.failed(), 0) << load.first_failure();
  EXPECT_GT(load.ok(), 0);
  EXPECT_EQ(counters.upstream_failures, 0);
  // Every GOAWAY was graceful, and every connection's first one was the
  // first of gRPC's two (last stream id 2^31-1).
  std::set<int> seen;
  for (const TcpProxy::GoAway& goaway : counters.to_client.goaways) {
    EXPECT_EQ(goaway.error_code, 0u) << goaway.debug_data;
    if (seen.insert(goaway.connection).second) {
      EXPECT_EQ(goaway.last_stream_id, 0x7fffffffu)
          << "connection " << goaway.connection;
    }
  }
  // The client's own GOAWAYs, if it sends any when it lets a connection go,
  // are graceful too.
  for (const TcpProxy::GoAway& goaway : counters.to_server.goaways) {
    EXPECT_EQ(goaway.error_code, 0u) << goaway.debug_data;
  }
}

TEST(ConnectionAgeTest, AStreamLongerThanAgePlusGraceIsServedThenCancelled) {
  ServerOptions options;
  options.max_connection_age = absl::Milliseconds(300);
  options.max_connection_age_grace = absl::Seconds(2);
  AgeServer server(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target());

  // The connection starts after this.
  const absl::Time start = absl::Now();
  ClientContext context;
  context.set_timeout(kHangTimeout);  // a guard against a hang only
  auto stream = channel->BidiStreamingCall<StreamingOutputCallRequest,
                                           StreamingOutputCallResponse>(
      &context, kStream);
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  request.mutable_payload()->set_body("first");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));

  ASSERT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return !c.to_client.goaways.empty(); },
      options.max_connection_age * (1 + kJitter) + kSlack))
      << proxy.counters().ToString();
  const absl::Time goaway_at = absl::Now();
  // Served through the grace.
  request.mutable_payload()->set_body("during the grace");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.payload().body(), "during the grace");
  EXPECT_LT(absl::Now() - goaway_at, options.max_connection_age_grace)
      << "too slow to tell: the echo may have come after the grace";

  // Then cancelled when the grace ends.
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  const absl::Time ended_at = absl::Now();
  EXPECT_THAT(status.code(),
              AnyOf(StatusCode::kCancelled, StatusCode::kUnavailable))
      << status.ToString();
  ASSERT_TRUE(server.cancelled.WaitForNotificationWithTimeout(kHangTimeout));
  const absl::Duration least = options.max_connection_age * (1 - kJitter) +
                               options.max_connection_age_grace -
                               kClockTolerance;
  const absl::Duration most = options.max_connection_age * (1 + kJitter) +
                              options.max_connection_age_grace + kSlack;
  EXPECT_GE(ended_at - start, least);
  EXPECT_LE(ended_at - start, most);
  EXPECT_GE(server.cancelled_at() - start, least);
  EXPECT_EQ(proxy.counters().accepted, 1);
}

}  // namespace
}  // namespace h2rpc
