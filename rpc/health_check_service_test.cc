// HealthCheckService with an h2rpc client (the generated
// grpc::health::v1::Health::Stub) over loopback TCP: Check, Watch (its first
// message, each change, unknown services, the limits), Shutdown(), the
// server's shutdown ending watches, and a watcher that does not read
// getting only the latest status.

#include "rpc/health_check_service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.h2rpc.pb.h"
#include "proto/grpc/health/v1/health.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/server.h"
#include "rpc/status.h"
#include "test/util/allocation_counter.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::LiveHeapBytes;
using ::h2rpc::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr HealthCheckResponse::ServingStatus kServing =
    HealthCheckResponse::SERVING;
constexpr HealthCheckResponse::ServingStatus kNotServing =
    HealthCheckResponse::NOT_SERVING;
constexpr HealthCheckResponse::ServingStatus kServiceUnknown =
    HealthCheckResponse::SERVICE_UNKNOWN;

// A Watch call that records every status it reads. It reads from the start,
// or (read = false) only once Resume() is called. The call's deadline,
// kHangTimeout, bounds a test that waits for a message that never comes.
class WatchRecorder final : public ClientReadReactor<HealthCheckResponse> {
 public:
  WatchRecorder(Health::Stub& stub, const std::string& service,
                bool read = true) {
    request_.set_service(service);
    context_.set_timeout(kHangTimeout);
    stub.AsyncWatch(&context_, request_, this);
    if (read) StartRead(&response_);
    StartCall();
  }
  // Cancels the call if it is still open and waits for it to end.
  ~WatchRecorder() override {
    context_.TryCancel();
    MutexLock lock(&mu_);
    while (!done_) changed_.Wait(&mu_);
  }

  void Resume() { StartRead(&response_); }
  void Cancel() { context_.TryCancel(); }

  // Waits until `condition(statuses)` holds; false after kHangTimeout.
  template <class Condition>
  bool WaitUntil(Condition condition) {
    const absl::Time give_up = absl::Now() + kHangTimeout;
    MutexLock lock(&mu_);
    while (!condition(statuses_)) {
      const absl::Duration left = give_up - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      changed_.WaitWithTimeout(&mu_, left);
    }
    return true;
  }
  // Waits for the `count`th status read; false after kHangTimeout.
  bool WaitForCount(size_t count) {
    return WaitUntil([count](const std::vector<int>& statuses) {
      return statuses.size() >= count;
    });
  }
  // Waits until a status was read or the call ended; false after
  // kHangTimeout.
  bool WaitForStatusOrEnd() {
    const absl::Time give_up = absl::Now() + kHangTimeout;
    MutexLock lock(&mu_);
    while (statuses_.empty() && !done_) {
      const absl::Duration left = give_up - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      changed_.WaitWithTimeout(&mu_, left);
    }
    return true;
  }
  // Waits for the call to end and returns its status (DEADLINE_EXCEEDED
  // after kHangTimeout, the call's own deadline).
  Status WaitForDone() {
    MutexLock lock(&mu_);
    while (!done_) changed_.Wait(&mu_);
    return status_;
  }
  bool done() {
    MutexLock lock(&mu_);
    return done_;
  }
  std::vector<int> statuses() {
    MutexLock lock(&mu_);
    return statuses_;
  }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) return;
    {
      MutexLock lock(&mu_);
      statuses_.push_back(response_.status());
      changed_.SignalAll();
    }
    StartRead(&response_);
  }
  void OnDone(const Status& status) override {
    MutexLock lock(&mu_);
    done_ = true;
    status_ = status;
    changed_.SignalAll();
  }

  ClientContext context_;
  HealthCheckRequest request_;
  HealthCheckResponse response_;  // the loop thread's, between reads
  Mutex mu_;
  CondVar changed_;
  std::vector<int> statuses_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  Status status_ ABSL_GUARDED_BY(mu_);
};

