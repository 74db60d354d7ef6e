// A Channel's connection management over real loopback sockets: the
// connectivity state machine (IDLE, CONNECTING, READY, TRANSIENT_FAILURE,
// SHUTDOWN), reconnect backoff without a storm, WaitForConnected,
// wait_for_ready calls, the idle timeout, a server restarted under load,
// and keepalive throttling on GOAWAY "too_many_pings". Every wait is for an
// observable condition, bounded.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/connectivity_state.h"
#include "rpc/internal/channel_core_access.h"
#include "rpc/server.h"
#include "test/util/fake_tcp_server.h"
#include "test/util/loopback_socket.h"
#include "test/util/notification.h"
#include "test/util/raw_frames.h"
#include "test/util/stub_server.h"
#include "test/util/tcp_proxy.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::ClosedLoopbackPort;
using ::h2rpc::testing::ConnectToLoopback;
using ::h2rpc::testing::EncodeFrame;
using ::h2rpc::testing::FakeServer;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::ListenOnLoopback;
using ::h2rpc::testing::LocalPort;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::ParseFrames;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::TcpProxy;
using ::h2rpc::testing::WaitFor;
using ::h2rpc::testing::WriteAll;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using S = ConnectivityState;

constexpr char kEcho[] = "/h2rpc.test.State/Echo";
constexpr char kHold[] = "/h2rpc.test.State/Hold";

// ---------------------------------------------------------------------------
// The channel's internals that tests read.

const internal::ConnectivityWatch& Watch(Channel& channel) {
  return internal::ChannelCoreAccess::Core(channel).connectivity();
}
int64_t Entered(Channel& channel, S state) {
  return Watch(channel).entered(state);
}
std::vector<S> History(Channel& channel) { return Watch(channel).history(); }
std::string Names(const std::vector<S>& states) {
  return absl::StrJoin(states, " ", [](std::string* out, S state) {
    out->append(std::string(ConnectivityStateName(state)));
  });
}

// ---------------------------------------------------------------------------
// Sockets.

std::string Target(int port) { return absl::StrCat("127.0.0.1:", port); }

// Reads and drops what arrives on `fd` until EOF, an error or `timeout`.
// Returns whether EOF came.
bool ReadUntilEof(int fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  char buffer[4096];
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd, POLLIN, 0};
    const int rv =
        poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (rv < 0 && errno == EINTR) continue;
    if (rv <= 0) return false;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// A FakeServer whose connections `handler` serves, one at a time; the
// socket is closed after it.
FakeServer::Handler ClosingAfter(std::function<void(int fd)> handler) {
  return [handler = std::move(handler)](int fd) {
    handler(fd);
    close(fd);
    return false;
  };
}

// ---------------------------------------------------------------------------
// A real server, and calls.

// An h2rpc server with an echo method and one that holds its call until
// released, on `port` (0: a free one).
struct EchoServer {
  explicit EchoServer(int port = 0) {
    stub.builder()
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kEcho,
            [](ServerContext*, const SimpleRequest& request,
               SimpleResponse* response) {
              response->mutable_payload()->set_body(request.payload().body());
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kHold,
            [this](ServerContext*, const SimpleRequest&, SimpleResponse*) {
              held.Notify();
              release.WaitForNotificationWithTimeout(kHangTimeout);
              return Status();
            });
    start_status = stub.ListenOn(Target(port)).Start();
  }
  ~EchoServer() {
    release.Notify();
    if (stub.started()) stub.server().Shutdown(absl::Now() + kHangTimeout);
  }
  int port() const { return stub.port(); }
  std::string target() const { return stub.target(); }

  Status start_status;
  Notification held;
  Notification release;
  StubServer stub;  // last: destroyed first
};

Status Call(Channel* channel, absl::Duration timeout,
            bool wait_for_ready = false) {
  ClientContext context;
  context.set_timeout(timeout);
  context.set_wait_for_ready(wait_for_ready);
  SimpleRequest request;
  request.mutable_payload()->set_body("ping");
  SimpleResponse response;
  Status status = channel->UnaryCall(&context, kEcho, request, &response);
  if (status.ok() && response.payload().body() != "ping") {
    return Status(StatusCode::kInternal,
                  "wrong echo: " + response.payload().body());
  }
  return status;
}

