// h2rpc's round_robin, with and without client-side health checking (gRPC's
// A17), over stock gRPC C++ 1.51 servers in this process, each answering
// grpc.testing.TestService/UnaryCall with its own name
// (SimpleResponse.hostname) and counting the calls it serves:
//   - three servers with gRPC's default health service
//     (grpc::EnableDefaultHealthCheckService) and an h2rpc channel to
//     "ipv4:127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3" whose service config
//     names round_robin and a healthCheckConfig: calls spread within ±5%
//     per backend; a backend set NOT_SERVING through gRPC's
//     HealthCheckServiceInterface stops getting calls within a second and
//     gets them again once SERVING; a backend shut down while
//     wait_for_ready calls run fails only the calls gRPC C++'s Shutdown()
//     cancels (none once drained through its health status), and the
//     other two share its calls;
//   - three servers without the health service: plain round_robin spreads
//     the calls, and so does round_robin with a healthCheckConfig (a
//     backend answering the health watch UNIMPLEMENTED counts as serving).

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/connectivity_state.h"
#include "rpc/status.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::kHangTimeout;

constexpr char kUnaryCall[] = "/grpc.testing.TestService/UnaryCall";
// The service the channels' healthCheckConfig names.
constexpr char kHealthService[] = "grpc.testing.TestService";
constexpr char kRoundRobinConfig[] =
    R"({"loadBalancingConfig": [{"round_robin": {}}]})";
constexpr char kHealthCheckedConfig[] =
    R"({"loadBalancingConfig": [{"round_robin": {}}],
        "healthCheckConfig": {"serviceName": "grpc.testing.TestService"}})";
constexpr int kBackends = 3;
// Calls whose spread over the backends is measured.
constexpr int64_t kSpreadCalls = 3000;
// How far from an even share a backend's count may be.
constexpr double kSpreadTolerance = 0.05;
// Threads making calls, each call after its previous one.
constexpr int kCallers = 4;
// A backend set NOT_SERVING must get no call started this long after.
constexpr absl::Duration kHealthBound = absl::Seconds(1);
// Calls made after kHealthBound has passed, to show none reaches the
// backend.
constexpr int64_t kCallsPastBound = 600;

// TestService on gRPC C++: UnaryCall answers with the server's name.
class NamedService final : public grpc::testing::TestService::Service {
 public:
  explicit NamedService(std::string name) : name_(std::move(name)) {}

  grpc::Status UnaryCall(grpc::ServerContext* context,
                         const SimpleRequest* request,
                         SimpleResponse* response) override {
    calls_.fetch_add(1, std::memory_order_relaxed);
    response->set_hostname(name_);
    return grpc::Status::OK;
  }

  // Calls served so far.
  int64_t calls() const { return calls_.load(std::memory_order_relaxed); }

 private:
  const std::string name_;
  std::atomic<int64_t> calls_{0};
};

// A gRPC C++ server on 127.0.0.1 serving NamedService, with gRPC's default
// health service (kHealthService and the overall status SERVING) or
// without it.
class GrpcppBackend {
 public:
  GrpcppBackend(std::string name, bool health_service)
      : name_(name), service_(std::move(name)) {
    // A process-wide flag, read when the server is built.
    grpc::EnableDefaultHealthCheckService(health_service);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    grpc::EnableDefaultHealthCheckService(false);
    if (server_ != nullptr && health_service) {
      health_ = server_->GetHealthCheckService();
      if (health_ != nullptr) health_->SetServingStatus(kHealthService, true);
    }
  }
  ~GrpcppBackend() { Shutdown(); }

  // Started, and with the health service if asked for.
  bool ok(bool health_service) const {
    return server_ != nullptr && port_ > 0 &&
           (health_ != nullptr) == health_service;
  }
  const std::string& name() const { return name_; }
  int port() const { return port_; }
  int64_t calls() const { return service_.calls(); }
  grpc::HealthCheckServiceInterface& health() { return *health_; }

  // Stops accepting calls and returns once the calls in progress have
  // finished (or, past kHangTimeout, been cancelled). Idempotent.
  void Shutdown() {
    if (server_ == nullptr || shut_down_) return;
    shut_down_ = true;
    server_->Shutdown(std::chrono::system_clock::now() +
                      absl::ToChronoSeconds(kHangTimeout));
  }

