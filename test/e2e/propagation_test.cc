// Deadline and cancellation propagation down a chain of h2rpc servers over
// real loopback sockets: client -> A -> B, A's handlers making their calls
// to B with a ClientContext made from their ServerContext, in each of A's
// handler forms (synchronous unary, callback unary, synchronous bidi) and
// from a thread of A's own on a second channel.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
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
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;
using ::testing::AnyOf;
using ::testing::HasSubstr;

// B's methods.
constexpr char kWaitForCancel[] = "/h2rpc.test.B/WaitForCancel";
constexpr char kQuick[] = "/h2rpc.test.B/Quick";
constexpr char kGate[] = "/h2rpc.test.B/Gate";
// A's: each calls B's method named in the request's payload.
constexpr char kRelaySync[] = "/h2rpc.test.A/RelaySync";
constexpr char kRelayCallback[] = "/h2rpc.test.A/RelayCallback";
constexpr char kRelayBidi[] = "/h2rpc.test.A/RelayBidi";
constexpr char kRelayFromThread[] = "/h2rpc.test.A/RelayFromThread";
// Calls B with a context that inherits only the cancellation.
constexpr char kRelayOwnDeadline[] = "/h2rpc.test.A/RelayOwnDeadline";
// A's handlers that check the children's edge cases.
constexpr char kChildThenWait[] = "/h2rpc.test.A/ChildThenWait";
constexpr char kWaitThenChild[] = "/h2rpc.test.A/WaitThenChild";
constexpr char kStartChildAndReturn[] = "/h2rpc.test.A/StartChildAndReturn";
constexpr char kReportDeadline[] = "/h2rpc.test.A/ReportDeadline";

// What one case saw: B of its call, A of its call to B. Each case has its
// own (kept until the fixture goes: a handler may still be returning when
// the test moves on).
struct Case {
  Notification b_started;
  Notification b_saw_cancel;
  absl::Time b_deadline;
  Notification gate;       // opened by the test: B's kGate returns
  Notification a_waiting;  // A's handler waits for its cancellation
  Mutex mu;
  Status child_status ABSL_GUARDED_BY(mu);
  bool child_done ABSL_GUARDED_BY(mu) = false;
  int quick_calls ABSL_GUARDED_BY(mu) = 0;
  absl::Time quick_deadline ABSL_GUARDED_BY(mu);
};

class PropagationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NextCase();
    StartB();
    b_channel_ = b_.NewChannel();
    b_other_channel_ = b_.NewChannel();
    StartA();
    a_channel_ = a_.NewChannel();
  }

  // Starts a new case.
  void NextCase() {
    cases_.push_back(std::make_unique<Case>());
    case_.store(cases_.back().get());
  }
  Case& now() { return *case_.load(); }

  void StartB() {
    ServerOptions options;
    options.num_loops = 2;
    b_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kWaitForCancel,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              Case& c = now();
              c.b_deadline = context->deadline();
              c.b_started.Notify();
              if (!WaitFor([context] { return context->IsCancelled(); })) {
                return Status(StatusCode::kAborted, "B saw no cancel");
              }
              c.b_saw_cancel.Notify();
              return Status(StatusCode::kCancelled, "B saw the cancel");
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kQuick,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              Case& c = now();
              MutexLock lock(&c.mu);
              ++c.quick_calls;
              c.quick_deadline = context->deadline();
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kGate, [this](ServerContext* context, const SimpleRequest&,
                          SimpleResponse*) {
              Case& c = now();
              c.b_started.Notify();
              // Ends when the test opens the gate or the call is
              // cancelled, whichever is first.
              if (!WaitFor([&] {
                    return c.gate.HasBeenNotified() || context->IsCancelled();
                  })) {
                return Status(StatusCode::kAborted, "neither");
              }
              if (context->IsCancelled()) c.b_saw_cancel.Notify();
              return Status();
            });
    const Status status = b_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  // The status of A's call to B, kept for the test to check.
  static void RecordChild(Case& c, const Status& status) {
    MutexLock lock(&c.mu);
    c.child_status = status;
    c.child_done = true;
  }
  static bool ChildDone(Case& c) {
    MutexLock lock(&c.mu);
    return c.child_done;
  }
  static Status ChildStatus(Case& c) {
    MutexLock lock(&c.mu);
    return c.child_status;
  }
  bool ChildDone() { return ChildDone(now()); }
  Status ChildStatus() { return ChildStatus(now()); }

  // A's child call, made from `parent` on `channel`, to the B method the
  // request names.
  Status CallB(const ServerContext& parent, Channel& channel,
               const SimpleRequest& request,
               PropagationOptions options = PropagationOptions()) {
    Case& c = now();
    ClientContext child(parent, options);
    SimpleResponse response;
    const Status status = channel.UnaryCall(&child, request.payload().body(),
                                            SimpleRequest(), &response);
    RecordChild(c, status);
    return status;
  }

  void StartA() {
    ServerOptions options;
    options.num_loops = 2;
    a_.builder()
        .SetOptions(options)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kRelaySync,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse*) {
              return CallB(*context, *b_channel_, request);
            })
        .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
            kRelayCallback,
            [this](ServerContext* context, const SimpleRequest* request,
                   SimpleResponse*, UnaryDone done) {
              // The child's state lives until its call is done, which
              // comes before A's (done runs from it).
              struct Child {
                std::unique_ptr<ClientContext> context;
                SimpleResponse response;
              };
              auto child = std::make_unique<Child>();
              child->context = ClientContext::FromServerContext(*context);
              Child* raw = child.get();
              b_channel_->AsyncUnaryCall(
                  raw->context.get(), request->payload().body(),
                  SimpleRequest(), &raw->response,
                  [&c = now(), child = std::move(child),
                   done = std::move(done)](const Status& status) mutable {
                    RecordChild(c, status);
                    done(status);
                  });
            })
        .RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
            kRelayBidi,
            [this](ServerContext* context,
                   ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) {
              SimpleRequest request;
              if (!stream->Read(&request)) {
                return Status(StatusCode::kInvalidArgument, "no request");
              }
              return CallB(*context, *b_channel_, request);
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kRelayFromThread,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse*) {
              Status status;
              std::thread thread([&] {
                status = CallB(*context, *b_other_channel_, request);
              });
              thread.join();
              return status;
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kRelayOwnDeadline,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse*) {
              return CallB(*context, *b_channel_, request,
                           PropagationOptions().disable_deadline_propagation());
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kChildThenWait,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              SimpleRequest quick;
              quick.mutable_payload()->set_body(kQuick);
              const Status child = CallB(*context, *b_channel_, quick);
              now().a_waiting.Notify();
              if (!WaitFor([context] { return context->IsCancelled(); })) {
                return Status(StatusCode::kAborted, "A saw no cancel");
              }
              return child;
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kWaitThenChild,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse*) {
              now().a_waiting.Notify();
              if (!WaitFor([context] { return context->IsCancelled(); })) {
                return Status(StatusCode::kAborted, "A saw no cancel");
              }
              SimpleRequest quick;
              quick.mutable_payload()->set_body(kQuick);
              return CallB(*context, *b_channel_, quick);
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kStartChildAndReturn,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse*) {
              // The child outlives A's call: its context is the test's.
              PropagationOptions options;
              if (request.fill_username()) {
                options.disable_cancellation_propagation();
              }
              Case& c = now();
              orphan_context_ =
                  ClientContext::FromServerContext(*context, options);
              b_channel_->AsyncUnaryCall(
                  orphan_context_.get(), kGate, SimpleRequest(),
                  &orphan_response_,
                  [&c](const Status& status) { RecordChild(c, status); });
              // A's call ends once B runs the child.
              if (!c.b_started.WaitForNotificationWithTimeout(kHangTimeout)) {
                return Status(StatusCode::kAborted, "B did not start");
              }
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kReportDeadline,
            [this](ServerContext* context, const SimpleRequest& request,
                   SimpleResponse*) {
              PropagationOptions options;
              if (request.fill_username()) {
                options.disable_deadline_propagation();
              }
              ClientContext child(*context, options);
              SimpleResponse response;
              return b_channel_->UnaryCall(&child, kQuick, SimpleRequest(),
                                           &response);
            });
    const Status status = a_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  // A request for A's relay methods: call B's `b_method`.
  static SimpleRequest Relay(absl::string_view b_method) {
    SimpleRequest request;
    request.mutable_payload()->set_body(std::string(b_method));
    return request;
  }

  Status CallA(absl::string_view method, ClientContext* context,
               const SimpleRequest& request) {
    SimpleResponse response;
    if (method != kRelayBidi) {
      return a_channel_->UnaryCall(context, method, request, &response);
    }
    auto stream = a_channel_->BidiStreamingCall<SimpleRequest, SimpleResponse>(
        context, method);
    stream->Write(request);
    stream->WritesDone();
    return stream->Finish();
  }

  StubServer b_;
  StubServer a_;
  std::shared_ptr<Channel> b_channel_;
  std::shared_ptr<Channel> b_other_channel_;
  std::shared_ptr<Channel> a_channel_;
  std::vector<std::unique_ptr<Case>> cases_;
  std::atomic<Case*> case_{nullptr};
  std::unique_ptr<ClientContext> orphan_context_;
  SimpleResponse orphan_response_;
};