// An asynchronous call and its outcome.
struct AsyncCall {
  AsyncCall(Channel* channel, const char* method, absl::Duration timeout,
            bool wait_for_ready) {
    if (timeout != absl::InfiniteDuration()) context.set_timeout(timeout);
    context.set_wait_for_ready(wait_for_ready);
    request.mutable_payload()->set_body("ping");
    channel->AsyncUnaryCall(&context, method, request, &response,
                            [this](const Status& s) {
                              status = s;
                              done.Notify();
                            });
  }
  bool Wait() { return done.WaitForNotificationWithTimeout(kHangTimeout); }

  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
  Status status;  // written before done is notified
  Notification done;
};

// Short reconnect backoff: 20 ms, x1.6, at most 100 ms.
ChannelOptions FastBackoff() {
  ChannelOptions options;
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(100);
  return options;
}

// A reconnect backoff no test outlasts: after one failed attempt the
// channel stays in TRANSIENT_FAILURE.
ChannelOptions NoRetry() {
  ChannelOptions options;
  options.initial_backoff = absl::Minutes(10);
  options.max_backoff = absl::Minutes(10);
  return options;
}

// ---------------------------------------------------------------------------
// The state machine.

TEST(ChannelStateTest, AFirstCallGoesFromIdleThroughConnectingToReady) {
  EchoServer server;
  ASSERT_TRUE(server.start_status.ok()) << server.start_status.ToString();
  std::shared_ptr<Channel> channel = CreateChannel(server.target());
  EXPECT_EQ(channel->GetState(false), S::kIdle);
  const Status status = Call(channel.get(), kHangTimeout);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(channel->GetState(false), S::kReady);
  EXPECT_THAT(History(*channel),
              ElementsAre(S::kIdle, S::kConnecting, S::kReady))
      << Names(History(*channel));
}

TEST(ChannelStateTest, GetStateWithTryToConnectStartsConnecting) {
  EchoServer server;
  ASSERT_TRUE(server.start_status.ok()) << server.start_status.ToString();
  std::shared_ptr<Channel> channel = CreateChannel(server.target());
  EXPECT_EQ(channel->GetState(true), S::kIdle);  // the change follows
  EXPECT_TRUE(
      channel->WaitForStateChange(S::kIdle, absl::Now() + kHangTimeout));
  EXPECT_TRUE(channel->WaitForConnected(absl::Now() + kHangTimeout));
  EXPECT_EQ(channel->GetState(false), S::kReady);
  EXPECT_THAT(History(*channel),
              ElementsAre(S::kIdle, S::kConnecting, S::kReady))
      << Names(History(*channel));
}

TEST(ChannelStateTest, GetStateWithoutTryToConnectStaysIdle) {
  FakeServer server(ClosingAfter([](int fd) {}));
  ASSERT_TRUE(server.ok());
  std::shared_ptr<Channel> channel = CreateChannel(server.target());
  EXPECT_EQ(channel->GetState(false), S::kIdle);
  EXPECT_FALSE(channel->WaitForStateChange(
      S::kIdle, absl::Now() + absl::Milliseconds(100)));
  EXPECT_EQ(server.accepted(), 0);
}

// READY means the server's HTTP/2 handshake is done, not the TCP connect: a
// server that accepts and says nothing leaves the channel CONNECTING, and
// a call waits for it.
TEST(ChannelStateTest, ATcpConnectIsNotReady) {
  Notification release;
  FakeServer server(ClosingAfter([&release](int fd) {
    release.WaitForNotificationWithTimeout(kHangTimeout);
  }));
  ASSERT_TRUE(server.ok());
  std::shared_ptr<Channel> channel = CreateChannel(server.target());
  channel->GetState(true);
  ASSERT_TRUE(WaitFor([&] { return server.accepted() == 1; }));
  EXPECT_EQ(channel->GetState(false), S::kConnecting);
  EXPECT_FALSE(channel->WaitForStateChange(
      S::kConnecting, absl::Now() + absl::Milliseconds(100)));
  release.Notify();
}

