// Server::Shutdown's contract: at the deadline the calls left are cancelled;
// from then on it waits only for handlers, logs the methods of those still
// running every ServerOptions::shutdown_grace_period, and returns once the
// last handler has returned, never before (a handler may still touch the
// server until then); its deadline also closes a connection whose client
// never answers the graceful shutdown's PING.
#include "rpc/server.h"

#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "test/util/notification.h"
#include "test/util/raw_frames.h"
#include "test/util/raw_h2_client.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::Notification;
using ::testing::HasSubstr;

using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::WaitFor;

// Sends what this process writes to stderr into a pipe while it lives, and
// keeps it; echoes it to stdout at the end, so nothing is lost from the log.
class StderrCapture {
 public:
  StderrCapture() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    read_fd_ = fds[0];
    reader_ = std::thread([this] {
      char buffer[4096];
      ssize_t n;
      while ((n = read(read_fd_, buffer, sizeof(buffer))) > 0) {
        MutexLock lock(&mu_);
        text_.append(buffer, static_cast<size_t>(n));
      }
    });
  }
  ~StderrCapture() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);  // closes the pipe's last write end
    close(saved_);
    reader_.join();
    close(read_fd_);
    std::printf("--- captured stderr ---\n%s--- end ---\n", Text().c_str());
  }

  std::string Text() {
    MutexLock lock(&mu_);
    return text_;
  }
  bool WaitForText(absl::string_view part) {
    return WaitFor([&] { return absl::StrContains(Text(), part); });
  }

 private:
  int saved_ = -1;
  int read_fd_ = -1;
  std::thread reader_;
  Mutex mu_;
  std::string text_ ABSL_GUARDED_BY(mu_);
};

constexpr char kStuck[] = "/h2rpc.test.Server/Stuck";

TEST(ServerShutdownTest, WaitsForAHandlerThatIgnoresCancellationAndLogsIt) {
  Notification entered;
  Notification release;
  std::atomic<bool> saw_cancel{false};
  ServerOptions options;
  options.shutdown_grace_period = absl::Milliseconds(100);
  int port = 0;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .SetOptions(options)
          .AddListeningPort("127.0.0.1:0", &port)
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              kStuck,
              [&](ServerContext* context, const SimpleRequest&,
                  SimpleResponse*) {
                entered.Notify();
                // Ignores cancellation until released, then looks at its
                // context: the server must still be there.
                release.WaitForNotification();
                saw_cancel = context->IsCancelled();
                return Status();
              })
          .BuildAndStart(&status);
  ASSERT_TRUE(status.ok()) << status.ToString();

  std::shared_ptr<Channel> channel =
      CreateChannel("127.0.0.1:" + std::to_string(port));
  Status call_status;
  std::thread caller([&] {
    SimpleRequest request;
    SimpleResponse response;
    ClientContext context;
    context.set_timeout(kHangTimeout);
    call_status = channel->UnaryCall(&context, kStuck, request, &response);
  });
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(kHangTimeout));

  StderrCapture log;
  std::atomic<bool> returned{false};
  std::thread shutdown([&] {
    server->Shutdown(absl::Now() + absl::Milliseconds(50));
    returned = true;
  });
  // Past the deadline and the grace period Shutdown names what it waits
  // for; it has not returned, and the call still counts.
  EXPECT_TRUE(log.WaitForText(
      "for 1 call whose handler has not returned: /h2rpc.test.Server/Stuck "
      "(1 call)"))
      << log.Text();
  EXPECT_FALSE(returned.load());
  EXPECT_EQ(server->live_calls(), 1);
  // It keeps logging while the handler runs.
  EXPECT_TRUE(WaitFor([&] {
    const std::string text = log.Text();
    return text.find("Shutdown is still waiting") !=
           text.rfind("Shutdown is still waiting");
  }));
  EXPECT_FALSE(returned.load());

  release.Notify();
  EXPECT_TRUE(WaitFor([&] { return returned.load(); }));
  shutdown.join();
  caller.join();
  EXPECT_TRUE(saw_cancel.load()) << "the deadline cancelled the call";
  EXPECT_EQ(server->live_calls(), 0);
  // The client saw its call end when the connection closed at the deadline.
  EXPECT_FALSE(call_status.ok());
}

