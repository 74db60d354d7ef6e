#include "rpc/channel.h"

#include <poll.h>
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/client_context.h"
#include "rpc/connectivity_state.h"
#include "rpc/internal/name_resolver_impl.h"
#include "rpc/name_resolver.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"
#include "transport/io/event_loop.h"
#include "transport/io/resolver.h"
#include "transport/io/socket.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;
using transport::io::FileDescriptor;
using transport::io::Resolver;
using transport::io::SocketAddress;

// A NameResolver whose lookups `resolve` answers.
std::shared_ptr<NameResolver> MakeResolver(Resolver::ResolveFunction resolve) {
  return std::make_shared<NameResolver>(
      std::make_unique<internal::NameResolverImpl>(internal::NameResolverImpl{
          std::make_shared<Resolver>(std::move(resolve))}));
}

// Generous: only catches hangs, never measures speed.
constexpr absl::Duration kHangTimeout = absl::Seconds(30);
constexpr char kMethod[] = "/test.Service/Method";

std::string ThreadName() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

// A TCP listener on 127.0.0.1 that nobody answers: where the looked-up
// name points, so that a connect proves the lookup's result was used.
class Listener {
 public:
  Listener() {
    std::vector<SocketAddress> addresses;
    EXPECT_TRUE(
        transport::io::ResolveNumericTarget("127.0.0.1:0", &addresses).ok());
    EXPECT_TRUE(transport::io::ListenTcp(addresses[0], 4, &fd_).ok());
    SocketAddress bound;
    EXPECT_TRUE(transport::io::LocalAddress(fd_.get(), &bound).ok());
    port_ = bound.port();
  }
  int port() const { return port_; }
  // Waits up to `timeout` for a connection.
  bool Accept(absl::Duration timeout) {
    pollfd p = {fd_.get(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) !=
        1) {
      return false;
    }
    return transport::io::AcceptTcp(fd_.get(), nullptr).valid();
  }

 private:
  FileDescriptor fd_;
  int port_ = 0;
};

// A lookup that blocks until released, then answers 127.0.0.1 with the
// target's port. Its state is shared with the resolver thread, which may
// outlive the test's objects.
class BlockingLookup {
 public:
  Resolver::ResolveFunction Function() {
    return [state = state_](absl::string_view target,
                            std::vector<SocketAddress>* addresses) {
      {
        std::lock_guard<std::mutex> lock(state->mu);
        ++state->entered;
        state->entered_cv.notify_all();
      }
      state->release.WaitForNotification();
      return transport::io::ResolveNumericTarget(
          absl::StrCat("127.0.0.1", target.substr(target.rfind(':'))),
          addresses);
    };
  }
  bool WaitForLookup() {
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->entered_cv.wait_for(lock,
                                       absl::ToChronoNanoseconds(kHangTimeout),
                                       [&] { return state_->entered > 0; });
  }
  void Release() { state_->release.Notify(); }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable entered_cv;
    int entered = 0;  // guarded by mu
    Notification release;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// The outcome of one asynchronous call.
struct Outcome {
  Notification done;
  std::atomic<int> calls{0};
  Status status;
  std::string thread_name;

  absl::AnyInvocable<void(const Status&)> Callback() {
    return [this](const Status& s) {
      status = s;
      thread_name = ThreadName();
      calls.fetch_add(1);
      done.Notify();
    };
  }
};

// While the host-name lookup blocks, the channel's loop still runs: a
// call's deadline timer fires and fails it. The lookup's answer is then
// used to connect.
TEST(ChannelResolverTest, ABlockingLookupDoesNotStallTheLoop) {
  Listener listener;
  BlockingLookup lookup;
  ChannelOptions options;
  options.resolver = MakeResolver(lookup.Function());
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("slow.test:", listener.port()), options);

  ClientContext context;
  context.set_timeout(absl::Milliseconds(50));
  std::string response;
  Outcome outcome;
  channel->AsyncGenericUnaryCall(&context, kMethod, "request", &response,
                                 outcome.Callback());
  ASSERT_TRUE(lookup.WaitForLookup());
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(kHangTimeout))
      << "the call's deadline did not fire while the lookup blocked";
  EXPECT_EQ(outcome.status.code(), StatusCode::kDeadlineExceeded)
      << outcome.status.ToString();
  EXPECT_EQ(outcome.thread_name, "h2rpc-channel");

  lookup.Release();
  EXPECT_TRUE(listener.Accept(kHangTimeout))
      << "the channel did not connect to the looked-up address";
  EXPECT_EQ(outcome.calls.load(), 1);
}