TEST(ChannelStateTest, AgainstAClosedPortAttemptsFollowTheBackoffNotTheCalls) {
  ChannelOptions options;
  options.initial_backoff = absl::Milliseconds(50);
  options.backoff_multiplier = 1.6;
  options.backoff_jitter = 0.2;
  options.max_backoff = absl::Milliseconds(200);
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(ClosedLoopbackPort()), options);
  const absl::Time start = absl::Now();  // before the first attempt
  EXPECT_EQ(channel->GetState(true), S::kIdle);
  // Calls all along: each fails fast with the attempt's error, and none
  // starts an attempt of its own.
  std::atomic<bool> stop{false};
  std::atomic<int> unavailable{0};
  std::atomic<int> other{0};
  std::thread caller([&] {
    while (!stop.load()) {
      const Status status = Call(channel.get(), kHangTimeout);
      (status.code() == StatusCode::kUnavailable ? unavailable : other)
          .fetch_add(1);
    }
  });
  constexpr int kAttempts = 6;
  const bool reached =
      WaitFor([&] { return Entered(*channel, S::kConnecting) >= kAttempts; });
  const absl::Duration elapsed = absl::Now() - start;
  stop = true;
  caller.join();
  ASSERT_TRUE(reached) << Names(History(*channel));
  // Each attempt starts no sooner than the backoff after the one before,
  // less its jitter: 50 ms (the first is not jittered), then 80, 128, 200
  // (capped) and 200 ms, x0.8.
  EXPECT_GE(elapsed,
            absl::Microseconds(50000 + 64000 + 102400 + 160000 + 160000));
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(unavailable.load(), kAttempts);
  const std::vector<S> history = History(*channel);
  ASSERT_GE(history.size(), 2u * kAttempts);
  EXPECT_EQ(history[0], S::kIdle);
  for (size_t i = 1; i < history.size(); ++i) {
    EXPECT_EQ(history[i], i % 2 == 1 ? S::kConnecting : S::kTransientFailure)
        << Names(history);
  }
}

TEST(ChannelStateTest, WaitForConnectedSucceedsOnceAServerStartsOnThePort) {
  const int port = ClosedLoopbackPort();
  std::shared_ptr<Channel> channel = CreateChannel(Target(port), FastBackoff());
  std::atomic<bool> connected{false};
  Notification returned;
  std::thread waiter([&] {
    connected = channel->WaitForConnected(absl::Now() + kHangTimeout);
    returned.Notify();
  });
  ASSERT_TRUE(
      WaitFor([&] { return Entered(*channel, S::kTransientFailure) >= 2; }));
  EXPECT_FALSE(returned.HasBeenNotified());
  EchoServer server(port);
  ASSERT_TRUE(server.start_status.ok()) << server.start_status.ToString();
  waiter.join();
  EXPECT_TRUE(connected.load());
  EXPECT_EQ(channel->GetState(false), S::kReady);
  EXPECT_TRUE(Call(channel.get(), kHangTimeout).ok());
}

TEST(ChannelStateTest, WaitForConnectedGivesUpAtItsDeadline) {
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(ClosedLoopbackPort()), NoRetry());
  EXPECT_FALSE(
      channel->WaitForConnected(absl::Now() + absl::Milliseconds(200)));
  EXPECT_EQ(channel->GetState(false), S::kTransientFailure);
}

// ---------------------------------------------------------------------------
// wait_for_ready.

TEST(ChannelStateTest, WithoutWaitForReadyACallFailsFastWithTheConnectError) {
  const std::string target = Target(ClosedLoopbackPort());
  std::shared_ptr<Channel> channel = CreateChannel(target, NoRetry());
  // The first call waits for the attempt it starts, and gets its error.
  const absl::Time start = absl::Now();
  const Status first = Call(channel.get(), kHangTimeout);
  EXPECT_EQ(first.code(), StatusCode::kUnavailable) << first.ToString();
  EXPECT_THAT(first.message(), HasSubstr(target));
  EXPECT_EQ(channel->GetState(false), S::kTransientFailure);
  // The next one fails at once with the same error, starting no attempt.
  const Status second = Call(channel.get(), kHangTimeout);
  EXPECT_EQ(second.code(), StatusCode::kUnavailable) << second.ToString();
  EXPECT_EQ(second.message(), first.message());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(Entered(*channel, S::kConnecting), 1);
}

