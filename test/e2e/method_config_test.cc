// A service config's methodConfig applied to calls (gRPC's
// service_config.md): timeout, waitForReady, maxRequestMessageBytes and
// maxResponseMessageBytes, matched by method, then service, then the
// default entry.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/loopback_socket.h"
#include "test/util/stub_server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::StubServer;
using ::testing::HasSubstr;

constexpr char kEcho[] = "/cfg.Echo/Echo";
constexpr char kOther[] = "/cfg.Echo/Other";
constexpr char kHang[] = "/cfg.Slow/Hang";
constexpr char kDeadline[] = "/cfg.Timed/Deadline";
constexpr char kBidiEcho[] = "/cfg.Echo/BidiEcho";
// Generous: only catches hangs.
constexpr absl::Duration kHangTimeout = absl::Seconds(30);
// How far a deadline the server saw may sit outside the bounds put on it,
// either way: the clock readings behind it (each event loop's, read once per
// iteration before the events it stamps; ServerContext::deadline()'s two
// clocks, read in turn) may each lag the moment they stand for by as long as
// a loaded machine holds a thread off. Small against the 10 s between the
// deadlines the tests tell apart.
constexpr absl::Duration kClockSlack = absl::Seconds(2);

// A Deadline call as its handler saw it.
struct SeenDeadline {
  absl::Time deadline;  // ServerContext::deadline()
  absl::Time now;       // read after it
};

class MethodConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto echo = [](ServerContext*, const SimpleRequest& in,
                   SimpleResponse* out) {
      out->mutable_payload()->set_body(in.payload().body());
      return Status();
    };
    server_.builder()
        .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, echo)
        .RegisterUnary<SimpleRequest, SimpleResponse>(kOther, echo)
        .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
            kHang,
            [this](ServerContext*, const SimpleRequest*, SimpleResponse*,
                   UnaryDone done) {
              // Answered only when the test ends.
              std::lock_guard<std::mutex> lock(mu_);
              hanging_.push_back(std::move(done));
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kDeadline,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              SeenDeadline seen;
              seen.deadline = context->deadline();
              seen.now = absl::Now();
              std::lock_guard<std::mutex> lock(mu_);
              seen_deadlines_.push_back(seen);
              return Status();
            })
        .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
            kBidiEcho,
            [](ServerContext*,
               ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
              SimpleRequest in;
              SimpleResponse out;
              while (stream->Read(&in)) {
                out.mutable_payload()->set_body(in.payload().body());
                if (!stream->Write(out)) break;
              }
              return Status();
            });
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
  }
  void TearDown() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (UnaryDone& done : hanging_) done(Status());
  }

  std::shared_ptr<Channel> ChannelWith(const std::string& service_config) {
    ChannelOptions options;
    options.service_config = service_config;
    return server_.NewChannel(options);
  }

  static Status Call(Channel* channel, const char* method, size_t body_size,
                     SimpleResponse* response = nullptr) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    request.mutable_payload()->set_body(std::string(body_size, 'x'));
    SimpleResponse ignored;
    return channel->UnaryCall(&context, method, request,
                              response != nullptr ? response : &ignored);
  }

  // Calls Deadline with `context_timeout`, setting `*started` to the time
  // read just before, and returns what its handler saw (the deadline from
  // the grpc-timeout the client sent); InfiniteFuture (and the test failed)
  // if the call failed.
  SeenDeadline CallDeadline(Channel* channel, absl::Duration context_timeout,
                            absl::Time* started) {
    *started = absl::Now();
    ClientContext context;
    context.set_timeout(context_timeout);
    SimpleRequest request;
    SimpleResponse response;
    const Status status =
        channel->UnaryCall(&context, kDeadline, request, &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok() || seen_deadlines_.empty()) {
      return SeenDeadline{absl::InfiniteFuture(), absl::InfiniteFuture()};
    }
    return seen_deadlines_.back();
  }

  StubServer server_;
  std::mutex mu_;
  std::vector<UnaryDone> hanging_;            // guarded by mu_
  std::vector<SeenDeadline> seen_deadlines_;  // guarded by mu_
};

// The server's deadline for a call whose client deadline was `timeout`
// after `started` (read before the call began): no earlier than that (the
// client rounds grpc-timeout up and the server counts from when it got it),
// and no later than `timeout` after the handler ran; both within
// kClockSlack. A missing grpc-timeout (InfiniteFuture) fails.
void ExpectServerDeadline(const SeenDeadline& seen, absl::Time started,
                          absl::Duration timeout) {
  EXPECT_GE(seen.deadline, started + timeout - kClockSlack)
      << "the server's deadline is " << (seen.deadline - started)
      << " after the call started";
  EXPECT_LE(seen.deadline, seen.now + timeout + kClockSlack)
      << "the server's deadline is " << (seen.deadline - seen.now)
      << " after its handler ran";
}

