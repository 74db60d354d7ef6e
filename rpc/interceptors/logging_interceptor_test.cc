#include "rpc/interceptors/logging_interceptor.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/interceptors/echo_loopback.h"
#include "test/util/allocation_counter.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::AllocationsByRole;
using ::h2rpc::testing::EchoLoopback;
using ::h2rpc::testing::kBidiMethod;
using ::h2rpc::testing::kEchoMethod;
using ::h2rpc::testing::kEmptyMethod;
using ::h2rpc::testing::kFailMethod;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::ThreadRole;
using ::h2rpc::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::MatchesRegex;

// The lines a sink received, from any thread.
class Lines {
 public:
  LoggingInterceptor::Sink Sink() {
    return [this](absl::string_view line) {
      MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
  }
  std::vector<std::string> Take() {
    MutexLock lock(&mu_);
    return std::move(lines_);
  }
  // Waits for `count` lines, then takes them.
  std::vector<std::string> TakeWhenThere(size_t count) {
    EXPECT_TRUE(WaitFor([&] {
      MutexLock lock(&mu_);
      return lines_.size() >= count;
    })) << "fewer than "
        << count << " lines";
    return Take();
  }

 private:
  Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

// A duration as absl::FormatDuration writes it (positive).
constexpr char kElapsed[] = "[0-9][0-9.a-z]*";

std::string Line(absl::string_view side, absl::string_view method,
                 absl::string_view code, size_t sent, size_t received,
                 absl::string_view message) {
  return absl::StrCat("side=", side, " method=", method, " code=", code,
                      " elapsed=", kElapsed, " sent_bytes=", sent,
                      " received_bytes=", received, " message=\"", message,
                      "\"");
}

// The hooks called directly, with a client context as the call's key.
TEST(LoggingInterceptorTest, LogsOneLinePerCallWithItsBytes) {
  Lines lines;
  LoggingInterceptor logger(lines.Sink());
  ClientContext context;
  const ClientCallInfo call{"/pkg.Service/Method", &context};
  ASSERT_TRUE(logger.OnStart(call).ok());
  logger.OnSendMessage(call, 10);
  logger.OnSendMessage(call, 5);
  logger.OnReceiveMessage(call, 7);
  EXPECT_THAT(lines.Take(), ElementsAre());
  logger.OnFinish(call, Status(StatusCode::kNotFound, "no such key"),
                  Metadata(), absl::Milliseconds(3));
  EXPECT_THAT(lines.Take(),
              ElementsAre("side=client method=/pkg.Service/Method "
                          "code=NOT_FOUND elapsed=3ms sent_bytes=15 "
                          "received_bytes=7 message=\"no such key\""));

  // The same context for the next call starts from zero.
  ASSERT_TRUE(logger.OnStart(call).ok());
  logger.OnFinish(call, Status(), Metadata(), absl::Microseconds(5));
  EXPECT_THAT(lines.Take(),
              ElementsAre("side=client method=/pkg.Service/Method code=OK "
                          "elapsed=5us sent_bytes=0 received_bytes=0 "
                          "message=\"\""));
}

TEST(LoggingInterceptorTest, CallsInFlightAreCountedApart) {
  Lines lines;
  LoggingInterceptor logger(lines.Sink());
  ClientContext a_context;
  ClientContext b_context;
  const ClientCallInfo a{"/pkg.Service/A", &a_context};
  const ClientCallInfo b{"/pkg.Service/B", &b_context};
  ASSERT_TRUE(logger.OnStart(a).ok());
  ASSERT_TRUE(logger.OnStart(b).ok());
  logger.OnSendMessage(a, 1);
  logger.OnSendMessage(b, 20);
  logger.OnReceiveMessage(b, 300);
  logger.OnFinish(b, Status(), Metadata(), absl::Seconds(1));
  logger.OnFinish(a, Status(), Metadata(), absl::Seconds(2));
  EXPECT_THAT(lines.Take(),
              ElementsAre(MatchesRegex(".*method=/pkg.Service/B .* "
                                       "sent_bytes=20 received_bytes=300 .*"),
                          MatchesRegex(".*method=/pkg.Service/A .* "
                                       "sent_bytes=1 received_bytes=0 .*")));
}

// Messages and odd methods are escaped onto one line; long messages are
// cut at Options::max_message_bytes.
TEST(LoggingInterceptorTest, EscapesAndCutsWhatItQuotes) {
  Lines lines;
  LoggingInterceptor::Options options;
  options.max_message_bytes = 12;
  LoggingInterceptor logger(lines.Sink(), options);
  ClientContext context;
  const ClientCallInfo call{"/a b/\"c\"", &context};
  ASSERT_TRUE(logger.OnStart(call).ok());
  logger.OnFinish(call, Status(StatusCode::kInternal, "a\"b\\c\nd\x01\xff"),
                  Metadata(), absl::Seconds(1));
  ClientContext long_context;
  const ClientCallInfo long_call{"/a/b", &long_context};
  ASSERT_TRUE(logger.OnStart(long_call).ok());
  logger.OnFinish(long_call,
                  Status(StatusCode::kInternal, "0123456789abcdefghij"),
                  Metadata(), absl::Seconds(1));
  EXPECT_THAT(lines.Take(),
              ElementsAre("side=client method=\"/a b/\\\"c\\\"\" code=INTERNAL "
                          "elapsed=1s sent_bytes=0 received_bytes=0 "
                          "message=\"a\\\"b\\\\c\\nd\\x01\\xff\"",
                          "side=client method=/a/b code=INTERNAL elapsed=1s "
                          "sent_bytes=0 received_bytes=0 "
                          "message=\"0123456789ab\"..."));
}

// Sends what this process writes to file descriptor 2 into a pipe while it
// lives; Text() stops capturing and returns what was written.
class StderrCapture {
 public:
  StderrCapture() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    saved_ = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    read_fd_ = fds[0];
    reader_ = std::thread([this] {
      char buffer[4096];
      ssize_t n;
      while ((n = read(read_fd_, buffer, sizeof(buffer))) > 0) {
        text_.append(buffer, static_cast<size_t>(n));
      }
    });
  }
  ~StderrCapture() { Text(); }
  const std::string& Text() {
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);  // closes the pipe's last write end
      close(saved_);
      saved_ = -1;
      reader_.join();
      close(read_fd_);
    }
    return text_;
  }

 private:
  int saved_ = -1;
  int read_fd_ = -1;
  std::thread reader_;
  std::string text_;  // the reader's until joined
};