 private:
  const std::string name_;
  NamedService service_;
  std::unique_ptr<grpc::Server> server_;
  grpc::HealthCheckServiceInterface* health_ = nullptr;
  int port_ = 0;
  bool shut_down_ = false;
};

// Three backends, "backend0".."backend2"; null entries (and a failed test)
// if one does not start.
std::vector<std::unique_ptr<GrpcppBackend>> StartBackends(bool health_service) {
  std::vector<std::unique_ptr<GrpcppBackend>> backends;
  for (int i = 0; i < kBackends; ++i) {
    auto backend = std::make_unique<GrpcppBackend>(absl::StrCat("backend", i),
                                                   health_service);
    if (!backend->ok(health_service)) {
      ADD_FAILURE() << backend->name() << " did not start";
      backend = nullptr;
    }
    backends.push_back(std::move(backend));
  }
  return backends;
}

bool AllStarted(const std::vector<std::unique_ptr<GrpcppBackend>>& backends) {
  for (const auto& backend : backends) {
    if (backend == nullptr) return false;
  }
  return true;
}

// "ipv4:127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3".
std::string Target(
    const std::vector<std::unique_ptr<GrpcppBackend>>& backends) {
  std::vector<std::string> addresses;
  for (const auto& backend : backends) {
    addresses.push_back(absl::StrCat("127.0.0.1:", backend->port()));
  }
  return absl::StrCat("ipv4:", absl::StrJoin(addresses, ","));
}

std::shared_ptr<Channel> RoundRobinChannel(
    const std::vector<std::unique_ptr<GrpcppBackend>>& backends,
    const char* service_config) {
  ChannelOptions options;
  options.service_config = service_config;
  return CreateChannel(Target(backends), options);
}

// One UnaryCall (a guard against a hang as its deadline); on success the
// name of the backend that answered is in `*backend`.
Status Call(Channel& channel, bool wait_for_ready, std::string* backend) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  context.set_wait_for_ready(wait_for_ready);
  SimpleRequest request;
  SimpleResponse response;
  Status status = channel.UnaryCall(&context, kUnaryCall, request, &response);
  *backend = response.hostname();
  return status;
}

// Makes calls until each backend has answered one, so that all are in the
// rotation (true); false, with the test failed, after a failed call or
// kHangTimeout.
bool CallUntilEachAnswers(
    Channel& channel,
    const std::vector<std::unique_ptr<GrpcppBackend>>& backends) {
  std::map<std::string, int64_t> answers;
  const absl::Time give_up = absl::Now() + kHangTimeout;
  while (absl::Now() < give_up) {
    std::string backend;
    const Status status = Call(channel, /*wait_for_ready=*/true, &backend);
    if (!status.ok()) {
      ADD_FAILURE() << "call failed: " << status.ToString();
      return false;
    }
    ++answers[backend];
    bool all = true;
    for (const auto& b : backends) all = all && answers.count(b->name()) > 0;
    if (all) return true;
  }
  ADD_FAILURE() << "not every backend answered within " << kHangTimeout;
  return false;
}

constexpr size_t kFailuresKept = 100;

// A call that failed.
struct Failure {
  absl::Time start;
  absl::Time end;
  Status status;
};

// What a CallLoad saw.
struct Tally {
  // Answered calls per backend name.
  std::map<std::string, int64_t> answers;
  int64_t answered = 0;
  int64_t failed = 0;
  // The first kFailuresKept failures.
  std::vector<Failure> failures;

  std::string FailuresToString() const {
    std::vector<std::string> lines;
    for (const Failure& failure : failures) {
      lines.push_back(absl::StrCat(absl::FormatTime(failure.start), " to ",
                                   absl::FormatTime(failure.end), ": ",
                                   failure.status.ToString()));
    }
    return absl::StrJoin(lines, "\n");
  }
};

// Unary calls from kCallers threads, each call after that thread's
// previous one, until Stop() or destruction.
class CallLoad {
 public:
  CallLoad(Channel* channel, bool wait_for_ready) {
    for (int i = 0; i < kCallers; ++i) {
      threads_.emplace_back([this, channel, wait_for_ready] {
        while (!stop_.load()) {
          std::string backend;
          const absl::Time start = absl::Now();
          const Status status = Call(*channel, wait_for_ready, &backend);
          Record(start, status, backend);
        }
      });
    }
  }
  ~CallLoad() { Stop(); }
  CallLoad(const CallLoad&) = delete;
  CallLoad& operator=(const CallLoad&) = delete;