TEST(ChannelStateTest, AWaitForReadyCallWaitsForAServerThatStartsLater) {
  const int port = ClosedLoopbackPort();
  std::shared_ptr<Channel> channel = CreateChannel(Target(port), FastBackoff());
  AsyncCall call(channel.get(), kEcho, kHangTimeout, /*wait_for_ready=*/true);
  // Two failed attempts later the call still waits.
  ASSERT_TRUE(
      WaitFor([&] { return Entered(*channel, S::kTransientFailure) >= 2; }));
  EXPECT_FALSE(call.done.HasBeenNotified()) << call.status.ToString();
  EchoServer server(port);
  ASSERT_TRUE(server.start_status.ok()) << server.start_status.ToString();
  ASSERT_TRUE(call.Wait());
  EXPECT_TRUE(call.status.ok()) << call.status.ToString();
  EXPECT_EQ(call.response.payload().body(), "ping");
}

TEST(ChannelStateTest, AWaitForReadyCallHitsItsDeadlineWhileTheServerIsDown) {
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(ClosedLoopbackPort()), NoRetry());
  const Status status =
      Call(channel.get(), absl::Milliseconds(300), /*wait_for_ready=*/true);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("last connection attempt"));
  EXPECT_EQ(channel->GetState(false), S::kTransientFailure);
}

TEST(ChannelStateTest, AWaitForReadyCallIsCancelledWhileItWaits) {
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(ClosedLoopbackPort()), NoRetry());
  AsyncCall call(channel.get(), kEcho, absl::InfiniteDuration(),
                 /*wait_for_ready=*/true);
  ASSERT_TRUE(WaitFor(
      [&] { return channel->GetState(false) == S::kTransientFailure; }));
  EXPECT_FALSE(call.done.HasBeenNotified());
  call.context.TryCancel();
  ASSERT_TRUE(call.Wait());
  EXPECT_EQ(call.status.code(), StatusCode::kCancelled)
      << call.status.ToString();
}

// A streaming call waits the same way.
class EchoOnceReactor final
    : public ClientBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  void OnWriteDone(bool ok) override {
    if (ok) StartWritesDone();
  }
  void OnReadDone(bool ok) override { read_ok = ok; }
  void OnDone(const Status& s) override {
    status = s;
    done.Notify();
  }
  SimpleRequest request;
  SimpleResponse response;
  bool read_ok = false;  // written before done is notified
  Status status;
  Notification done;
};

TEST(ChannelStateTest, AWaitForReadyStreamWaitsForAServerThatStartsLater) {
  const int port = ClosedLoopbackPort();
  std::shared_ptr<Channel> channel = CreateChannel(Target(port), FastBackoff());
  // Unregistered on the server: UNIMPLEMENTED proves it got there.
  ClientContext context;
  context.set_timeout(kHangTimeout);
  context.set_wait_for_ready(true);
  EchoOnceReactor reactor;
  channel->AsyncBidiStreamingCall(&context, "/h2rpc.test.State/Bidi", &reactor);
  reactor.StartWrite(&reactor.request);
  reactor.StartRead(&reactor.response);
  reactor.StartCall();
  ASSERT_TRUE(
      WaitFor([&] { return Entered(*channel, S::kTransientFailure) >= 2; }));
  EXPECT_FALSE(reactor.done.HasBeenNotified());
  EchoServer server(port);
  ASSERT_TRUE(server.start_status.ok()) << server.start_status.ToString();
  ASSERT_TRUE(reactor.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(reactor.status.code(), StatusCode::kUnimplemented)
      << reactor.status.ToString();
}

// ---------------------------------------------------------------------------
// The idle timeout.

TEST(ChannelStateTest, IdleTimeoutDropsTheConnectionAndTheNextCallReconnects) {
  EchoServer server;
  ASSERT_TRUE(server.start_status.ok()) << server.start_status.ToString();
  TcpProxy proxy(server.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  ChannelOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target(), options);
  ASSERT_TRUE(Call(channel.get(), kHangTimeout).ok());
  EXPECT_EQ(proxy.counters().accepted, 1);

  // No call for idle_timeout: IDLE, and the connection is gone, closed
  // after the client's GOAWAY.
  ASSERT_TRUE(WaitFor([&] { return channel->GetState(false) == S::kIdle; }))
      << Names(History(*channel));
  ASSERT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return c.open == 0; }, kHangTimeout))
      << proxy.counters().ToString();
  const TcpProxy::Counters idle = proxy.counters();
  ASSERT_EQ(idle.to_server.goaways.size(), 1u) << idle.ToString();
  EXPECT_EQ(idle.to_server.goaways[0].connection, 0);

  const Status again = Call(channel.get(), kHangTimeout);
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(proxy.counters().accepted, 2);
  EXPECT_THAT(History(*channel),
              ElementsAre(S::kIdle, S::kConnecting, S::kReady, S::kIdle,
                          S::kConnecting, S::kReady))
      << Names(History(*channel));
}

