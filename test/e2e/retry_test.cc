// Retries by a service config's retryPolicy (gRPC's A6), against a server
// that fails attempts on purpose: attempt counts and the
// grpc-previous-rpc-attempts each attempt carries, retryable codes, server
// pushback, throttling, commit on response headers, and a streaming call
// replaying its messages. The backoff arithmetic itself is tested on its own
// (rpc/internal/retry_test.cc).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr char kFlaky[] = "/retry.Test/Flaky";
constexpr char kStreamThenFail[] = "/retry.Test/StreamThenFail";
constexpr char kCountMessages[] = "/retry.Test/CountMessages";
constexpr absl::Duration kHangTimeout = absl::Seconds(30);

// How a Flaky call fails: the request's body says, "<id> <failures> <code>
// [<pushback>]": the first <failures> attempts of call <id> fail with <code>
// (and trailer grpc-retry-pushback-ms: <pushback>), the later ones succeed.
class RetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status status;
    server_ =
        Server::Builder()
            .AddListeningPort("127.0.0.1:0", &port_)
            .RegisterUnary<SimpleRequest, SimpleResponse>(
                kFlaky,
                [this](ServerContext* context, const SimpleRequest& request,
                       SimpleResponse*) { return Flaky(context, request); })
            .RegisterServerStreaming<SimpleRequest, SimpleResponse>(
                kStreamThenFail,
                [this](ServerContext*, const SimpleRequest& request,
                       ServerWriter<SimpleResponse>* writer) {
                  Record(request.payload().body(), "");
                  writer->Write(SimpleResponse());  // sends the headers
                  return Status(StatusCode::kUnavailable, "after a message");
                })
            .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
                kCountMessages,
                [this](
                    ServerContext*,
                    ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
                  return CountMessages(stream);
                })
            .BuildAndStart(&status);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  Status Flaky(ServerContext* context, const SimpleRequest& request) {
    const std::vector<std::string> words =
        absl::StrSplit(request.payload().body(), ' ');
    const int attempt =
        Record(words[0], absl::StrCat(context->previous_rpc_attempts()));
    int failures = 0;
    int code = 0;
    if (!absl::SimpleAtoi(words[1], &failures) ||
        !absl::SimpleAtoi(words[2], &code)) {
      return Status(StatusCode::kInvalidArgument, "bad request");
    }
    if (attempt > failures) return Status();
    if (words.size() > 3) {
      context->AddTrailingMetadata("grpc-retry-pushback-ms", words[3]);
    }
    return Status(static_cast<StatusCode>(code),
                  absl::StrCat("attempt ", attempt, " fails"));
  }

  // Attempt 1 reads two messages and fails (no headers sent); later ones
  // read every message and answer how many and which.
  Status CountMessages(
      ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
    const int attempt = Record("stream", "");
    SimpleRequest in;
    std::string seen;
    int count = 0;
    while (stream->Read(&in)) {
      ++count;
      seen += in.payload().body();
      if (attempt == 1 && count == 2) {
        return Status(StatusCode::kUnavailable, "first attempt fails");
      }
    }
    SimpleResponse out;
    out.mutable_payload()->set_body(absl::StrCat(count, ":", seen));
    stream->Write(out);
    return Status();
  }

  // Counts an attempt of call `id`; returns its number (1 for the first).
  int Record(const std::string& id, const std::string& previous_attempts) {
    std::lock_guard<std::mutex> lock(mu_);
    headers_[id].push_back(previous_attempts);
    return static_cast<int>(headers_[id].size());
  }
  // The grpc-previous-rpc-attempts of each attempt of call `id`, as the
  // server saw it (0: absent).
  std::vector<std::string> Attempts(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return headers_[id];
  }

  std::shared_ptr<Channel> ChannelWith(const std::string& retry_policy,
                                       const std::string& extra = "") {
    ChannelOptions options;
    options.service_config = absl::StrCat(
        R"({"methodConfig": [{"name": [{"service": "retry.Test"}],
            "retryPolicy": )",
        retry_policy, "}]", extra, "}");
    return CreateChannel(absl::StrCat("127.0.0.1:", port_), options);
  }

  static Status Call(Channel* channel, const std::string& body) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    request.mutable_payload()->set_body(body);
    SimpleResponse response;
    return channel->UnaryCall(&context, kFlaky, request, &response);
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::map<std::string, std::vector<std::string>> headers_;  // guarded by mu_
};

constexpr char kPolicy[] = R"({"maxAttempts": 4, "initialBackoff": "0.01s",
    "maxBackoff": "0.05s", "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]})";