  // Waits until `n` calls in all have been answered or failed (true), or
  // until no call has ended for kHangTimeout (false).
  bool WaitForCalls(int64_t n) {
    MutexLock lock(&mu_);
    int64_t ended = tally_.answered + tally_.failed;
    absl::Time give_up = absl::Now() + kHangTimeout;
    while (ended < n) {
      const absl::Duration left = give_up - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      cv_.WaitWithTimeout(&mu_, left);
      if (tally_.answered + tally_.failed > ended) {
        ended = tally_.answered + tally_.failed;
        give_up = absl::Now() + kHangTimeout;
      }
    }
    return true;
  }

  Tally tally() {
    MutexLock lock(&mu_);
    return tally_;
  }

  // Returns once every thread has finished its last call.
  void Stop() {
    stop_ = true;
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }

 private:
  void Record(absl::Time start, const Status& status,
              const std::string& backend) {
    const absl::Time end = absl::Now();
    MutexLock lock(&mu_);
    if (status.ok()) {
      ++tally_.answers[backend];
      ++tally_.answered;
    } else {
      ++tally_.failed;
      if (tally_.failures.size() < kFailuresKept) {
        tally_.failures.push_back(Failure{start, end, status});
      }
    }
    cv_.SignalAll();
  }

  Mutex mu_;
  CondVar cv_;  // tally_ changed
  Tally tally_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

int64_t Count(const std::map<std::string, int64_t>& counts,
              const std::string& name) {
  auto it = counts.find(name);
  return it == counts.end() ? 0 : it->second;
}

// Each of `names` got total/names.size() calls of `counts`, ±kSpreadTolerance.
void ExpectEvenSpread(const std::map<std::string, int64_t>& counts,
                      const std::vector<std::string>& names) {
  int64_t total = 0;
  for (const auto& [name, count] : counts) total += count;
  const double share = static_cast<double>(total) / names.size();
  std::vector<std::string> shown;
  for (const auto& [name, count] : counts) {
    shown.push_back(absl::StrCat(name, "=", count));
  }
  SCOPED_TRACE(absl::StrCat("counts: ", absl::StrJoin(shown, " ")));
  int64_t counted = 0;
  for (const std::string& name : names) {
    const int64_t count = Count(counts, name);
    counted += count;
    EXPECT_GE(count, share * (1 - kSpreadTolerance)) << name;
    EXPECT_LE(count, share * (1 + kSpreadTolerance)) << name;
  }
  EXPECT_EQ(counted, total) << "calls answered by other backends";
}

std::vector<std::string> Names(
    const std::vector<std::unique_ptr<GrpcppBackend>>& backends) {
  std::vector<std::string> names;
  for (const auto& backend : backends) names.push_back(backend->name());
  return names;
}

std::vector<int64_t> ServerCounts(
    const std::vector<std::unique_ptr<GrpcppBackend>>& backends) {
  std::vector<int64_t> counts;
  for (const auto& backend : backends) counts.push_back(backend->calls());
  return counts;
}

// Runs the load until kSpreadCalls calls have been made, then checks that
// none failed, that they spread evenly over `backends`, and that the
// backends' own counts agree with the answers.
void ExpectSpread(Channel& channel,
                  const std::vector<std::unique_ptr<GrpcppBackend>>& backends) {
  const std::vector<int64_t> before = ServerCounts(backends);
  CallLoad load(&channel, /*wait_for_ready=*/false);
  ASSERT_TRUE(load.WaitForCalls(kSpreadCalls));
  load.Stop();
  const Tally tally = load.tally();
  EXPECT_EQ(tally.failed, 0) << tally.FailuresToString();
  EXPECT_GE(tally.answered, kSpreadCalls);
  ExpectEvenSpread(tally.answers, Names(backends));
  const std::vector<int64_t> after = ServerCounts(backends);
  for (size_t i = 0; i < backends.size(); ++i) {
    EXPECT_EQ(Count(tally.answers, backends[i]->name()), after[i] - before[i])
        << backends[i]->name();
  }
}

TEST(GrpcppRoundRobinTest, SpreadsCallsEvenlyOverHealthCheckedBackends) {
  std::vector<std::unique_ptr<GrpcppBackend>> backends =
      StartBackends(/*health_service=*/true);
  ASSERT_TRUE(AllStarted(backends));
  std::shared_ptr<Channel> channel =
      RoundRobinChannel(backends, kHealthCheckedConfig);
  ASSERT_TRUE(CallUntilEachAnswers(*channel, backends));
  ExpectSpread(*channel, backends);
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);
}