TEST(ChannelResolverTest, ConnectTimeoutCoversTheLookup) {
  BlockingLookup lookup;
  ChannelOptions options;
  options.resolver = MakeResolver(lookup.Function());
  options.min_connect_timeout = absl::Milliseconds(50);
  options.initial_backoff = absl::Milliseconds(10);  // shorter: not the bound
  std::shared_ptr<Channel> channel = CreateChannel("slow.test:1", options);

  ClientContext context;  // no deadline: only the connect timeout ends it
  std::string response;
  Outcome outcome;
  channel->AsyncGenericUnaryCall(&context, kMethod, "request", &response,
                                 outcome.Callback());
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(outcome.status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(outcome.status.message(),
              HasSubstr("resolving 'slow.test:1' timed out after 50ms"));
  lookup.Release();
}

// A lookup that answers at once with what the test set: 127.0.0.1 with each
// of `ports`, or `error`. Records when each lookup ran. Shared with the
// resolver thread.
class ScriptedLookup {
 public:
  Resolver::ResolveFunction Function() {
    return [state = state_](absl::string_view,
                            std::vector<SocketAddress>* addresses) {
      std::lock_guard<std::mutex> lock(state->mu);
      state->times.push_back(absl::Now());
      if (!state->error.ok()) return state->error;
      addresses->clear();
      for (int port : state->ports) {
        std::vector<SocketAddress> one;
        Status status = transport::io::ResolveNumericTarget(
            absl::StrCat("127.0.0.1:", port), &one);
        if (!status.ok()) return status;
        addresses->push_back(one.front());
      }
      return Status();
    };
  }
  void Answer(std::vector<int> ports) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->ports = std::move(ports);
    state_->error = Status();
  }
  void Fail(Status error) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->error = std::move(error);
  }
  std::vector<absl::Time> times() {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->times;
  }

 private:
  struct State {
    std::mutex mu;
    std::vector<int> ports;         // guarded by mu
    Status error;                   // guarded by mu
    std::vector<absl::Time> times;  // guarded by mu
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// A port nothing listens on.
int ClosedPort() {
  Listener listener;
  return listener.port();  // closed when `listener` goes
}

// Every address of the name is tried: the first refuses, the second takes
// the connection.
TEST(ChannelResolverTest, EveryAddressOfTheNameIsTried) {
  Listener listener;
  ScriptedLookup lookup;
  lookup.Answer({ClosedPort(), listener.port()});
  ChannelOptions options;
  options.resolver = MakeResolver(lookup.Function());
  std::shared_ptr<Channel> channel = CreateChannel("two.test:1", options);
  channel->GetState(true);
  EXPECT_TRUE(listener.Accept(kHangTimeout))
      << "the channel did not try the name's second address";
  EXPECT_EQ(lookup.times().size(), 1u);
}

// After a failed connect the name is looked up again, no sooner than
// dns_min_time_between_resolutions after the lookup before, and the new
// address is used.
TEST(ChannelResolverTest, AConnectFailureLooksTheNameUpAgain) {
  Listener listener;
  ScriptedLookup lookup;
  lookup.Answer({ClosedPort()});
  ChannelOptions options;
  options.resolver = MakeResolver(lookup.Function());
  options.dns_min_time_between_resolutions = absl::Milliseconds(200);
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(10);
  std::shared_ptr<Channel> channel = CreateChannel("moved.test:1", options);
  channel->GetState(true);
  ASSERT_TRUE(WaitFor([&] { return lookup.times().size() >= 1; }));
  lookup.Answer({listener.port()});
  EXPECT_TRUE(listener.Accept(kHangTimeout))
      << "the channel did not connect to the name's new address";
  const std::vector<absl::Time> times = lookup.times();
  ASSERT_GE(times.size(), 2u);
  // The channel times the interval from its loop iteration's start, before
  // the lookup thread reads its clock for the first lookup (by a scheduling
  // delay, milliseconds under a sanitizer); 150 ms still tells the 200 ms
  // throttle from the 10 ms backoff that would otherwise pace the lookup.
  EXPECT_GE(times[1] - times[0], absl::Milliseconds(150));
}

TEST(ChannelResolverTest, ANameIsLookedUpAgainEveryRefreshInterval) {
  Listener listener;
  ScriptedLookup lookup;
  lookup.Answer({listener.port()});
  ChannelOptions options;
  options.resolver = MakeResolver(lookup.Function());
  options.dns_refresh_interval = absl::Milliseconds(50);
  std::shared_ptr<Channel> channel = CreateChannel("steady.test:1", options);
  channel->GetState(true);
  EXPECT_TRUE(WaitFor([&] { return lookup.times().size() >= 3; }));
  const std::vector<absl::Time> times = lookup.times();
  for (size_t i = 1; i < times.size(); ++i) {
    EXPECT_GE(times[i] - times[i - 1], absl::Milliseconds(45));
  }
}

TEST(ChannelResolverTest, AFailedLookupIsATransientFailureSayingWhy) {
  ScriptedLookup lookup;
  lookup.Fail(Status(StatusCode::kUnavailable, "nowhere.test: no such host"));
  ChannelOptions options;
  options.resolver = MakeResolver(lookup.Function());
  std::shared_ptr<Channel> channel = CreateChannel("nowhere.test:1", options);
  ClientContext context;
  context.set_timeout(kHangTimeout);
  std::string response;
  const Status status =
      channel->GenericUnaryCall(&context, kMethod, "request", &response);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("no such host"));
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kTransientFailure);
}