TEST_F(RetryTest, RetriesUntilAnAttemptSucceeds) {
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy);
  const Status status = Call(channel.get(), "a 2 14");  // 14: UNAVAILABLE
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(Attempts("a"), (std::vector<std::string>{"0", "1", "2"}));
}

TEST_F(RetryTest, StopsAtMaxAttemptsWithTheLastAttemptsStatus) {
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy);
  const Status status = Call(channel.get(), "b 100 8");  // RESOURCE_EXHAUSTED
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "attempt 4 fails");
  EXPECT_EQ(Attempts("b"), (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST_F(RetryTest, ACodeNotListedIsNotRetried) {
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy);
  const Status status = Call(channel.get(), "c 1 13");  // INTERNAL
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(Attempts("c").size(), 1u);
}

TEST_F(RetryTest, WithoutARetryPolicyNothingIsRetried) {
  ChannelOptions options;
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("127.0.0.1:", port_), options);
  EXPECT_EQ(Call(channel.get(), "d 1 14").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Attempts("d").size(), 1u);
  // Nor with retries turned off.
  options.enable_retries = false;
  options.service_config = absl::StrCat(
      R"({"methodConfig": [{"name": [{}], "retryPolicy": )", kPolicy, "}]}");
  channel = CreateChannel(absl::StrCat("127.0.0.1:", port_), options);
  EXPECT_EQ(Call(channel.get(), "d2 1 14").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Attempts("d2").size(), 1u);
}

TEST_F(RetryTest, TheServersPushbackSetsTheDelayOrForbidsTheRetry) {
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy);
  // The policy's backoff is at most 50 ms: waiting 300 ms is the pushback's.
  const absl::Time start = absl::Now();
  EXPECT_TRUE(Call(channel.get(), "e 1 14 300").ok());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  EXPECT_EQ(Attempts("e").size(), 2u);
  // A negative pushback: no retry.
  EXPECT_EQ(Call(channel.get(), "f 1 14 -1").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Attempts("f").size(), 1u);
}

TEST_F(RetryTest, ThrottlingStopsRetriesWhenHalfTheTokensAreSpent) {
  std::shared_ptr<Channel> channel = ChannelWith(
      kPolicy, R"(, "retryThrottling": {"maxTokens": 3, "tokenRatio": 0.1})");
  // 3 tokens: the first failure leaves 2 (> 1.5, retried), the second 1.
  EXPECT_EQ(Call(channel.get(), "g 100 14").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Attempts("g").size(), 2u);
  // 1 -> 0 tokens: no retry.
  EXPECT_EQ(Call(channel.get(), "h 100 14").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Attempts("h").size(), 1u);
}

// A call waiting out its backoff ends when the channel goes, and when it
// is cancelled.
TEST_F(RetryTest, ACallWaitingToRetryEndsWithTheChannelOrACancel) {
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy);
  for (const bool cancel : {false, true}) {
    SCOPED_TRACE(cancel ? "cancelled" : "channel destroyed");
    const std::string id = cancel ? "k" : "j";
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    // The server asks for a 60 s pause before the next attempt.
    request.mutable_payload()->set_body(id + " 100 14 60000");
    SimpleResponse response;
    testing::Notification done;
    Status status;
    channel->AsyncUnaryCall(&context, kFlaky, request, &response,
                            [&](const Status& s) {
                              status = s;
                              done.Notify();
                            });
    ASSERT_TRUE(testing::WaitFor([&] { return !Attempts(id).empty(); }));
    if (cancel) {
      context.TryCancel();
    } else {
      channel.reset();
    }
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
    EXPECT_EQ(Attempts(id).size(), 1u);
    if (!cancel) channel = ChannelWith(kPolicy);
  }
}

TEST_F(RetryTest, ResponseHeadersCommitTheCall) {
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  request.mutable_payload()->set_body("i");
  auto reader = channel->ServerStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kStreamThenFail, request);
  SimpleResponse response;
  EXPECT_TRUE(reader->Read(&response));
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Attempts("i").size(), 1u);
}

TEST_F(RetryTest, AStreamingCallReplaysItsMessagesOnTheRetry) {
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  auto stream = channel->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kCountMessages);
  for (const char* body : {"x", "y", "z"}) {
    SimpleRequest request;
    request.mutable_payload()->set_body(body);
    ASSERT_TRUE(stream->Write(request));
  }
  ASSERT_TRUE(stream->WritesDone());
  SimpleResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.payload().body(), "3:xyz");
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(Attempts("stream").size(), 2u);
}

}  // namespace
}  // namespace h2rpc