class HealthCheckServiceTest : public ::testing::Test {
 protected:
  // Starts the server with `health_` registered and a channel to it.
  void Start(HealthCheckServiceOptions health_options = {},
             ServerOptions server_options = {},
             ChannelOptions channel_options = {}) {
    health_ = std::make_unique<HealthCheckService>(health_options);
    int port = 0;
    Status status;
    Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port).SetOptions(server_options);
    health_->AddTo(builder);
    server_ = builder.BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
    server_address_ = "127.0.0.1:" + std::to_string(port);
    stub_ = std::make_unique<Health::Stub>(
        CreateChannel(server_address_, channel_options));
  }

  // Check of `service`: its status, or -1 with `*error` set.
  int Check(const std::string& service, Status* error = nullptr) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    Status status = stub_->Check(&context, request, &response);
    if (error != nullptr) *error = status;
    return status.ok() ? response.status() : -1;
  }

  // Declared first, destroyed last: outlives the server.
  std::unique_ptr<HealthCheckService> health_;
  std::unique_ptr<Server> server_;
  std::string server_address_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthCheckServiceTest, CheckAnswersEachServicesStatus) {
  Start();
  health_->SetServingStatus("up", true);
  health_->SetServingStatus("down", false);
  EXPECT_EQ(Check(""), kServing);  // SERVING from construction, as in gRPC
  EXPECT_EQ(Check("up"), kServing);
  EXPECT_EQ(Check("down"), kNotServing);

  Status error;
  EXPECT_EQ(Check("nobody", &error), -1);
  EXPECT_EQ(error.code(), StatusCode::kNotFound);
  EXPECT_THAT(error.message(), HasSubstr("\"nobody\""));

  health_->SetServingStatus("down", true);
  EXPECT_EQ(Check("down"), kServing);
  // Every service named so far.
  health_->SetServingStatus(false);
  EXPECT_EQ(Check(""), kNotServing);
  EXPECT_EQ(Check("up"), kNotServing);
  EXPECT_EQ(Check("down"), kNotServing);
  EXPECT_EQ(Check("nobody", &error), -1);
  EXPECT_EQ(error.code(), StatusCode::kNotFound);
}

TEST_F(HealthCheckServiceTest, ServiceNameOverTheLimitIsInvalid) {
  HealthCheckServiceOptions options;
  options.max_service_name_length = 10;
  Start(options);
  const std::string long_name(11, 'x');
  health_->SetServingStatus(long_name, true);
  EXPECT_EQ(Check(std::string(10, 'y')), -1);  // NOT_FOUND: within the limit

  Status error;
  EXPECT_EQ(Check(long_name, &error), -1);
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("11 bytes"));
  EXPECT_THAT(error.message(), HasSubstr("max_service_name_length"));

  WatchRecorder watch(*stub_, long_name);
  const Status status = watch.WaitForDone();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_TRUE(watch.statuses().empty());
  EXPECT_EQ(health_->open_watches(), 0u);
}

TEST_F(HealthCheckServiceTest, WatchSendsTheStatusThenEachChange) {
  Start();
  health_->SetServingStatus("svc", true);
  WatchRecorder watch(*stub_, "svc");
  ASSERT_TRUE(watch.WaitForCount(1));
  EXPECT_THAT(watch.statuses(), ElementsAre(kServing));

  health_->SetServingStatus("svc", false);
  ASSERT_TRUE(watch.WaitForCount(2));
  // A status set again unchanged sends nothing: the next message is the
  // next change.
  health_->SetServingStatus("svc", false);
  health_->SetServingStatus("svc", true);
  ASSERT_TRUE(watch.WaitForCount(3));
  // Changes to other services are not sent to this watch.
  health_->SetServingStatus("other", false);
  health_->SetServingStatus(false);  // every service, "svc" included
  ASSERT_TRUE(watch.WaitForCount(4));
  EXPECT_THAT(watch.statuses(),
              ElementsAre(kServing, kNotServing, kServing, kNotServing));
  EXPECT_FALSE(watch.done());
  EXPECT_EQ(health_->open_watches(), 1u);
}

TEST_F(HealthCheckServiceTest, WatchOfAnUnknownServiceWaitsForIt) {
  Start();
  WatchRecorder watch(*stub_, "later");
  ASSERT_TRUE(watch.WaitForCount(1));
  EXPECT_THAT(watch.statuses(), ElementsAre(kServiceUnknown));
  // Being watched does not make it known.
  Status error;
  EXPECT_EQ(Check("later", &error), -1);
  EXPECT_EQ(error.code(), StatusCode::kNotFound);
  // Nor does setting every service's status.
  health_->SetServingStatus(true);

  health_->SetServingStatus("later", true);
  ASSERT_TRUE(watch.WaitForCount(2));
  EXPECT_THAT(watch.statuses(), ElementsAre(kServiceUnknown, kServing));
  EXPECT_EQ(Check("later"), kServing);
}