TEST_F(MethodConfigTest, TheEarlierOfTheTimeoutAndTheContextDeadlineApplies) {
  std::shared_ptr<Channel> channel = ChannelWith(R"({"methodConfig": [
      {"name": [{"service": "cfg.Slow"}], "timeout": "0.5s"},
      {"name": [{"service": "cfg.Timed"}], "timeout": "20s"}]})");
  // The context's deadline (30 s) is later: the config's ends the call.
  const absl::Time start = absl::Now();
  Status status = Call(channel.get(), kHang, 1);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(500));

  // What the server is told (grpc-timeout), on calls answered at once: the
  // config's 20 s under a 30 s context deadline; a 10 s context deadline
  // under the config's 20 s.
  absl::Time started;
  SeenDeadline seen = CallDeadline(channel.get(), absl::Seconds(30), &started);
  ExpectServerDeadline(seen, started, absl::Seconds(20));
  seen = CallDeadline(channel.get(), absl::Seconds(10), &started);
  ExpectServerDeadline(seen, started, absl::Seconds(10));
}

TEST_F(MethodConfigTest, AZeroTimeoutSetsNoDeadline) {
  std::shared_ptr<Channel> channel = ChannelWith(R"({"methodConfig": [
      {"name": [{}], "timeout": "0s"}]})");
  EXPECT_TRUE(Call(channel.get(), kEcho, 10).ok());
}

TEST_F(MethodConfigTest, MessageLimitsApplyToTheMatchedMethodOnly) {
  std::shared_ptr<Channel> channel = ChannelWith(R"({"methodConfig": [
      {"name": [{"service": "cfg.Echo", "method": "Echo"}],
       "maxRequestMessageBytes": 64},
      {"name": [{"service": "cfg.Echo"}],
       "maxResponseMessageBytes": 64}]})");
  // Echo: the request limit (the method's own entry, not the service's).
  Status status = Call(channel.get(), kEcho, 100);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_TRUE(Call(channel.get(), kEcho, 50).ok());
  // Other: the service's entry, the response limit.
  status = Call(channel.get(), kOther, 100);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  SimpleResponse response;
  EXPECT_TRUE(Call(channel.get(), kOther, 50, &response).ok());
  EXPECT_EQ(response.payload().body().size(), 50u);
}

TEST_F(MethodConfigTest, TheRequestLimitAppliesToStreamWrites) {
  std::shared_ptr<Channel> channel = ChannelWith(R"({"methodConfig": [
      {"name": [{"service": "cfg.Echo"}], "maxRequestMessageBytes": 64}]})");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  auto stream = channel->BidiStreamingCall<SimpleRequest, SimpleResponse>(
      &context, kBidiEcho);
  SimpleRequest small;
  small.mutable_payload()->set_body(std::string(10, 's'));
  ASSERT_TRUE(stream->Write(small));
  SimpleResponse response;
  ASSERT_TRUE(stream->Read(&response));
  SimpleRequest big;
  big.mutable_payload()->set_body(std::string(100, 'b'));
  EXPECT_FALSE(stream->Write(big));
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
}

TEST_F(MethodConfigTest, WaitForReadyAppliesUnlessTheContextSetsIt) {
  ChannelOptions options;
  options.service_config = R"({"methodConfig": [
      {"name": [{}], "waitForReady": true}]})";
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(10);
  std::shared_ptr<Channel> channel = CreateChannel(
      absl::StrCat("127.0.0.1:", testing::ClosedLoopbackPort()), options);
  SimpleRequest request;
  SimpleResponse response;
  {
    // Waits for a connection that never comes: its deadline ends it.
    ClientContext context;
    context.set_timeout(absl::Milliseconds(200));
    const Status status =
        channel->UnaryCall(&context, kEcho, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded)
        << status.ToString();
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("waiting for a connection"));
  }
  {
    // The context says no: fails fast with the connect error.
    ClientContext context;
    context.set_timeout(kHangTimeout);
    context.set_wait_for_ready(false);
    const Status status =
        channel->UnaryCall(&context, kEcho, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  }
}

}  // namespace
}  // namespace h2rpc