TEST(LoggingInterceptorTest, TheDefaultSinkWritesLinesToStderr) {
  StderrCapture capture;
  {
    LoggingInterceptor logger;
    LoggingInterceptor null_sink(nullptr);
    ClientContext context;
    const ClientCallInfo call{"/a/b", &context};
    for (LoggingInterceptor* interceptor : {&logger, &null_sink}) {
      ASSERT_TRUE(interceptor->OnStart(call).ok());
      interceptor->OnFinish(call, Status(), Metadata(), absl::Seconds(1));
    }
  }
  const std::string line =
      "side=client method=/a/b code=OK elapsed=1s sent_bytes=0 "
      "received_bytes=0 message=\"\"\n";
  EXPECT_EQ(capture.Text(), line + line);
}

class LoggingLoopbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logger_ = std::make_shared<LoggingInterceptor>(lines_.Sink());
    loopback_ = std::make_unique<EchoLoopback>(
        std::vector<std::shared_ptr<ClientInterceptor>>{logger_},
        std::vector<std::shared_ptr<ServerInterceptor>>{logger_});
    ASSERT_TRUE(loopback_->status().ok()) << loopback_->status().ToString();
  }

  Lines lines_;
  std::shared_ptr<LoggingInterceptor> logger_;
  std::unique_ptr<EchoLoopback> loopback_;
};

