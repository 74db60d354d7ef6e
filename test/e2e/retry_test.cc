// Retries by a service config's retryPolicy (gRPC's A6), against a server
// that fails attempts on purpose: attempt counts and the
// grpc-previous-rpc-attempts each attempt carries, retryable codes, server
// pushback, throttling, commit on response headers, a streaming call
// replaying its messages, a local cancel that is never retried, channel
// destruction ending calls in every state, and the channel's retry buffer
// given back by every call. The backoff arithmetic itself is tested on its
// own (rpc/internal/client/retry_test.cc).
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/loopback_socket.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::StubServer;

constexpr char kFlaky[] = "/retry.Test/Flaky";
constexpr char kStreamThenFail[] = "/retry.Test/StreamThenFail";
constexpr char kCountMessages[] = "/retry.Test/CountMessages";
// Record the attempt (the request's body names the call), then wait until
// the client cancels it.
constexpr char kHang[] = "/retry.Test/Hang";
constexpr char kHangStream[] = "/retry.Test/HangStream";
constexpr absl::Duration kHangTimeout = absl::Seconds(30);

// How a Flaky call fails: the request's body says, "<id> <failures> <code>
// [<pushback>]": the first <failures> attempts of call <id> fail with <code>
// (and trailer grpc-retry-pushback-ms: <pushback>), the later ones succeed.
class RetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.builder()
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kFlaky, [this](ServerContext* context, const SimpleRequest& request,
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
            [this](ServerContext*,
                   ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
              return CountMessages(stream);
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kHang,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse*) {
              Record(request.payload().body(), "");
              return WaitUntilCancelled(context);
            })
        .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
            kHangStream,
            [this](ServerContext* context,
                   ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
              SimpleRequest in;
              if (stream->Read(&in)) Record(in.payload().body(), "");
              return WaitUntilCancelled(context);
            });
    const Status status = server_.Start();
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

  static Status WaitUntilCancelled(ServerContext* context) {
    if (!testing::WaitFor([context] { return context->IsCancelled(); })) {
      return Status(StatusCode::kInternal, "never cancelled");
    }
    return Status(StatusCode::kCancelled, "cancelled by the client");
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
                                       const std::string& extra = "",
                                       ChannelOptions options = {}) {
    return ChannelTo(server_.target(), retry_policy, extra, std::move(options));
  }
  static std::shared_ptr<Channel> ChannelTo(const std::string& target,
                                            const std::string& retry_policy,
                                            const std::string& extra = "",
                                            ChannelOptions options = {}) {
    options.service_config = absl::StrCat(
        R"({"methodConfig": [{"name": [{"service": "retry.Test"}],
            "retryPolicy": )",
        retry_policy, "}]", extra, "}");
    return CreateChannel(target, options);
  }

  static Status Call(Channel* channel, const std::string& body) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    request.mutable_payload()->set_body(body);
    SimpleResponse response;
    return channel->UnaryCall(&context, kFlaky, request, &response);
  }

  StubServer server_;
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
  std::shared_ptr<Channel> channel = server_.NewChannel(options);
  EXPECT_EQ(Call(channel.get(), "d 1 14").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Attempts("d").size(), 1u);
  // Nor with retries turned off.
  options.enable_retries = false;
  options.service_config = absl::StrCat(
      R"({"methodConfig": [{"name": [{}], "retryPolicy": )", kPolicy, "}]}");
  channel = server_.NewChannel(options);
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

// CANCELLED is retryable (A6 allows it): a cancel by the server is retried,
// the client's own never.
constexpr char kRetryCancelled[] = R"({"maxAttempts": 4,
    "initialBackoff": "0.01s", "maxBackoff": "0.05s", "backoffMultiplier": 2,
    "retryableStatusCodes": ["CANCELLED", "UNAVAILABLE"]})";

// An asynchronous unary call that counts how often its `done` runs.
struct AsyncCall {
  void Start(Channel* channel, const char* method, const std::string& body,
             absl::Duration timeout = kHangTimeout) {
    context.set_timeout(timeout);
    request.mutable_payload()->set_body(body);
    channel->AsyncUnaryCall(&context, method, request, &response,
                            [this](const Status& s) {
                              if (done_runs.fetch_add(1) == 0) status = s;
                              done.Notify();
                            });
  }

  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
  testing::Notification done;
  std::atomic<int> done_runs{0};
  Status status;  // the first run's, written before `done` is notified
};

// A bidi streaming call that writes one message (naming the call) and
// counts how often OnDone runs.
class OneWriteStream : public ClientBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  void Start(Channel* channel, const char* method, const std::string& body) {
    context.set_timeout(kHangTimeout);
    request_.mutable_payload()->set_body(body);
    channel->AsyncBidiStreamingCall(&context, method, this);
    StartWrite(&request_);
    StartCall();
  }
  void OnDone(const Status& s) override {
    if (done_runs.fetch_add(1) == 0) status = s;
    done.Notify();
  }

  ClientContext context;
  testing::Notification done;
  std::atomic<int> done_runs{0};
  Status status;  // the first run's, written before `done` is notified

 private:
  SimpleRequest request_;
};