// A server with `options` and no services on an ephemeral port, or null
// and `*status`.
std::unique_ptr<Server> StartWithOptions(const ServerOptions& options,
                                         Status* status) {
  return Server::Builder()
      .SetOptions(options)
      .AddListeningPort("127.0.0.1:0")
      .BuildAndStart(status);
}

TEST(ServerShutdownTest, ReturnsAtOnceWhenNothingRuns) {
  ServerOptions options;
  options.shutdown_grace_period = absl::Milliseconds(1);
  Status status;
  std::unique_ptr<Server> server = StartWithOptions(options, &status);
  ASSERT_TRUE(status.ok()) << status.ToString();
  StderrCapture log;
  server->Shutdown(absl::InfiniteFuture());
  EXPECT_EQ(server->live_calls(), 0);
  EXPECT_THAT(log.Text(), ::testing::Not(HasSubstr("still waiting")));
}

// The last stream ids of the GOAWAY frames in `frames`, in order.
std::vector<uint32_t> GoAwayLastStreamIds(
    const std::vector<testing::RawFrame>& frames) {
  std::vector<uint32_t> ids;
  for (const testing::RawFrame& frame : frames) {
    if (frame.type != NGHTTP2_GOAWAY || frame.payload.size() < 8) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(frame.payload.data());
    ids.push_back((uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 |
                   uint32_t{p[2]} << 8 | uint32_t{p[3]}) &
                  0x7fffffff);
  }
  return ids;
}

// A client that never answers the PING following the first GOAWAY: the
// final GOAWAY would go out only after Session::kGoAwayPingTimeout (20 s,
// and keepalive_timeout is 20 s too), and the connection, which has no
// call, would close after it. Shutdown's deadline comes first and closes
// the connection without it: the client sees the first GOAWAY (last stream
// id 2^31-1) and the PING, then the connection end, never a second GOAWAY.
TEST(ServerShutdownTest, ClosesAtTheDeadlineAConnectionThatNeverAcksThePing) {
  int port = 0;
  Status status;
  std::unique_ptr<Server> server = Server::Builder()
                                       .AddListeningPort("127.0.0.1:0", &port)
                                       .BuildAndStart(&status);
  ASSERT_TRUE(status.ok()) << status.ToString();

  Notification connected;  // the server's SETTINGS arrived
  testing::RawBytesResult result;
  std::thread client([&] {
    const std::string handshake = absl::StrCat(
        testing::kClientPreface,
        testing::EncodeFrame(NGHTTP2_SETTINGS, 0, 0, ""),
        testing::EncodeFrame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, ""));
    // Reads until the server closes the connection; answers nothing.
    result = testing::SendRawBytes(
        port, handshake, kHangTimeout,
        [&](const std::vector<testing::RawFrame>& frames) {
          for (const testing::RawFrame& frame : frames) {
            if (frame.type == NGHTTP2_SETTINGS &&
                !(frame.flags & NGHTTP2_FLAG_ACK) &&
                !connected.HasBeenNotified()) {
              connected.Notify();
            }
          }
          return false;
        });
  });
  EXPECT_TRUE(connected.WaitForNotificationWithTimeout(kHangTimeout));
  server->Shutdown(absl::Now() + absl::Seconds(1));
  client.join();

  EXPECT_TRUE(result.closed_by_peer);
  EXPECT_FALSE(result.timed_out);
  EXPECT_THAT(GoAwayLastStreamIds(result.frames),
              ::testing::ElementsAre(0x7fffffffu));
  bool ping_seen = false;
  for (const testing::RawFrame& frame : result.frames) {
    if (frame.type == NGHTTP2_PING && !(frame.flags & NGHTTP2_FLAG_ACK)) {
      ping_seen = true;
    }
  }
  EXPECT_TRUE(ping_seen);
}