TEST(GrpcppRoundRobinTest, ANotServingBackendLeavesTheRotationUntilServing) {
  std::vector<std::unique_ptr<GrpcppBackend>> backends =
      StartBackends(/*health_service=*/true);
  ASSERT_TRUE(AllStarted(backends));
  std::shared_ptr<Channel> channel =
      RoundRobinChannel(backends, kHealthCheckedConfig);
  ASSERT_TRUE(CallUntilEachAnswers(*channel, backends));
  GrpcppBackend& down = *backends[1];

  // Calls one after another from here on, each stamped with its start.
  const absl::Time unhealthy = absl::Now();
  down.health().SetServingStatus(kHealthService, false);
  // The calls the backend got from here on, and the last one's start.
  int64_t reaching = 0;
  absl::Time last_reaching = absl::InfinitePast();
  // Answers to the calls started more than kHealthBound after NOT_SERVING.
  std::map<std::string, int64_t> past_bound;
  int64_t calls_past_bound = 0;
  const absl::Time give_up = unhealthy + kHangTimeout;
  while (calls_past_bound < kCallsPastBound) {
    ASSERT_LT(absl::Now(), give_up);
    const absl::Time start = absl::Now();
    std::string backend;
    const Status status = Call(*channel, /*wait_for_ready=*/false, &backend);
    ASSERT_TRUE(status.ok()) << status.ToString();
    if (backend == down.name()) {
      last_reaching = start;
      ++reaching;
    }
    if (start - unhealthy > kHealthBound) {
      ++past_bound[backend];
      ++calls_past_bound;
    }
  }
  EXPECT_EQ(past_bound.count(down.name()), 0u)
      << past_bound[down.name()] << " calls started more than " << kHealthBound
      << " after NOT_SERVING reached the backend; it got " << reaching
      << " calls after NOT_SERVING, the last started "
      << (last_reaching - unhealthy) << " after it";
  ExpectEvenSpread(past_bound, {backends[0]->name(), backends[2]->name()});

  // SERVING again: back in the rotation (the wait is a guard against a
  // hang only).
  const absl::Time healthy = absl::Now();
  down.health().SetServingStatus(kHealthService, true);
  for (;;) {
    ASSERT_LT(absl::Now(), healthy + kHangTimeout)
        << "the backend got no call after SERVING again";
    std::string backend;
    const Status status = Call(*channel, /*wait_for_ready=*/false, &backend);
    ASSERT_TRUE(status.ok()) << status.ToString();
    if (backend == down.name()) break;
  }
  ExpectSpread(*channel, backends);
}

// gRPC C++ 1.51's Server::Shutdown() sends GOAWAY and cancels (CANCELLED,
// in trailers: the call counts as processed, so no client may retry it)
// every call that reaches it from then until the client has seen the
// GOAWAY; gRPC C++'s own round_robin client loses those calls the same
// way. Only they may fail: each call started once Shutdown() has returned
// succeeds, on the other two backends.
TEST(GrpcppRoundRobinTest, ABackendShutDownMidRunFailsOnlyCallsItCancels) {
  std::vector<std::unique_ptr<GrpcppBackend>> backends =
      StartBackends(/*health_service=*/true);
  ASSERT_TRUE(AllStarted(backends));
  std::shared_ptr<Channel> channel =
      RoundRobinChannel(backends, kHealthCheckedConfig);
  ASSERT_TRUE(CallUntilEachAnswers(*channel, backends));
  GrpcppBackend& gone = *backends[1];

  const std::vector<int64_t> before = ServerCounts(backends);
  CallLoad load(channel.get(), /*wait_for_ready=*/true);
  // Calls are running on every backend.
  ASSERT_TRUE(load.WaitForCalls(kSpreadCalls / 4));
  EXPECT_GT(Count(load.tally().answers, gone.name()), 0);
  const absl::Time shutdown_begun = absl::Now();
  gone.Shutdown();
  const absl::Time shutdown_returned = absl::Now();
  const std::vector<int64_t> shut_down = ServerCounts(backends);
  const Tally at_shutdown = load.tally();
  ASSERT_TRUE(load.WaitForCalls(at_shutdown.answered + at_shutdown.failed +
                                kSpreadCalls));
  load.Stop();
  const Tally tally = load.tally();

  SCOPED_TRACE(absl::StrCat("Shutdown() from ",
                            absl::FormatTime(shutdown_begun), " to ",
                            absl::FormatTime(shutdown_returned),
                            "; failures:\n", tally.FailuresToString()));
  ASSERT_EQ(tally.failed, static_cast<int64_t>(tally.failures.size()));
  for (const Failure& failure : tally.failures) {
    EXPECT_EQ(failure.status.code(), StatusCode::kCancelled);
    EXPECT_LT(failure.start, shutdown_returned);
    EXPECT_GE(failure.end, shutdown_begun);
  }
  const std::vector<int64_t> end = ServerCounts(backends);
  ExpectEvenSpread({{backends[0]->name(), end[0] - shut_down[0]},
                    {backends[2]->name(), end[2] - shut_down[2]}},
                   {backends[0]->name(), backends[2]->name()});
  // Every answer came from the server it names.
  for (size_t i = 0; i < backends.size(); ++i) {
    EXPECT_EQ(Count(tally.answers, backends[i]->name()), end[i] - before[i])
        << backends[i]->name();
  }
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);
}