TEST_F(HealthCheckServiceTest, CancelledWatchIsReleased) {
  Start();
  WatchRecorder first(*stub_, "gone");
  WatchRecorder second(*stub_, "");
  ASSERT_TRUE(first.WaitForCount(1));
  ASSERT_TRUE(second.WaitForCount(1));
  EXPECT_EQ(health_->open_watches(), 2u);

  first.Cancel();
  EXPECT_EQ(first.WaitForDone().code(), StatusCode::kCancelled);
  EXPECT_TRUE(WaitFor([&] { return health_->open_watches() == 1; }));
  // The other watch still gets changes.
  health_->SetServingStatus("", false);
  ASSERT_TRUE(second.WaitForCount(2));
  EXPECT_THAT(second.statuses(), ElementsAre(kServing, kNotServing));
}

TEST_F(HealthCheckServiceTest, WatchesOverTheLimitAreRefused) {
  HealthCheckServiceOptions options;
  options.max_watches = 2;
  Start(options);
  auto first = std::make_unique<WatchRecorder>(*stub_, "");
  WatchRecorder second(*stub_, "");
  ASSERT_TRUE(first->WaitForCount(1));
  ASSERT_TRUE(second.WaitForCount(1));

  {
    WatchRecorder third(*stub_, "");
    const Status status = third.WaitForDone();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted)
        << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr("max_watches"));
    EXPECT_TRUE(third.statuses().empty());
  }
  first.reset();  // cancels it
  ASSERT_TRUE(WaitFor([&] { return health_->open_watches() == 1; }));
  WatchRecorder fourth(*stub_, "");
  ASSERT_TRUE(fourth.WaitForCount(1));
  EXPECT_THAT(fourth.statuses(), ElementsAre(kServing));
}

// One connection opening watches until it is refused holds at most
// max_watches_per_connection of them; a client on another connection still
// gets its Watch (and so keeps the server in its rotation), and the greedy
// one gets watches again as its own end.
TEST_F(HealthCheckServiceTest, OneConnectionCannotTakeEveryWatch) {
  HealthCheckServiceOptions options;
  options.max_watches = 8;
  options.max_watches_per_connection = 3;
  Start(options);
  std::vector<std::unique_ptr<WatchRecorder>> greedy;
  Status refused;
  for (size_t i = 0; i < options.max_watches && refused.ok(); ++i) {
    greedy.push_back(std::make_unique<WatchRecorder>(*stub_, ""));
    WatchRecorder& watch = *greedy.back();
    ASSERT_TRUE(watch.WaitForStatusOrEnd());
    if (watch.done()) refused = watch.WaitForDone();
  }
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted)
      << refused.ToString();
  EXPECT_THAT(refused.message(),
              HasSubstr("3 health watches are open on this connection"));
  EXPECT_THAT(refused.message(), HasSubstr("max_watches_per_connection"));
  EXPECT_EQ(health_->open_watches(), 3u);

  Health::Stub other(CreateChannel(server_address_));
  WatchRecorder polite(other, "");
  ASSERT_TRUE(polite.WaitForCount(1));
  EXPECT_THAT(polite.statuses(), ElementsAre(kServing));
  EXPECT_EQ(health_->open_watches(), 4u);

  greedy.front().reset();  // cancels it
  ASSERT_TRUE(WaitFor([&] { return health_->open_watches() == 3; }));
  WatchRecorder again(*stub_, "");
  ASSERT_TRUE(again.WaitForCount(1));
  EXPECT_THAT(again.statuses(), ElementsAre(kServing));
}