constexpr const char* kRelays[] = {kRelaySync, kRelayCallback, kRelayBidi,
                                   kRelayFromThread};

TEST_F(PropagationTest, DeadlineExpiresInB) {
  for (const char* relay : kRelays) {
    SCOPED_TRACE(relay);
    NextCase();
    ClientContext context;
    const absl::Time deadline = absl::Now() + absl::Milliseconds(300);
    context.set_deadline(deadline);
    const Status status = CallA(relay, &context, Relay(kWaitForCancel));
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded)
        << status.ToString();
    ASSERT_TRUE(
        now().b_saw_cancel.WaitForNotificationWithTimeout(kHangTimeout));
    // B got the client's deadline, through A.
    EXPECT_LE(now().b_deadline, deadline + absl::Milliseconds(50));
    // A's call to B ends at the deadline it inherited, or when A's own
    // call is cancelled (A's deadline passing: DEADLINE_EXCEEDED; the
    // client's RST_STREAM at its deadline reaching A first: CANCELLED).
    ASSERT_TRUE(WaitFor([this] { return ChildDone(); }));
    EXPECT_THAT(ChildStatus().code(),
                AnyOf(StatusCode::kDeadlineExceeded, StatusCode::kCancelled))
        << ChildStatus().ToString();
  }
}