// A channel destroyed while its lookup blocks goes at once; the lookup's
// result, when it comes, reaches nothing (ASan would see a use after free).
// The channel owns the resolver here, as by default.
TEST(ChannelResolverTest, DestroyedDuringALookupGoesAtOnce) {
  BlockingLookup lookup;
  // Notified when the resolver thread, the last owner of the lookup
  // function, has exited.
  auto thread_exited = std::make_shared<Notification>();
  struct NotifyOnDestroy {
    std::shared_ptr<Notification> notification;
    ~NotifyOnDestroy() { notification->Notify(); }
  };
  auto on_destroy = std::make_shared<NotifyOnDestroy>();
  on_destroy->notification = thread_exited;
  ChannelOptions options;
  options.resolver = MakeResolver(
      [blocking = lookup.Function(), on_destroy](
          absl::string_view target, std::vector<SocketAddress>* addresses) {
        return blocking(target, addresses);
      });
  on_destroy.reset();
  Listener listener;
  auto channel =
      CreateChannel(absl::StrCat("slow.test:", listener.port()), options);
  options.resolver.reset();  // the channel is the resolver's last owner

  ClientContext context;
  std::string response;
  Outcome outcome;
  channel->AsyncGenericUnaryCall(&context, kMethod, "request", &response,
                                 outcome.Callback());
  ASSERT_TRUE(lookup.WaitForLookup());

  Notification destroyed;
  std::thread destroyer([&] {
    channel.reset();
    destroyed.Notify();
  });
  EXPECT_TRUE(destroyed.WaitForNotificationWithTimeout(absl::Seconds(5)))
      << "~Channel waited for the blocked lookup";
  destroyer.join();
  ASSERT_TRUE(outcome.done.HasBeenNotified());
  EXPECT_EQ(outcome.status.code(), StatusCode::kCancelled);

  lookup.Release();
  ASSERT_TRUE(thread_exited->WaitForNotificationWithTimeout(kHangTimeout))
      << "the resolver thread did not exit after its lookup";
  EXPECT_EQ(outcome.calls.load(), 1);
  // The dropped result opened no connection.
  EXPECT_FALSE(listener.Accept(absl::ZeroDuration()));
}

// A call that fails before it starts completes on the channel's loop
// thread, after AsyncUnaryCall has returned: a caller holding a lock that
// `done` takes does not deadlock.
class UnstartedCallTest : public ::testing::Test {
 protected:
  struct Result {
    Notification done;
    std::thread::id thread;
    std::string thread_name;
    bool caller_returned = false;  // seen by `done`
    Status status;
  };