// Drained first (NOT_SERVING until the channel sends it nothing), a
// backend shuts down without costing a single call.
TEST(GrpcppRoundRobinTest, ADrainedBackendShutDownMidRunCostsNoCall) {
  std::vector<std::unique_ptr<GrpcppBackend>> backends =
      StartBackends(/*health_service=*/true);
  ASSERT_TRUE(AllStarted(backends));
  std::shared_ptr<Channel> channel =
      RoundRobinChannel(backends, kHealthCheckedConfig);
  ASSERT_TRUE(CallUntilEachAnswers(*channel, backends));
  GrpcppBackend& gone = *backends[1];

  CallLoad load(channel.get(), /*wait_for_ready=*/true);
  ASSERT_TRUE(load.WaitForCalls(kSpreadCalls / 4));
  gone.health().SetServingStatus(kHealthService, false);
  // Drained: kCallsPastBound calls in a row went elsewhere.
  const absl::Time give_up = absl::Now() + kHangTimeout;
  for (;;) {
    ASSERT_LT(absl::Now(), give_up) << "the backend still gets calls";
    const int64_t served = gone.calls();
    const Tally tally = load.tally();
    ASSERT_TRUE(
        load.WaitForCalls(tally.answered + tally.failed + kCallsPastBound));
    if (gone.calls() == served) break;
  }
  gone.Shutdown();
  const std::vector<int64_t> shut_down = ServerCounts(backends);
  const Tally at_shutdown = load.tally();
  ASSERT_TRUE(load.WaitForCalls(at_shutdown.answered + at_shutdown.failed +
                                kSpreadCalls));
  load.Stop();
  const Tally tally = load.tally();
  EXPECT_EQ(tally.failed, 0) << tally.FailuresToString();
  const std::vector<int64_t> end = ServerCounts(backends);
  ExpectEvenSpread({{backends[0]->name(), end[0] - shut_down[0]},
                    {backends[2]->name(), end[2] - shut_down[2]}},
                   {backends[0]->name(), backends[2]->name()});
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);
}

TEST(GrpcppRoundRobinTest, PlainRoundRobinSpreadsOverBackendsWithoutHealth) {
  std::vector<std::unique_ptr<GrpcppBackend>> backends =
      StartBackends(/*health_service=*/false);
  ASSERT_TRUE(AllStarted(backends));
  std::shared_ptr<Channel> channel =
      RoundRobinChannel(backends, kRoundRobinConfig);
  ASSERT_TRUE(CallUntilEachAnswers(*channel, backends));
  ExpectSpread(*channel, backends);
}

TEST(GrpcppRoundRobinTest, ABackendWithoutTheHealthServiceCountsAsServing) {
  std::vector<std::unique_ptr<GrpcppBackend>> backends =
      StartBackends(/*health_service=*/false);
  ASSERT_TRUE(AllStarted(backends));
  std::shared_ptr<Channel> channel =
      RoundRobinChannel(backends, kHealthCheckedConfig);
  ASSERT_TRUE(CallUntilEachAnswers(*channel, backends));
  ExpectSpread(*channel, backends);
}

}  // namespace
}  // namespace h2rpc