TEST(ChannelStateTest, ACallInProgressKeepsTheChannelFromGoingIdle) {
  EchoServer server;
  ASSERT_TRUE(server.start_status.ok()) << server.start_status.ToString();
  ChannelOptions options;
  options.idle_timeout = absl::Milliseconds(50);
  std::shared_ptr<Channel> channel = CreateChannel(server.target(), options);
  AsyncCall call(channel.get(), kHold, kHangTimeout, false);
  ASSERT_TRUE(server.held.WaitForNotificationWithTimeout(kHangTimeout));
  // Many idle timeouts while the call is held: still READY.
  EXPECT_FALSE(channel->WaitForStateChange(
      S::kReady, absl::Now() + absl::Milliseconds(300)));
  server.release.Notify();
  ASSERT_TRUE(call.Wait());
  EXPECT_TRUE(call.status.ok()) << call.status.ToString();
  ASSERT_TRUE(WaitFor([&] { return channel->GetState(false) == S::kIdle; }));
}

TEST(ChannelStateTest, AnIdleTimeoutStopsReconnecting) {
  ChannelOptions options = FastBackoff();
  options.idle_timeout = absl::Milliseconds(300);
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(ClosedLoopbackPort()), options);
  channel->GetState(true);
  ASSERT_TRUE(WaitFor([&] { return Entered(*channel, S::kIdle) == 2; }))
      << Names(History(*channel));
  EXPECT_GE(Entered(*channel, S::kTransientFailure), 1);
  const int64_t attempts = Entered(*channel, S::kConnecting);
  // Idle: no attempt for many backoff periods.
  EXPECT_FALSE(channel->WaitForStateChange(
      S::kIdle, absl::Now() + absl::Milliseconds(300)));
  EXPECT_EQ(Entered(*channel, S::kConnecting), attempts);
}

// ---------------------------------------------------------------------------
// A server restarted under load.

// Calls on `channel` from `threads` threads until stopped, counting
// outcomes. Without wait_for_ready a failed caller waits (a little) for the
// channel to connect again rather than spin.
class Load {
 public:
  Load(Channel* channel, bool wait_for_ready, int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, channel, wait_for_ready] {
        while (!stop_.load()) {
          const Status status = Call(channel, kHangTimeout, wait_for_ready);
          if (status.ok()) {
            ok_.fetch_add(1);
            continue;
          }
          if (status.code() == StatusCode::kUnavailable) {
            unavailable_.fetch_add(1);
          } else {
            std::lock_guard<std::mutex> lock(mu_);
            other_.push_back(status.ToString());
          }
          channel->WaitForConnected(absl::Now() + absl::Milliseconds(50));
        }
      });
    }
  }
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }
  int ok() const { return ok_.load(); }
  int unavailable() const { return unavailable_.load(); }
  std::vector<std::string> other() {
    std::lock_guard<std::mutex> lock(mu_);
    return other_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> unavailable_{0};
  std::mutex mu_;
  std::vector<std::string> other_;  // guarded by mu_
  std::vector<std::thread> threads_;
};