TEST(ServerOptionsTest, RefusesAGracePeriodThatIsNotPositive) {
  for (absl::Duration bad : {absl::ZeroDuration(), absl::Seconds(-1)}) {
    ServerOptions options;
    options.shutdown_grace_period = bad;
    Status status;
    std::unique_ptr<Server> server = StartWithOptions(options, &status);
    EXPECT_EQ(server, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr("ServerOptions::shutdown_grace_period is "));
    EXPECT_THAT(status.message(), HasSubstr("it must be more than zero"));
  }
}

TEST(ServerOptionsTest, RefusesHttp1BoundsThatAreNotPositive) {
  const std::vector<std::pair<std::string, std::function<void(ServerOptions*)>>>
      cases = {
          {"web.http1_idle_timeout is 0",
           [](ServerOptions* o) {
             o->web.http1_idle_timeout = absl::ZeroDuration();
           }},
          {"web.http1_header_timeout is -1s",
           [](ServerOptions* o) {
             o->web.http1_header_timeout = absl::Seconds(-1);
           }},
          {"web.http1_max_requests_per_connection is 0",
           [](ServerOptions* o) {
             o->web.http1_max_requests_per_connection = 0;
           }},
          {"web.http1_max_target_bytes is 0",
           [](ServerOptions* o) { o->web.http1_max_target_bytes = 0; }},
          {"web.http1_max_buffered_input_bytes is -1",
           [](ServerOptions* o) {
             o->web.http1_max_buffered_input_bytes = -1;
           }},
      };
  for (const auto& [message, breaks] : cases) {
    ServerOptions options;
    options.web.connect = true;
    breaks(&options);
    Status status;
    std::unique_ptr<Server> server = StartWithOptions(options, &status);
    EXPECT_EQ(server, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("ServerOptions::" + message));
  }
}

TEST(ServerOptionsTest, RefusesABusyPollOutOfRange) {
  for (int bad : {-1, 1000001}) {
    ServerOptions options;
    options.busy_poll_us = bad;
    Status status;
    std::unique_ptr<Server> server = StartWithOptions(options, &status);
    EXPECT_EQ(server, nullptr);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("ServerOptions::busy_poll_us is ", bad,
                                       "; it must be from 0 to 1000000")));
  }
  ServerOptions options;
  options.busy_poll_us = 1000000;  // the bound itself is allowed
  options.num_loops = 1;
  Status status;
  std::unique_ptr<Server> server = StartWithOptions(options, &status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_NE(server, nullptr);
}

// A unary handler for the service-list tests; never called.
Status NoOp(ServerContext*, const SimpleRequest&, SimpleResponse*) {
  return Status();
}

TEST(ServerBuilderTest, ServiceListCallbackGetsEachServiceOnceSorted) {
  std::vector<std::vector<std::string>> lists;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .AddListeningPort("127.0.0.1:0")
          .AddServiceListCallback([&](const std::vector<std::string>& names) {
            lists.push_back(names);
          })
          .RegisterUnary<SimpleRequest, SimpleResponse>("/b.Svc/One", NoOp)
          .RegisterUnary<SimpleRequest, SimpleResponse>("/a.B-c/M", NoOp)
          .RegisterUnary<SimpleRequest, SimpleResponse>("/a.B/Z", NoOp)
          .RegisterUnary<SimpleRequest, SimpleResponse>("/b.Svc/Two", NoOp)
          .BuildAndStart(&status);
  ASSERT_TRUE(status.ok()) << status.ToString();
  // Run once, by BuildAndStart, after every registration.
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_THAT(lists[0], ::testing::ElementsAre("a.B", "a.B-c", "b.Svc"));
}

TEST(ServerBuilderTest, ServiceListCallbackNotRunWhenARegistrationFailed) {
  bool ran = false;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .AddListeningPort("127.0.0.1:0")
          .AddServiceListCallback(
              [&](const std::vector<std::string>&) { ran = true; })
          .RegisterUnary<SimpleRequest, SimpleResponse>("no-slash", NoOp)
          .BuildAndStart(&status);
  EXPECT_EQ(server, nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace h2rpc