  // Starts a call on `start` while holding mu_, which `done` also takes.
  void StartHoldingTheLock(
      const std::function<void(absl::AnyInvocable<void(const Status&)>)>& start,
      Result* result) {
    const std::thread::id caller = std::this_thread::get_id();
    std::unique_lock<std::mutex> lock(mu_);
    start([this, result, caller](const Status& status) {
      result->thread = std::this_thread::get_id();
      result->thread_name = ThreadName();
      result->status = status;
      // Taking mu_ on the caller's own stack would deadlock: record the
      // failure instead.
      if (result->thread != caller) {
        std::lock_guard<std::mutex> done_lock(mu_);
        result->caller_returned = caller_returned_;
      }
      result->done.Notify();
    });
    caller_returned_ = true;
    lock.unlock();
    ASSERT_TRUE(result->done.WaitForNotificationWithTimeout(kHangTimeout));
    EXPECT_NE(result->thread, caller) << "`done` ran on the caller's stack";
    EXPECT_TRUE(result->caller_returned);
    std::lock_guard<std::mutex> reset(mu_);
    caller_returned_ = false;
  }

  std::mutex mu_;
  bool caller_returned_ = false;  // guarded by mu_
};

TEST_F(UnstartedCallTest, CompletesOnTheLoopThread) {
  ChannelOptions options;
  options.connection.max_send_message_size = 16;
  std::shared_ptr<Channel> channel = CreateChannel("127.0.0.1:1", options);

  ClientContext past_deadline;
  past_deadline.set_deadline(absl::Now() - absl::Seconds(1));
  ClientContext cancelled;
  cancelled.TryCancel();
  ClientContext oversized;
  SimpleRequest request;
  SimpleResponse response;
  std::string response_bytes;

  Result deadline_result;
  StartHoldingTheLock(
      [&](auto done) {
        channel->AsyncUnaryCall(&past_deadline, kMethod, request, &response,
                                std::move(done));
      },
      &deadline_result);
  EXPECT_EQ(deadline_result.status.code(), StatusCode::kDeadlineExceeded);

  Result cancelled_result;
  StartHoldingTheLock(
      [&](auto done) {
        channel->AsyncGenericUnaryCall(&cancelled, kMethod, "request",
                                       &response_bytes, std::move(done));
      },
      &cancelled_result);
  EXPECT_EQ(cancelled_result.status.code(), StatusCode::kCancelled);

  Result oversized_result;
  request.mutable_payload()->set_body(std::string(100, 'x'));
  StartHoldingTheLock(
      [&](auto done) {
        channel->AsyncUnaryCall(&oversized, kMethod, request, &response,
                                std::move(done));
      },
      &oversized_result);
  EXPECT_EQ(oversized_result.status.code(), StatusCode::kResourceExhausted);

  // All on the loop thread, the one that completes started calls too.
  EXPECT_EQ(deadline_result.thread_name, "h2rpc-channel");
  EXPECT_EQ(cancelled_result.thread, deadline_result.thread);
  EXPECT_EQ(oversized_result.thread, deadline_result.thread);
  ClientContext refused;
  Outcome started;
  channel->AsyncGenericUnaryCall(&refused, kMethod, "request", &response_bytes,
                                 started.Callback());
  ASSERT_TRUE(started.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(started.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(started.thread_name, "h2rpc-channel");
}

// With no loop (it could not start), `done` still runs off the caller's
// stack, with the loop's error.
TEST_F(UnstartedCallTest, CompletesOffTheCallersStackWithoutALoop) {
  ChannelOptions options;
  options.loop_cpu = 1 << 20;  // beyond CPU_SETSIZE: the loop cannot start
  std::shared_ptr<Channel> channel = CreateChannel("127.0.0.1:1", options);
  ClientContext context;
  std::string response;
  Result result;
  StartHoldingTheLock(
      [&](auto done) {
        channel->AsyncGenericUnaryCall(&context, kMethod, "request", &response,
                                       std::move(done));
      },
      &result);
  EXPECT_EQ(result.status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status.message(), HasSubstr("CPU"));
}

constexpr char kEcho[] = "/test.Service/Echo";
constexpr char kBidiEcho[] = "/test.Service/BidiEcho";

// A server with `options` that echoes the payload of unary (synchronous
// handler) and bidi-streaming calls; its port in `*port`.
std::unique_ptr<Server> StartEchoServer(const ServerOptions& options,
                                        int* port) {
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .SetOptions(options)
          .AddListeningPort("127.0.0.1:0", port)
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              kEcho,
              [](ServerContext*, const SimpleRequest& in, SimpleResponse* out) {
                out->mutable_payload()->set_body(in.payload().body());
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
              })
          .BuildAndStart(&status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return server;
}

class EchoServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartEchoServer(ServerOptions(), &port_);
    ASSERT_NE(server_, nullptr);
  }

  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

  int port_ = 0;
  std::unique_ptr<Server> server_;
};