TEST_F(RetryTest, TheClientsOwnCancelIsNeverRetried) {
  AsyncCall call;  // outlives the channel
  std::shared_ptr<Channel> channel = ChannelWith(kRetryCancelled);
  call.Start(channel.get(), kHang, "cancel-unary", absl::Seconds(10));
  ASSERT_TRUE(
      testing::WaitFor([&] { return !Attempts("cancel-unary").empty(); }));
  call.context.TryCancel();
  ASSERT_TRUE(call.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(call.status.code(), StatusCode::kCancelled)
      << call.status.ToString();
  EXPECT_EQ(Attempts("cancel-unary").size(), 1u);
}

TEST_F(RetryTest, TheClientsOwnCancelOfAStreamIsNeverRetried) {
  std::shared_ptr<Channel> channel = ChannelWith(kRetryCancelled);
  ClientContext context;
  context.set_timeout(absl::Seconds(10));
  auto stream = channel->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kHangStream);
  SimpleRequest request;
  request.mutable_payload()->set_body("cancel-stream");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(
      testing::WaitFor([&] { return !Attempts("cancel-stream").empty(); }));
  context.TryCancel();
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  EXPECT_EQ(Attempts("cancel-stream").size(), 1u);
}

// Destroying a channel ends each of its calls with CANCELLED and runs its
// `done` or OnDone exactly once, before the destruction returns: a unary
// and a streaming call in flight (whose CANCELLED would be retryable), a
// call between attempts (in its 60 s pushback, or still in flight), and a
// wait_for_ready call waiting for a channel that cannot connect. A TryCancel
// afterwards touches nothing of the channel.
TEST_F(RetryTest, DestroyingTheChannelEndsCallsInEveryStateOnce) {
  AsyncCall in_flight;
  OneWriteStream stream;
  AsyncCall between_attempts;
  AsyncCall waiting;
  std::shared_ptr<Channel> channel = ChannelWith(kRetryCancelled);
  std::shared_ptr<Channel> unreachable =
      ChannelTo(absl::StrCat("127.0.0.1:", testing::ClosedLoopbackPort()),
                kRetryCancelled);

  in_flight.Start(channel.get(), kHang, "destroy-unary");
  stream.Start(channel.get(), kHangStream, "destroy-stream");
  between_attempts.Start(channel.get(), kFlaky, "destroy-retry 100 14 60000");
  waiting.context.set_wait_for_ready(true);
  waiting.Start(unreachable.get(), kFlaky, "destroy-waiting 0 0");
  ASSERT_TRUE(testing::WaitFor([&] {
    return !Attempts("destroy-unary").empty() &&
           !Attempts("destroy-stream").empty() &&
           !Attempts("destroy-retry").empty();
  }));
  // The wait_for_ready call made the channel try to connect, and waits.
  ASSERT_TRUE(testing::WaitFor([&] {
    return unreachable->GetState(false) == ConnectivityState::kTransientFailure;
  }));

  channel.reset();
  unreachable.reset();
  for (AsyncCall* call : {&in_flight, &between_attempts, &waiting}) {
    EXPECT_TRUE(call->done.HasBeenNotified())
        << call->request.ShortDebugString();
    EXPECT_EQ(call->done_runs.load(), 1) << call->request.ShortDebugString();
    EXPECT_EQ(call->status.code(), StatusCode::kCancelled)
        << call->request.ShortDebugString() << ": " << call->status.ToString();
  }
  EXPECT_TRUE(stream.done.HasBeenNotified());
  EXPECT_EQ(stream.done_runs.load(), 1);
  EXPECT_EQ(stream.status.code(), StatusCode::kCancelled)
      << stream.status.ToString();
  EXPECT_EQ(Attempts("destroy-unary").size(), 1u);
  EXPECT_EQ(Attempts("destroy-stream").size(), 1u);
  EXPECT_EQ(Attempts("destroy-retry").size(), 1u);
  for (ClientContext* context : {&in_flight.context, &stream.context,
                                 &between_attempts.context, &waiting.context}) {
    context->TryCancel();
  }
}

// Every call gives back what it was charged against the channel's retry
// buffer, also one that fails before it starts (here: a context cancelled
// beforehand), so retries keep working however many such calls came first.
TEST_F(RetryTest, CallsThatNeverStartGiveTheirRetryBufferBack) {
  ChannelOptions options;
  options.retry_buffer_size = 64 << 10;
  std::shared_ptr<Channel> channel = ChannelWith(kPolicy, "", options);
  // 4 KiB requests: 64 of them, unreturned, would hold four times the
  // channel's retry buffer.
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(4 << 10, 'p'));
  SimpleResponse response;
  std::string response_bytes;
  const std::string request_bytes = request.SerializeAsString();
  for (int i = 0; i < 64; ++i) {
    ClientContext context;
    context.TryCancel();
    Status status;
    switch (i % 3) {
      case 0:
        status = channel->UnaryCall(&context, kFlaky, request, &response);
        break;
      case 1:
        status = channel->GenericUnaryCall(&context, kFlaky, request_bytes,
                                           &response_bytes);
        break;
      default: {
        testing::Notification done;
        channel->AsyncUnaryCall(&context, kFlaky, request, &response,
                                [&](const Status& s) {
                                  status = s;
                                  done.Notify();
                                });
        ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout));
        break;
      }
    }
    ASSERT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  }
  // 8 KiB more than its body (which the server reads), larger than what
  // is left of the retry buffer if the failed calls kept their charge.
  ClientContext context;
  context.set_timeout(kHangTimeout);
  request.mutable_payload()->set_body("charges 1 14");
  request.mutable_response_status()->set_message(std::string(8 << 10, 'p'));
  const Status status =
      channel->UnaryCall(&context, kFlaky, request, &response);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(Attempts("charges").size(), 2u);
}

}  // namespace
}  // namespace h2rpc