TEST(ChannelStateTest, AServerRestartUnderLoadLosesNoWaitForReadyCall) {
  auto server = std::make_unique<EchoServer>();
  ASSERT_TRUE(server->start_status.ok()) << server->start_status.ToString();
  const int port = server->port();
  std::shared_ptr<Channel> patient = CreateChannel(Target(port), FastBackoff());
  std::shared_ptr<Channel> impatient =
      CreateChannel(Target(port), FastBackoff());
  Load waiting(patient.get(), /*wait_for_ready=*/true, 2);
  Load failing(impatient.get(), /*wait_for_ready=*/false, 2);
  ASSERT_TRUE(
      WaitFor([&] { return waiting.ok() >= 50 && failing.ok() >= 50; }));

  // Down: a graceful shutdown (calls in flight finish, streams past the
  // GOAWAY are refused and retried), then nothing listens.
  server->stub.server().Shutdown(absl::Now() + kHangTimeout);
  server.reset();
  ASSERT_TRUE(WaitFor([&] {
    return failing.unavailable() >= 1 &&
           Entered(*patient, S::kTransientFailure) >= 1;
  }));
  const int waiting_ok = waiting.ok();
  const int failing_ok = failing.ok();

  // Up again on the same port: both recover.
  server = std::make_unique<EchoServer>(port);
  ASSERT_TRUE(server->start_status.ok()) << server->start_status.ToString();
  ASSERT_TRUE(WaitFor([&] {
    return waiting.ok() >= waiting_ok + 50 && failing.ok() >= failing_ok + 50;
  }));
  waiting.Stop();
  failing.Stop();
  EXPECT_EQ(waiting.unavailable(), 0);
  EXPECT_THAT(waiting.other(), ::testing::IsEmpty());
  EXPECT_GE(failing.unavailable(), 1);
  EXPECT_THAT(failing.other(), ::testing::IsEmpty());
}

// ---------------------------------------------------------------------------
// SHUTDOWN.

TEST(ChannelStateTest, DestroyingTheChannelReleasesItsWaiters) {
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(ClosedLoopbackPort()), NoRetry());
  channel->GetState(true);
  ASSERT_TRUE(WaitFor(
      [&] { return channel->GetState(false) == S::kTransientFailure; }));
  Channel* raw = channel.get();
  std::atomic<int> changed{-1};
  std::atomic<int> connected{-1};
  std::thread change_waiter([&] {
    changed = raw->WaitForStateChange(S::kTransientFailure,
                                      absl::Now() + kHangTimeout);
  });
  std::thread connect_waiter(
      [&] { connected = raw->WaitForConnected(absl::Now() + kHangTimeout); });
  ASSERT_TRUE(WaitFor([&] { return Watch(*channel).waiters() == 2; }));
  const absl::Time start = absl::Now();
  channel.reset();  // returns once both have left
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  change_waiter.join();
  connect_waiter.join();
  EXPECT_EQ(changed.load(), 1);    // SHUTDOWN is a change
  EXPECT_EQ(connected.load(), 0);  // and not READY
}

// ---------------------------------------------------------------------------
// Keepalive throttling.

// The server's preface (SETTINGS and the ACK of the client's), then GOAWAY
// with `error_code` and `debug_data`; then reads until the client closes.
std::function<void(int)> PrefaceThenGoAway(uint32_t error_code,
                                           std::string debug_data) {
  return [error_code, debug_data](int fd) {
    const std::string payload =
        absl::StrCat(std::string(4, '\0'),
                     std::string{static_cast<char>(error_code >> 24),
                                 static_cast<char>(error_code >> 16),
                                 static_cast<char>(error_code >> 8),
                                 static_cast<char>(error_code)},
                     debug_data);
    WriteAll(fd, absl::StrCat(EncodeFrame(0x4, 0, 0, ""),
                              EncodeFrame(0x4, 0x1, 0, ""),
                              EncodeFrame(0x7, 0, 0, payload)));
    shutdown(fd, SHUT_WR);
    ReadUntilEof(fd, kHangTimeout);
  };
}

constexpr uint32_t kEnhanceYourCalm = 0xb;