// Writes one message, reads its echo, half-closes.
class EchoOnce final : public ClientBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  explicit EchoOnce(const std::string& body) {
    request_.mutable_payload()->set_body(body);
  }
  void Begin() {
    StartWrite(&request_);
    StartRead(&response_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) StartWritesDone();
  }
  void OnReadDone(bool ok) override { read_ok_ = ok; }
  void OnDone(const Status& status) override {
    status_ = status;
    done_.Notify();
  }

  Notification done_;
  // Written on the loop thread before done_ is notified.
  SimpleRequest request_;
  SimpleResponse response_;
  bool read_ok_ = false;
  Status status_;
};

// A stub holds the channel's shared_ptr: the channel lives while it does,
// whoever else let go of it.
TEST_F(EchoServerTest, AHolderKeepsTheChannelAlive) {
  struct Holder {
    std::shared_ptr<Channel> channel;
  };
  std::shared_ptr<Channel> channel = CreateChannel(target());
  Holder holder{channel};
  channel.reset();
  ASSERT_EQ(holder.channel.use_count(), 1);

  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  request.mutable_payload()->set_body("held");
  SimpleResponse response;
  const Status status =
      holder.channel->UnaryCall(&context, kEcho, request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "held");
}

// `done` (on the loop thread) drops the channel's last reference: the
// channel cannot stop its loop from the loop itself, so it is torn down on
// another thread; nothing deadlocks and nothing is used after it is freed.
TEST_F(EchoServerTest, LastReferenceDroppedInsideDone) {
  // Notified once the channel is gone: its resolver, which only the channel
  // holds, goes last.
  auto gone = std::make_shared<Notification>();
  struct NotifyOnDestroy {
    std::shared_ptr<Notification> notification;
    ~NotifyOnDestroy() { notification->Notify(); }
  };
  auto on_destroy = std::make_shared<NotifyOnDestroy>();
  on_destroy->notification = gone;
  ChannelOptions options;
  options.resolver =
      MakeResolver([on_destroy](absl::string_view target,
                                std::vector<SocketAddress>* addresses) {
        return transport::io::ResolveNumericTarget(target, addresses);
      });
  on_destroy.reset();
  std::shared_ptr<Channel> channel = CreateChannel(target(), options);
  options.resolver.reset();
  Channel* raw = channel.get();

  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  request.mutable_payload()->set_body("last");
  SimpleResponse response;
  Notification done;
  Status status;
  std::string thread_name;
  raw->AsyncUnaryCall(
      &context, kEcho, request, &response,
      [&, channel = std::move(channel)](const Status& s) mutable {
        status = s;
        thread_name = ThreadName();
        channel.reset();
        done.Notify();
      });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), "last");
  EXPECT_EQ(thread_name, "h2rpc-channel");
  EXPECT_TRUE(gone->WaitForNotificationWithTimeout(kHangTimeout))
      << "the channel released on its loop thread was never destroyed";
}