TEST_F(HealthCheckServiceTest, ShutdownMakesEveryServiceNotServingForGood) {
  Start();
  health_->SetServingStatus("svc", true);
  WatchRecorder overall(*stub_, "");
  WatchRecorder svc(*stub_, "svc");
  ASSERT_TRUE(overall.WaitForCount(1));
  ASSERT_TRUE(svc.WaitForCount(1));

  health_->Shutdown();
  ASSERT_TRUE(overall.WaitForCount(2));
  ASSERT_TRUE(svc.WaitForCount(2));
  EXPECT_EQ(Check(""), kNotServing);
  EXPECT_EQ(Check("svc"), kNotServing);

  // Later calls cannot make anything SERVING; a new name is recorded as
  // NOT_SERVING (gRPC's behaviour).
  health_->SetServingStatus(true);
  health_->SetServingStatus("svc", true);
  health_->SetServingStatus("new", true);
  EXPECT_EQ(Check(""), kNotServing);
  EXPECT_EQ(Check("svc"), kNotServing);
  EXPECT_EQ(Check("new"), kNotServing);
  health_->Shutdown();  // idempotent

  // The watches stay open (gRPC's semantics) and got nothing more.
  EXPECT_THAT(overall.statuses(), ElementsAre(kServing, kNotServing));
  EXPECT_THAT(svc.statuses(), ElementsAre(kServing, kNotServing));
  EXPECT_FALSE(overall.done());
  EXPECT_EQ(health_->open_watches(), 2u);
}

TEST_F(HealthCheckServiceTest, ServerShutdownEndsWatches) {
  Start();
  WatchRecorder overall(*stub_, "");
  WatchRecorder unknown(*stub_, "unknown");
  ASSERT_TRUE(overall.WaitForCount(1));
  ASSERT_TRUE(unknown.WaitForCount(1));

  // Watches never end by themselves, so had the service not ended them,
  // Shutdown would cancel them at its deadline (kHangTimeout) and they
  // would end with another status.
  server_->Shutdown(absl::Now() + kHangTimeout);
  const Status overall_status = overall.WaitForDone();
  EXPECT_EQ(overall_status.code(), StatusCode::kUnavailable)
      << overall_status.ToString();
  EXPECT_THAT(overall_status.message(), HasSubstr("shutting down"));
  // The last status written before the end: NOT_SERVING.
  EXPECT_THAT(overall.statuses(), ElementsAre(kServing, kNotServing));
  const Status unknown_status = unknown.WaitForDone();
  EXPECT_EQ(unknown_status.code(), StatusCode::kUnavailable)
      << unknown_status.ToString();
  EXPECT_THAT(unknown.statuses(), ElementsAre(kServiceUnknown));
  EXPECT_EQ(health_->open_watches(), 0u);
}

// A watcher that does not read while the status changes many times: the
// service keeps at most one write in flight and the latest status pending,
// so memory stays flat and, once it reads, the watcher gets what flow
// control let through and then the latest status, never a backlog of
// every change. The client's stream window (1 KiB, about 146 messages of
// 7 bytes) and the server's stream_write_buffer (64 bytes) bound what can
// be in transit. The server's shutdown ends the stream, so the test knows
// it has read everything; the latest status is NOT_SERVING, which the
// shutdown does not change, so a latest status lost would show.
TEST_F(HealthCheckServiceTest, WatcherThatDoesNotReadGetsTheLatestStatus) {
  ServerOptions server_options;
  server_options.stream_write_buffer = 64;
  ChannelOptions channel_options;
  channel_options.connection.initial_stream_window = 1024;
  Start({}, server_options, channel_options);
  health_->SetServingStatus("svc", true);
  WatchRecorder watch(*stub_, "svc", /*read=*/false);
  ASSERT_TRUE(WaitFor([&] { return health_->open_watches() == 1; }));

  constexpr int kUpdates = 200000;
  const int64_t heap_before = LiveHeapBytes();
  for (int i = 0; i < kUpdates; ++i) {
    health_->SetServingStatus("svc", i % 2 == 1);  // ends with SERVING
  }
  health_->SetServingStatus("svc", false);  // the latest: NOT_SERVING
  const int64_t growth = LiveHeapBytes() - heap_before;
  // A queue of every change would hold 200000 entries.
  EXPECT_LT(growth, 256 << 10) << growth << " bytes";

  watch.Resume();
  server_->Shutdown(absl::Now() + kHangTimeout);
  const Status status = watch.WaitForDone();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  const std::vector<int> statuses = watch.statuses();
  ASSERT_FALSE(statuses.empty());
  EXPECT_EQ(statuses.back(), kNotServing);
  EXPECT_LE(statuses.size(), 400u);
  // Coalescing never sends the same status twice in a row.
  for (size_t i = 1; i < statuses.size(); ++i) {
    ASSERT_NE(statuses[i], statuses[i - 1]) << "at " << i;
  }
}

}  // namespace
}  // namespace h2rpc