// Both ends log an OK and a failed call, with the bytes each sent and
// received.
TEST_F(LoggingLoopbackTest, LogsOkAndFailedCallsOnBothSides) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  SimpleResponse response;
  Status status = loopback_->channel()->UnaryCall(&context, kEchoMethod,
                                                  request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  const size_t sent = request.ByteSizeLong();
  const size_t received = response.ByteSizeLong();
  std::vector<std::string> lines = lines_.TakeWhenThere(2);
  // The client logs before its call returns; the server's line may come
  // before or after it.
  std::sort(lines.begin(), lines.end());
  EXPECT_THAT(
      lines,
      ElementsAre(
          MatchesRegex(Line("client", kEchoMethod, "OK", sent, received, "")),
          MatchesRegex(Line("server", kEchoMethod, "OK", received, sent, ""))));

  ClientContext fail_context;
  fail_context.set_timeout(kHangTimeout);
  status = loopback_->channel()->UnaryCall(&fail_context, kFailMethod, request,
                                           &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  lines = lines_.TakeWhenThere(2);
  std::sort(lines.begin(), lines.end());
  EXPECT_THAT(lines,
              ElementsAre(MatchesRegex(Line("client", kFailMethod, "NOT_FOUND",
                                            sent, 0, "no such thing")),
                          MatchesRegex(Line("server", kFailMethod, "NOT_FOUND",
                                            0, sent, "no such thing"))));
}

TEST_F(LoggingLoopbackTest, CountsEveryMessageOfAStream) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  auto stream = loopback_->channel()
                    ->BidiStreamingCall<StreamingOutputCallRequest,
                                        StreamingOutputCallResponse>(
                        &context, kBidiMethod);
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  size_t sent = 0;
  size_t received = 0;
  for (const char* body : {"a", "bb", "cccc"}) {
    request.mutable_payload()->set_body(body);
    ASSERT_TRUE(stream->Write(request));
    sent += request.ByteSizeLong();
    ASSERT_TRUE(stream->Read(&response));
    received += response.ByteSizeLong();
  }
  ASSERT_TRUE(stream->WritesDone());
  const Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();
  std::vector<std::string> lines = lines_.TakeWhenThere(2);
  std::sort(lines.begin(), lines.end());
  EXPECT_THAT(
      lines,
      ElementsAre(
          MatchesRegex(Line("client", kBidiMethod, "OK", sent, received, "")),
          MatchesRegex(Line("server", kBidiMethod, "OK", received, sent, ""))));
}

// With a sink that does not allocate, a warm call costs the logger no
// allocation on either side: byte counts live in recycled map nodes and
// the line in a per-thread buffer.
TEST(LoggingAllocationTest, WarmCallsDoNotAllocate) {
  std::atomic<int> lines{0};
  auto logger = std::make_shared<LoggingInterceptor>(
      [&lines](absl::string_view) { lines.fetch_add(1); });
  EchoLoopback loopback({logger}, {logger});
  ASSERT_TRUE(loopback.status().ok()) << loopback.status().ToString();
  auto call = [&] {
    ClientContext context;
    Empty response;
    const Status status = loopback.channel()->UnaryCall(&context, kEmptyMethod,
                                                        Empty(), &response);
    ASSERT_TRUE(status.ok()) << status.ToString();
  };
  constexpr int kWarmup = 200;
  constexpr int kCalls = 1000;
  for (int i = 0; i < kWarmup; ++i) call();
  // The server's line of the last warm-up call may still be on its way.
  ASSERT_TRUE(WaitFor([&] { return lines.load() == 2 * kWarmup; }));
  const auto client0 = AllocationsByRole(ThreadRole::kClient);
  const auto other0 = AllocationsByRole(ThreadRole::kOther);
  const auto server0 = AllocationsByRole(ThreadRole::kServer);
  for (int i = 0; i < kCalls; ++i) call();
  ASSERT_TRUE(WaitFor([&] { return lines.load() == 2 * (kWarmup + kCalls); }));
  const auto client1 = AllocationsByRole(ThreadRole::kClient);
  const auto other1 = AllocationsByRole(ThreadRole::kOther);
  const auto server1 = AllocationsByRole(ThreadRole::kServer);
  EXPECT_EQ(client1.allocations - client0.allocations + other1.allocations -
                other0.allocations,
            0);
  EXPECT_EQ(server1.allocations - server0.allocations, 0);
}

}  // namespace
}  // namespace h2rpc