// The loop reads a call's method path after the call has returned: when it
// starts the stream (a fresh channel connects first) and on a transparent
// retry. The caller's string may be gone by then.
TEST_F(EchoServerTest, AsyncCallsCopyTheMethodPath) {
  std::shared_ptr<Channel> channel = CreateChannel(target());
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  request.mutable_payload()->set_body("unary");
  SimpleResponse response;
  Outcome outcome;
  {
    // On the heap (longer than a short string's inline buffer), overwritten
    // and freed before the channel has connected.
    auto method = std::make_unique<std::string>(kEcho);
    channel->AsyncUnaryCall(&context, *method, request, &response,
                            outcome.Callback());
    method->assign(method->size(), 'x');
  }
  ASSERT_TRUE(outcome.done.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.ToString();
  EXPECT_EQ(response.payload().body(), "unary");
}

TEST_F(EchoServerTest, StreamingCallsCopyTheMethodPath) {
  std::shared_ptr<Channel> channel = CreateChannel(target());
  ClientContext context;
  context.set_timeout(kHangTimeout);
  EchoOnce reactor("bidi");
  {
    auto method = std::make_unique<std::string>(kBidiEcho);
    channel->AsyncBidiStreamingCall(&context, *method, &reactor);
    method->assign(method->size(), 'x');
  }
  // Started only now, after the path has gone.
  reactor.Begin();
  ASSERT_TRUE(reactor.done_.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(reactor.status_.ok()) << reactor.status_.ToString();
  EXPECT_TRUE(reactor.read_ok_);
  EXPECT_EQ(reactor.response_.payload().body(), "bidi");
}

// Busy-polling loops on both sides (ChannelOptions and ServerOptions
// busy_poll_us) serve unary calls, whose synchronous handler runs on a
// worker thread and posts its response back to a polling server loop, and a
// streaming call.
TEST(BusyPollTest, PollingChannelAndServerServeCalls) {
  ServerOptions server_options;
  server_options.num_loops = 1;
  server_options.busy_poll_us = 200;
  int port = 0;
  std::unique_ptr<Server> server = StartEchoServer(server_options, &port);
  ASSERT_NE(server, nullptr);

  ChannelOptions options;
  options.busy_poll_us = 200;
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("127.0.0.1:", port), options);
  for (int i = 0; i < 20; ++i) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    request.mutable_payload()->set_body(absl::StrCat("poll ", i));
    SimpleResponse response;
    const Status call = channel->UnaryCall(&context, kEcho, request, &response);
    ASSERT_TRUE(call.ok()) << call.ToString();
    EXPECT_EQ(response.payload().body(), absl::StrCat("poll ", i));
  }
  EchoOnce reactor("bidi poll");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  channel->AsyncBidiStreamingCall(&context, kBidiEcho, &reactor);
  reactor.Begin();
  ASSERT_TRUE(reactor.done_.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(reactor.status_.ok()) << reactor.status_.ToString();
  EXPECT_EQ(reactor.response_.payload().body(), "bidi poll");
}

// A target gRPC's naming syntax does not allow makes a channel whose every
// call fails with INVALID_ARGUMENT saying why.
TEST(ChannelTargetTest, AnUnusableTargetFailsEveryCallSayingWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"foo:///bar", "foo"},
      {"dns://8.8.8.8/example.com:443", "authorit"},
      {"ipv4:example.com:80", "ipv4"},
      {"unix:", "unix"},
  };
  for (const auto& [target, message] : cases) {
    SCOPED_TRACE(target);
    std::shared_ptr<Channel> channel = CreateChannel(target);
    EXPECT_EQ(channel->GetState(true), ConnectivityState::kTransientFailure);
    ClientContext context;
    context.set_timeout(kHangTimeout);
    std::string response;
    const Status status =
        channel->GenericUnaryCall(&context, kMethod, "request", &response);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr(message));
  }
}

TEST(ChannelOptionsTest, ConnectionManagementDefaultsAreGrpcs) {
  const ChannelOptions options;
  EXPECT_EQ(options.min_connect_timeout, absl::Seconds(20));
  EXPECT_EQ(options.initial_backoff, absl::Seconds(1));
  EXPECT_EQ(options.backoff_multiplier, 1.6);
  EXPECT_EQ(options.backoff_jitter, 0.2);
  EXPECT_EQ(options.max_backoff, absl::Seconds(120));
  EXPECT_EQ(options.idle_timeout, absl::Minutes(30));
  EXPECT_EQ(options.keepalive_time, absl::InfiniteDuration());
  EXPECT_EQ(options.keepalive_timeout, absl::Seconds(20));
  EXPECT_FALSE(options.keepalive_permit_without_calls);
  EXPECT_EQ(options.dns_min_time_between_resolutions, absl::Seconds(30));
  EXPECT_EQ(options.lb_policy, "pick_first");
  EXPECT_EQ(options.busy_poll_us, 0);
}