// A client that never resets its stream (so A's own deadline timer, not a
// RST_STREAM, ends A's call): A's call to B, which did not inherit the
// deadline, is cancelled with DEADLINE_EXCEEDED when A's deadline passes.
TEST_F(PropagationTest, ParentDeadlineEndsAChildWithDeadlineExceeded) {
  std::string error;
  std::unique_ptr<RawH2Client> client = RawH2Client::Connect(a_.port(), &error);
  ASSERT_NE(client, nullptr) << error;
  RawRequest request;
  request.headers = GrpcRequestHeaders(kRelayOwnDeadline, a_.port());
  request.headers.emplace_back("grpc-timeout", "200m");
  request.body = GrpcFrame(Relay(kWaitForCancel).SerializeAsString());
  const RawResponse response = client->Call(request, kHangTimeout);
  EXPECT_EQ(response.Trailer("grpc-status"), "4") << response.DebugString();
  ASSERT_TRUE(now().b_saw_cancel.WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_EQ(now().b_deadline, absl::InfiniteFuture());
  ASSERT_TRUE(WaitFor([this] { return ChildDone(); }));
  EXPECT_EQ(ChildStatus().code(), StatusCode::kDeadlineExceeded)
      << ChildStatus().ToString();
  EXPECT_THAT(ChildStatus().message(),
              HasSubstr("deadline of the server call"));
}

TEST_F(PropagationTest, ClientCancelReachesB) {
  for (const char* relay : kRelays) {
    SCOPED_TRACE(relay);
    NextCase();
    ClientContext context;
    std::thread canceller([&] {
      ASSERT_TRUE(now().b_started.WaitForNotificationWithTimeout(kHangTimeout));
      context.TryCancel();
    });
    const Status status = CallA(relay, &context, Relay(kWaitForCancel));
    canceller.join();
    EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
    // B's handler saw its call cancelled, and A's call to it ended
    // CANCELLED for the reason A's own call was.
    ASSERT_TRUE(
        now().b_saw_cancel.WaitForNotificationWithTimeout(kHangTimeout));
    ASSERT_TRUE(WaitFor([this] { return ChildDone(); }));
    EXPECT_EQ(ChildStatus().code(), StatusCode::kCancelled);
    EXPECT_THAT(ChildStatus().message(), HasSubstr("was cancelled"));
    EXPECT_EQ(now().b_deadline, absl::InfiniteFuture());
  }
}

TEST_F(PropagationTest, AFinishedChildIsUntouched) {
  ClientContext context;
  std::thread canceller([&] {
    ASSERT_TRUE(now().a_waiting.WaitForNotificationWithTimeout(kHangTimeout));
    context.TryCancel();
  });
  const Status status = CallA(kChildThenWait, &context, SimpleRequest());
  canceller.join();
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  ASSERT_TRUE(WaitFor([this] { return ChildDone(); }));
  EXPECT_TRUE(ChildStatus().ok()) << ChildStatus().ToString();
}

TEST_F(PropagationTest, AChildMadeAfterTheCancelFailsWithoutACall) {
  ClientContext context;
  std::thread canceller([&] {
    ASSERT_TRUE(now().a_waiting.WaitForNotificationWithTimeout(kHangTimeout));
    context.TryCancel();
  });
  const Status status = CallA(kWaitThenChild, &context, SimpleRequest());
  canceller.join();
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  ASSERT_TRUE(WaitFor([this] { return ChildDone(); }));
  EXPECT_EQ(ChildStatus().code(), StatusCode::kCancelled);
  Case& c = now();
  MutexLock lock(&c.mu);
  EXPECT_EQ(c.quick_calls, 0);
}

TEST_F(PropagationTest, AChildStillRunningWhenItsParentEndsIsCancelled) {
  ClientContext context;
  const Status status = CallA(kStartChildAndReturn, &context, SimpleRequest());
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_TRUE(now().b_saw_cancel.WaitForNotificationWithTimeout(kHangTimeout));
  ASSERT_TRUE(WaitFor([this] { return ChildDone(); }));
  EXPECT_EQ(ChildStatus().code(), StatusCode::kCancelled);
  EXPECT_THAT(ChildStatus().message(), HasSubstr("is over"));
}

TEST_F(PropagationTest, WithoutCancellationPropagationAChildOutlivesItsParent) {
  Case& orphan = now();
  SimpleRequest request;
  request.set_fill_username(true);  // disable cancellation propagation
  ClientContext context;
  const Status status = CallA(kStartChildAndReturn, &context, request);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_TRUE(orphan.b_started.WaitForNotificationWithTimeout(kHangTimeout));
  // A's next calls, cancelled, reuse its call objects (and so its
  // contexts): their cancellation does not reach the orphan.
  for (int i = 0; i < 4; ++i) {
    NextCase();
    ClientContext next;
    std::thread canceller([&] {
      ASSERT_TRUE(now().a_waiting.WaitForNotificationWithTimeout(kHangTimeout));
      next.TryCancel();
    });
    EXPECT_EQ(CallA(kChildThenWait, &next, SimpleRequest()).code(),
              StatusCode::kCancelled);
    canceller.join();
  }
  EXPECT_FALSE(ChildDone(orphan));
  orphan.gate.Notify();
  ASSERT_TRUE(WaitFor([&] { return ChildDone(orphan); }));
  EXPECT_TRUE(ChildStatus(orphan).ok()) << ChildStatus(orphan).ToString();
  EXPECT_FALSE(orphan.b_saw_cancel.HasBeenNotified());
}

TEST_F(PropagationTest, DeadlinePropagationCanBeTurnedOff) {
  ClientContext context;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  context.set_deadline(deadline);
  ASSERT_TRUE(CallA(kReportDeadline, &context, SimpleRequest()).ok());
  {
    Case& c = now();
    MutexLock lock(&c.mu);
    EXPECT_LE(c.quick_deadline, deadline + absl::Milliseconds(50));
    EXPECT_GE(c.quick_deadline, deadline - absl::Seconds(5));
  }
  SimpleRequest request;
  request.set_fill_username(true);  // disable deadline propagation
  ClientContext other;
  other.set_deadline(deadline);
  ASSERT_TRUE(CallA(kReportDeadline, &other, request).ok());
  Case& c = now();
  MutexLock lock(&c.mu);
  EXPECT_EQ(c.quick_deadline, absl::InfiniteFuture());
}

}  // namespace
}  // namespace h2rpc
