#include "rpc/interceptors/metrics_interceptor.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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
using ::h2rpc::testing::AllocationsByRole;
using ::h2rpc::testing::EchoLoopback;
using ::h2rpc::testing::kEchoMethod;
using ::h2rpc::testing::kEmptyMethod;
using ::h2rpc::testing::kFailMethod;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::ThreadRole;
using ::h2rpc::testing::WaitFor;
using ::testing::ElementsAre;

// The snapshot's entry for (side, method), or a default one (side client,
// empty method) if there is none.
MethodMetrics Find(const std::vector<MethodMetrics>& all, CallSide side,
                   absl::string_view method) {
  for (const MethodMetrics& metrics : all) {
    if (metrics.side == side && metrics.method == method) return metrics;
  }
  return MethodMetrics();
}

std::vector<std::string> Names(const std::vector<MethodMetrics>& all) {
  std::vector<std::string> names;
  for (const MethodMetrics& metrics : all) {
    names.push_back(
        absl::StrCat(CallSideName(metrics.side), " ", metrics.method));
  }
  return names;
}

// The hooks called directly.
TEST(MetricsInterceptorTest, CountsCallsCodesAndLatencyPerMethod) {
  MetricsInterceptor metrics;
  ClientContext context;
  const ClientCallInfo a{"/pkg.S/A", &context};
  const ClientCallInfo b{"/pkg.S/B", &context};
  ASSERT_TRUE(metrics.OnStart(a).ok());
  metrics.OnFinish(a, Status(), Metadata(), absl::Microseconds(3));
  ASSERT_TRUE(metrics.OnStart(a).ok());
  metrics.OnFinish(a, Status(StatusCode::kUnavailable, "down"), Metadata(),
                   absl::Milliseconds(2));
  ASSERT_TRUE(metrics.OnStart(b).ok());  // still in flight
  ASSERT_TRUE(metrics.OnStart(a).ok());
  metrics.OnFinish(a, Status(static_cast<StatusCode>(99), "odd"), Metadata(),
                   absl::Microseconds(1));

  const std::vector<MethodMetrics> all = metrics.Snapshot();
  EXPECT_THAT(Names(all), ElementsAre("client /pkg.S/A", "client /pkg.S/B"));
  const MethodMetrics& m = all[0];
  EXPECT_EQ(m.started, 3u);
  EXPECT_EQ(m.finished, 3u);
  EXPECT_EQ(m.calls_with(StatusCode::kOk), 1u);
  EXPECT_EQ(m.calls_with(StatusCode::kUnavailable), 1u);
  EXPECT_EQ(m.calls_with(StatusCode::kUnknown), 1u);  // the code 99
  EXPECT_EQ(m.latency.count(), 3u);
  EXPECT_EQ(m.latency.sum(), absl::Microseconds(2004));
  EXPECT_EQ(m.latency.max(), absl::Milliseconds(2));
  EXPECT_EQ(m.latency.bucket_count(0), 1u);
  EXPECT_EQ(m.latency.bucket_count(2), 1u);
  EXPECT_EQ(m.latency.bucket_count(11), 1u);
  absl::Duration median;
  ASSERT_TRUE(m.latency.Percentile(50, &median).ok());
  EXPECT_EQ(median, absl::Microseconds(4));
  EXPECT_EQ(all[1].started, 1u);
  EXPECT_EQ(all[1].finished, 0u);
  EXPECT_EQ(all[1].latency.count(), 0u);
}

// Past max_methods, new methods count under "(other)"; known ones keep
// their own entries.
TEST(MetricsInterceptorTest, BoundsTheMethodsTracked) {
  MetricsInterceptor::Options options;
  options.max_methods = 2;
  MetricsInterceptor metrics(options);
  ClientContext context;
  for (const char* method : {"/s/b", "/s/a", "/s/c", "/s/d", "/s/a"}) {
    const ClientCallInfo call{method, &context};
    ASSERT_TRUE(metrics.OnStart(call).ok());
    metrics.OnFinish(call, Status(), Metadata(), absl::Microseconds(1));
  }
  const std::vector<MethodMetrics> all = metrics.Snapshot();
  EXPECT_THAT(Names(all),
              ElementsAre("client (other)", "client /s/a", "client /s/b"));
  EXPECT_EQ(all[0].finished, 2u);
  EXPECT_EQ(all[1].finished, 2u);
  EXPECT_EQ(all[2].finished, 1u);

  MetricsInterceptor::Options none;
  none.max_methods = 0;
  MetricsInterceptor untracked(none);
  const ClientCallInfo call{"/s/a", &context};
  ASSERT_TRUE(untracked.OnStart(call).ok());
  EXPECT_THAT(Names(untracked.Snapshot()), ElementsAre("client (other)"));
}

