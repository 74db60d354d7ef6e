#include "rpc/call_metrics.h"

#include <thread>

#include "gtest/gtest.h"
#include "rpc/internal/call_metric_shards.h"
#include "test/util/allocation_counter.h"

namespace h2rpc {
namespace {

using internal::CallMetricsAccess;
using internal::ClientMetricShard;
using internal::ServerMetricShard;

TEST(OwnedHistogramTest, AValueFallsInTheFirstBucketWhoseBoundIsAtLeastIt) {
  internal::SizeRecord sizes;
  sizes.Record(0);                  // le 0
  sizes.Record(1);                  // le 1024
  sizes.Record(1024);               // le 1024
  sizes.Record(1025);               // le 2048
  sizes.Record(uint64_t{1} << 40);  // above every bound
  EXPECT_EQ(sizes.bucket(0), 1u);
  EXPECT_EQ(sizes.bucket(1), 2u);
  EXPECT_EQ(sizes.bucket(2), 1u);
  EXPECT_EQ(sizes.bucket(internal::SizeRecord::kBuckets - 1), 1u);
  EXPECT_EQ(sizes.sum(), 0u + 1 + 1024 + 1025 + (uint64_t{1} << 40));
}

TEST(OwnedHistogramTest, LatencyBoundsInNanosecondsAreA66sSeconds) {
  EXPECT_EQ(internal::kLatencyBoundsNanos[1], 10'000u);
  EXPECT_EQ(internal::kLatencyBoundsNanos[4], 300'000u);
  EXPECT_EQ(internal::kLatencyBoundsNanos[22], 65'000'000u);
  EXPECT_EQ(internal::kLatencyBoundsNanos[40], 100'000'000'000u);
}

TEST(CallMetricsTest, SnapshotMergesShardsOfOneTargetAndMethod) {
  CallMetrics metrics;
  ClientMetricShard* a =
      CallMetricsAccess::AcquireClientShard(metrics, "dns:///a:1");
  ClientMetricShard* b =
      CallMetricsAccess::AcquireClientShard(metrics, "dns:///a:1");
  ASSERT_NE(a, b);
  for (ClientMetricShard* shard : {a, b}) {
    internal::ClientMethodStats& stats = shard->methods().For("/s.S/M");
    stats.attempts_started.Add(1);
    internal::ClientStatusStats& ok = stats.by_status.For(StatusCode::kOk);
    ok.attempt_duration.Record(250'000);  // 250 us: le 0.0003
    ok.attempt_sent.Record(100);
    ok.attempt_rcvd.Record(3000);
    ok.call_duration.Record(250'000);
  }
  a->methods()
      .For("/s.S/M")
      .by_status.For(StatusCode::kUnavailable)
      .attempt_duration.Record(5'000'000'000);

  const CallMetricsSnapshot snapshot = metrics.Snapshot();
  ASSERT_EQ(snapshot.client_started.size(), 1u);
  EXPECT_EQ(snapshot.client_started[0].target, "dns:///a:1");
  EXPECT_EQ(snapshot.client_started[0].method, "/s.S/M");
  EXPECT_EQ(snapshot.client_started[0].attempts, 2u);
  ASSERT_EQ(snapshot.client.size(), 2u);
  const CallMetricsSnapshot::ClientSeries& ok = snapshot.client[0];
  EXPECT_EQ(ok.code, StatusCode::kOk);
  EXPECT_EQ(ok.attempt_duration.count, 2u);
  EXPECT_DOUBLE_EQ(ok.attempt_duration.sum, 0.0005);
  ASSERT_EQ(ok.attempt_duration.bounds.size(), 41u);
  EXPECT_DOUBLE_EQ(ok.attempt_duration.bounds[4], 0.0003);
  EXPECT_EQ(ok.attempt_duration.buckets[4], 2u);
  EXPECT_EQ(ok.attempt_sent.buckets[1], 2u);  // le 1024
  EXPECT_EQ(ok.attempt_rcvd.buckets[3], 2u);  // le 4096
  EXPECT_EQ(ok.call_duration.count, 2u);
  const CallMetricsSnapshot::ClientSeries& unavailable = snapshot.client[1];
  EXPECT_EQ(unavailable.code, StatusCode::kUnavailable);
  EXPECT_EQ(unavailable.attempt_duration.count, 1u);
  EXPECT_DOUBLE_EQ(unavailable.attempt_duration.sum, 5.0);
  EXPECT_EQ(unavailable.call_duration.count, 0u);
}

TEST(CallMetricsTest, MethodsPastTheLimitAreRecordedAsOther) {
  CallMetrics::Options options;
  options.max_methods = 2;
  CallMetrics metrics(options);
  ServerMetricShard* shard =
      CallMetricsAccess::AcquireServerShard(metrics, nullptr);
  for (const char* method : {"/a", "/b", "/c", "/d", "/a"}) {
    shard->methods().For(method).calls_started.Add(1);
  }
  const CallMetricsSnapshot snapshot = metrics.Snapshot();
  ASSERT_EQ(snapshot.server_started.size(), 3u);
  EXPECT_EQ(snapshot.server_started[0].method, "/a");
  EXPECT_EQ(snapshot.server_started[0].calls, 2u);
  EXPECT_EQ(snapshot.server_started[1].method, "/b");
  EXPECT_EQ(snapshot.server_started[2].method, "other");
  EXPECT_EQ(snapshot.server_started[2].calls, 2u);
}

TEST(CallMetricsTest, BackendsPastTheLimitAreRecordedAsOther) {
  CallMetrics::Options options;
  options.max_backends = 2;
  CallMetrics metrics(options);
  ClientMetricShard* shard =
      CallMetricsAccess::AcquireClientShard(metrics, "dns:///a:1");
  for (const char* address : {"10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1",
                              "10.0.0.4:1", "10.0.0.1:1"}) {
    shard->backends().For(address).picks.Add(1);
  }
  const CallMetricsSnapshot snapshot = metrics.Snapshot();
  ASSERT_EQ(snapshot.client_backends.size(), 3u);
  EXPECT_EQ(snapshot.client_backends[0].address, "10.0.0.1:1");
  EXPECT_EQ(snapshot.client_backends[0].picks, 2u);
  EXPECT_EQ(snapshot.client_backends[1].address, "10.0.0.2:1");
  EXPECT_EQ(snapshot.client_backends[2].address, "other");
  EXPECT_EQ(snapshot.client_backends[2].picks, 2u);
}

TEST(CallMetricsTest, TargetFilterRecordsRefusedTargetsAsOther) {
  CallMetrics::Options options;
  options.target_filter = [](absl::string_view target) {
    return target.substr(0, 4) == "dns:";
  };
  CallMetrics metrics(options);
  CallMetricsAccess::AcquireClientShard(metrics, "ipv4:10.0.0.1:80")
      ->methods()
      .For("/s.S/M")
      .attempts_started.Add(1);
  CallMetricsAccess::AcquireClientShard(metrics, "dns:///x:1")
      ->methods()
      .For("/s.S/M")
      .attempts_started.Add(1);
  const CallMetricsSnapshot snapshot = metrics.Snapshot();
  ASSERT_EQ(snapshot.client_started.size(), 2u);
  EXPECT_EQ(snapshot.client_started[0].target, "dns:///x:1");
  EXPECT_EQ(snapshot.client_started[1].target, "other");
}

TEST(CallMetricsTest, AReleasedShardIsReusedForItsTargetAndKeepsItsCounts) {
  CallMetrics metrics;
  ClientMetricShard* first =
      CallMetricsAccess::AcquireClientShard(metrics, "dns:///a:1");
  first->methods().For("/m").attempts_started.Add(3);
  CallMetricsAccess::ReleaseClientShard(metrics, first);
  EXPECT_NE(CallMetricsAccess::AcquireClientShard(metrics, "dns:///b:1"),
            first);
  ClientMetricShard* again =
      CallMetricsAccess::AcquireClientShard(metrics, "dns:///a:1");
  EXPECT_EQ(again, first);
  again->methods().For("/m").attempts_started.Add(1);
  EXPECT_EQ(metrics.Snapshot().client_started[0].attempts, 4u);
}

TEST(CallMetricsTest, RecordingAKnownMethodAndStatusAllocatesNothing) {
  CallMetrics metrics;
  ServerMetricShard* shard =
      CallMetricsAccess::AcquireServerShard(metrics, nullptr);
  const auto record = [&] {
    internal::ServerMethodStats& stats = shard->methods().For("/s.S/M");
    stats.calls_started.Add(1);
    internal::ServerStatusStats& ok = stats.by_status.For(StatusCode::kOk);
    ok.call_duration.Record(1000);
    ok.call_sent.Record(10);
    ok.call_rcvd.Record(10);
  };
  record();
  testing::AllocationCounter counter;
  for (int i = 0; i < 100; ++i) record();
  EXPECT_EQ(counter.allocations(), 0);
}

TEST(CallMetricsTest, SnapshotsWhileTheWriterAddsMethodsSeeConsistentTables) {
  CallMetrics metrics;
  ServerMetricShard* shard =
      CallMetricsAccess::AcquireServerShard(metrics, nullptr);
  std::thread writer([shard] {
    for (int i = 0; i < 2000; ++i) {
      internal::ServerMethodStats& stats =
          shard->methods().For("/m" + std::to_string(i % 500));
      stats.calls_started.Add(1);
      stats.by_status.For(static_cast<StatusCode>(i % 17))
          .call_duration.Record(i);
    }
  });
  uint64_t last = 0;
  for (int i = 0; i < 200; ++i) {
    uint64_t calls = 0;
    for (const auto& started : metrics.Snapshot().server_started) {
      calls += started.calls;
    }
    EXPECT_GE(calls, last);  // counts never go down
    last = calls;
  }
  writer.join();
  uint64_t calls = 0;
  for (const auto& started : metrics.Snapshot().server_started) {
    calls += started.calls;
  }
  EXPECT_EQ(calls, 2000u);
}

}  // namespace
}  // namespace h2rpc