// The channel's keepalive options reach its connections: an HTTP/2 server
// that never answers a PING sees one after keepalive_time, and the channel
// drops the connection keepalive_timeout later (IDLE again).
TEST(ChannelStateTest, KeepaliveOptionsReachTheConnection) {
  std::atomic<int> pings{0};
  std::atomic<bool> closed_by_client{false};
  FakeServer server(ClosingAfter([&](int fd) {
    WriteAll(fd, absl::StrCat(EncodeFrame(0x4, 0, 0, ""),
                              EncodeFrame(0x4, 0x1, 0, "")));
    std::string received;
    char buffer[4096];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1,
               static_cast<int>(absl::ToInt64Milliseconds(kHangTimeout))) <=
          0) {
        return;
      }
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n == 0) closed_by_client = true;
      if (n <= 0) return;
      received.append(buffer, static_cast<size_t>(n));
      if (received.size() <= 24) continue;
      int seen = 0;
      for (const RawFrame& frame :
           ParseFrames(absl::string_view(received).substr(24))) {
        if (frame.type == 0x6 && (frame.flags & 0x1) == 0) ++seen;
      }
      pings = seen;  // never acknowledged
    }
  }));
  ASSERT_TRUE(server.ok());
  ChannelOptions options;
  options.keepalive_time = absl::Milliseconds(50);
  options.keepalive_timeout = absl::Milliseconds(100);
  options.keepalive_permit_without_calls = true;  // no call is made
  std::shared_ptr<Channel> channel = CreateChannel(server.target(), options);
  ASSERT_TRUE(channel->WaitForConnected(absl::Now() + kHangTimeout));
  ASSERT_TRUE(WaitFor([&] {
    return closed_by_client.load() && Entered(*channel, S::kIdle) == 2;
  })) << Names(History(*channel));
  EXPECT_GE(pings.load(), 1);
  EXPECT_THAT(History(*channel),
              ElementsAre(S::kIdle, S::kConnecting, S::kReady, S::kIdle))
      << Names(History(*channel));
}

absl::Duration KeepaliveTime(Channel& channel) {
  return internal::ChannelCoreAccess::Core(channel).keepalive_time();
}

// Connects once (the server answers GOAWAY at once), until IDLE again.
void ConnectOnce(Channel& channel) {
  const int64_t idle = Entered(channel, S::kIdle);
  channel.GetState(true);
  ASSERT_TRUE(WaitFor([&] { return Entered(channel, S::kIdle) > idle; }))
      << Names(History(channel));
}

TEST(ChannelStateTest, TooManyPingsDoublesTheKeepaliveTimeForNewConnections) {
  FakeServer server(
      ClosingAfter(PrefaceThenGoAway(kEnhanceYourCalm, "too_many_pings")));
  ASSERT_TRUE(server.ok());
  ChannelOptions options;
  options.keepalive_time = absl::Minutes(1);
  std::shared_ptr<Channel> channel = CreateChannel(server.target(), options);
  ConnectOnce(*channel);
  EXPECT_EQ(KeepaliveTime(*channel), absl::Minutes(2));
  ConnectOnce(*channel);
  EXPECT_EQ(KeepaliveTime(*channel), absl::Minutes(4));
  EXPECT_EQ(server.accepted(), 2);
}

TEST(ChannelStateTest, OtherGoAwaysLeaveTheKeepaliveTimeAlone) {
  FakeServer server(
      ClosingAfter(PrefaceThenGoAway(kEnhanceYourCalm, "something_else")));
  ASSERT_TRUE(server.ok());
  ChannelOptions options;
  options.keepalive_time = absl::Minutes(1);
  std::shared_ptr<Channel> channel = CreateChannel(server.target(), options);
  ConnectOnce(*channel);
  EXPECT_EQ(KeepaliveTime(*channel), absl::Minutes(1));
}

TEST(ChannelStateTest, WithoutKeepaliveTooManyPingsChangesNothing) {
  FakeServer server(
      ClosingAfter(PrefaceThenGoAway(kEnhanceYourCalm, "too_many_pings")));
  ASSERT_TRUE(server.ok());
  std::shared_ptr<Channel> channel = CreateChannel(server.target());
  ConnectOnce(*channel);
  EXPECT_EQ(KeepaliveTime(*channel), absl::InfiniteDuration());
}

}  // namespace
}  // namespace h2rpc