// One interceptor on a real channel and its server: each side counts the
// calls it saw, by code, with a latency histogram that saw each call.
TEST(MetricsLoopbackTest, CountsBothSidesOfRealCalls) {
  auto metrics = std::make_shared<MetricsInterceptor>();
  EchoLoopback loopback({metrics}, {metrics});
  ASSERT_TRUE(loopback.status().ok()) << loopback.status().ToString();
  constexpr int kOk = 5;
  constexpr int kFailed = 3;
  SimpleResponse response;
  for (int i = 0; i < kOk + kFailed; ++i) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    const Status status = loopback.channel()->UnaryCall(
        &context, i < kOk ? kEchoMethod : kFailMethod, SimpleRequest(),
        &response);
    EXPECT_EQ(status.code(), i < kOk ? StatusCode::kOk : StatusCode::kNotFound);
  }
  // The server's OnFinish may come after the client has its answer.
  ASSERT_TRUE(WaitFor([&] {
    return Find(metrics->Snapshot(), CallSide::kServer, kFailMethod).finished ==
           kFailed;
  }));
  const std::vector<MethodMetrics> all = metrics->Snapshot();
  EXPECT_THAT(Names(all), ElementsAre(absl::StrCat("client ", kEchoMethod),
                                      absl::StrCat("client ", kFailMethod),
                                      absl::StrCat("server ", kEchoMethod),
                                      absl::StrCat("server ", kFailMethod)));
  for (const CallSide side : {CallSide::kClient, CallSide::kServer}) {
    SCOPED_TRACE(CallSideName(side));
    for (const char* method : {kEchoMethod, kFailMethod}) {
      SCOPED_TRACE(method);
      const MethodMetrics m = Find(all, side, method);
      const uint64_t calls = method == kEchoMethod ? kOk : kFailed;
      EXPECT_EQ(m.started, calls);
      EXPECT_EQ(m.finished, calls);
      EXPECT_EQ(m.calls_with(method == kEchoMethod ? StatusCode::kOk
                                                   : StatusCode::kNotFound),
                calls);
      EXPECT_EQ(m.latency.count(), calls);
      uint64_t in_buckets = 0;
      for (int i = 0; i < LatencyHistogram::kBuckets; ++i) {
        in_buckets += m.latency.bucket_count(i);
      }
      EXPECT_EQ(in_buckets, calls);
      EXPECT_GT(m.latency.sum(), absl::ZeroDuration());
      EXPECT_LE(m.latency.max(), m.latency.sum());
      absl::Duration p99;
      ASSERT_TRUE(m.latency.Percentile(99, &p99).ok());
      EXPECT_GT(p99, absl::ZeroDuration());
      EXPECT_LE(p99, m.latency.max());
    }
  }
}

// An interceptor after the metrics one fails the call in OnStart: the
// metrics count it under that code. One before it: they never see it.
TEST(MetricsLoopbackTest, CountsCallsFailedByLaterInterceptors) {
  class Deny : public ClientInterceptor {
   public:
    Status OnStart(const ClientCallInfo&) override {
      return Status(StatusCode::kPermissionDenied, "denied");
    }
  };
  auto inner = std::make_shared<MetricsInterceptor>();
  auto outer = std::make_shared<MetricsInterceptor>();
  EchoLoopback loopback({outer, std::make_shared<Deny>(), inner}, {});
  ASSERT_TRUE(loopback.status().ok()) << loopback.status().ToString();
  ClientContext context;
  SimpleResponse response;
  const Status status = loopback.channel()->UnaryCall(
      &context, kEchoMethod, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  const MethodMetrics m =
      Find(outer->Snapshot(), CallSide::kClient, kEchoMethod);
  EXPECT_EQ(m.started, 1u);
  EXPECT_EQ(m.finished, 1u);
  EXPECT_EQ(m.calls_with(StatusCode::kPermissionDenied), 1u);
  EXPECT_EQ(m.latency.count(), 1u);
  EXPECT_THAT(inner->Snapshot(), ElementsAre());
}

// Once a method has been seen, a call through the interceptor allocates
// nothing on either side.
TEST(MetricsAllocationTest, WarmCallsDoNotAllocate) {
  auto metrics = std::make_shared<MetricsInterceptor>();
  EchoLoopback loopback({metrics}, {metrics});
  ASSERT_TRUE(loopback.status().ok()) << loopback.status().ToString();
  auto server_finished = [&] {
    return Find(metrics->Snapshot(), CallSide::kServer, kEmptyMethod).finished;
  };
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
  ASSERT_TRUE(WaitFor([&] { return server_finished() == kWarmup; }));
  const auto client0 = AllocationsByRole(ThreadRole::kClient);
  const auto other0 = AllocationsByRole(ThreadRole::kOther);
  const auto server0 = AllocationsByRole(ThreadRole::kServer);
  for (int i = 0; i < kCalls; ++i) call();
  // Counted before the snapshots below allocate (on this thread).
  const auto client1 = AllocationsByRole(ThreadRole::kClient);
  const auto other1 = AllocationsByRole(ThreadRole::kOther);
  EXPECT_EQ(client1.allocations - client0.allocations + other1.allocations -
                other0.allocations,
            0);
  ASSERT_TRUE(WaitFor([&] { return server_finished() == kWarmup + kCalls; }));
  const auto server1 = AllocationsByRole(ThreadRole::kServer);
  EXPECT_EQ(server1.allocations - server0.allocations, 0);
  const MethodMetrics m =
      Find(metrics->Snapshot(), CallSide::kClient, kEmptyMethod);
  EXPECT_EQ(m.finished, static_cast<uint64_t>(kWarmup + kCalls));
  EXPECT_EQ(m.latency.count(), static_cast<uint64_t>(kWarmup + kCalls));
}

}  // namespace
}  // namespace h2rpc