// A bad value makes a channel that never connects: every call fails with
// INVALID_ARGUMENT naming the field and the value, and the channel says
// TRANSIENT_FAILURE.
TEST(ChannelOptionsTest, AnInvalidValueFailsEveryCallNamingIt) {
  struct Case {
    std::function<void(ChannelOptions*)> set;
    const char* message;
  };
  const std::vector<Case> cases = {
      {[](ChannelOptions* o) { o->min_connect_timeout = absl::ZeroDuration(); },
       "ChannelOptions::min_connect_timeout is 0; it must be more than zero"},
      {[](ChannelOptions* o) { o->initial_backoff = -absl::Seconds(1); },
       "ChannelOptions::initial_backoff is -1s"},
      {[](ChannelOptions* o) { o->max_backoff = absl::InfiniteDuration(); },
       "ChannelOptions::max_backoff is infinite; it must be finite"},
      {[](ChannelOptions* o) { o->max_backoff = absl::Milliseconds(500); },
       "ChannelOptions::max_backoff is 500ms; it must be at least "
       "initial_backoff (1s)"},
      {[](ChannelOptions* o) { o->backoff_multiplier = 0.5; },
       "ChannelOptions::backoff_multiplier is 0.5"},
      {[](ChannelOptions* o) { o->backoff_jitter = 1; },
       "ChannelOptions::backoff_jitter is 1"},
      {[](ChannelOptions* o) { o->idle_timeout = absl::ZeroDuration(); },
       "ChannelOptions::idle_timeout is 0"},
      {[](ChannelOptions* o) { o->keepalive_time = absl::ZeroDuration(); },
       "ChannelOptions::keepalive_time is 0"},
      {[](ChannelOptions* o) { o->keepalive_timeout = -absl::Milliseconds(1); },
       "ChannelOptions::keepalive_timeout is -1ms"},
      {[](ChannelOptions* o) {
         o->dns_min_time_between_resolutions = absl::ZeroDuration();
       },
       "ChannelOptions::dns_min_time_between_resolutions is 0"},
      {[](ChannelOptions* o) { o->dns_refresh_interval = -absl::Seconds(1); },
       "ChannelOptions::dns_refresh_interval is -1s"},
      {[](ChannelOptions* o) { o->lb_policy = "grpclb"; },
       "ChannelOptions::lb_policy is \"grpclb\"; it must name a policy: "
       "pick_first, round_robin, weighted_round_robin, "
       "outlier_detection_experimental, or one registered with "
       "RegisterLbPolicyFactory"},
      {[](ChannelOptions* o) {
         o->service_config = R"({"loadBalancingConfig": [{"ring_hash": {}}]})";
       },
       "service config: loadBalancingConfig"},
      {[](ChannelOptions* o) { o->service_config = "{"; }, "service config"},
      {[](ChannelOptions* o) {
         o->service_config = R"({"methodConfig": [{"name": [{}],
             "hedgingPolicy": {"maxAttempts": 2}}]})";
       },
       "service config: methodConfig[0].hedgingPolicy: hedging is not "
       "supported"},
      {[](ChannelOptions* o) { o->busy_poll_us = -1; },
       "ChannelOptions::busy_poll_us is -1; it must be from 0 to 1000000 "
       "(microseconds)"},
      {[](ChannelOptions* o) { o->busy_poll_us = 1000001; },
       "ChannelOptions::busy_poll_us is 1000001"},
  };
  Listener listener;  // would accept a connection, if one were made
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    ChannelOptions options;
    c.set(&options);
    std::shared_ptr<Channel> channel =
        CreateChannel(absl::StrCat("127.0.0.1:", listener.port()), options);
    EXPECT_EQ(channel->GetState(true), ConnectivityState::kTransientFailure);
    ClientContext context;
    context.set_timeout(kHangTimeout);
    context.set_wait_for_ready(true);  // fails all the same
    std::string response;
    const Status status =
        channel->GenericUnaryCall(&context, kMethod, "request", &response);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr(c.message));
    EXPECT_FALSE(
        channel->WaitForConnected(absl::Now() + absl::Milliseconds(20)));
  }
  EXPECT_FALSE(listener.Accept(absl::ZeroDuration()));
}

}  // namespace
}  // namespace h2rpc
