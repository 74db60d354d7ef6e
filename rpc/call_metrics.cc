#include "rpc/call_metrics.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "rpc/internal/call_metric_shards.h"
#include "transport/core/memory_quota.h"

namespace h2rpc {
namespace {

using internal::ClientMethodStats;
using internal::ClientMetricShard;
using internal::ClientStatusStats;
using internal::ServerMethodStats;
using internal::ServerMetricShard;
using internal::ServerStatusStats;

// Adds `record` to `data`, giving `data` the bounds the first time (the
// record's, in the unit of `bounds`) and dividing its sum by `scale`.
template <class Record, class Bounds>
void AddTo(const Record& record, const Bounds& bounds, double scale,
           HistogramData* data) {
  static_assert(std::tuple_size<Bounds>::value + 1 == Record::kBuckets);
  if (data->buckets.empty()) {
    data->bounds.assign(bounds.begin(), bounds.end());
    data->buckets.assign(Record::kBuckets, 0);
  }
  for (size_t i = 0; i < Record::kBuckets; ++i) {
    const uint64_t n = record.bucket(i);
    data->buckets[i] += n;
    data->count += n;
  }
  data->sum += static_cast<double>(record.sum()) / scale;
}

void AddLatency(const internal::LatencyRecord& record, HistogramData* data) {
  AddTo(record, internal::kLatencyBoundsSeconds, 1e9, data);
}
void AddSize(const internal::SizeRecord& record, HistogramData* data) {
  AddTo(record, internal::kSizeBounds, 1, data);
}

// How many values `record` counted.
template <class Record>
uint64_t CountOf(const Record& record) {
  uint64_t count = 0;
  for (size_t i = 0; i < Record::kBuckets; ++i) count += record.bucket(i);
  return count;
}

using MethodKey = std::pair<std::string, std::string>;  // target, method
using SeriesKey = std::tuple<std::string, std::string, int>;

}  // namespace

namespace internal {

absl::string_view DisconnectReasonName(int reason) {
  // RFC 9113's error codes, in order.
  static constexpr absl::string_view kNames[kDisconnectReasons] = {
      "GOAWAY NO_ERROR",
      "GOAWAY PROTOCOL_ERROR",
      "GOAWAY INTERNAL_ERROR",
      "GOAWAY FLOW_CONTROL_ERROR",
      "GOAWAY SETTINGS_TIMEOUT",
      "GOAWAY STREAM_CLOSED",
      "GOAWAY FRAME_SIZE_ERROR",
      "GOAWAY REFUSED_STREAM",
      "GOAWAY CANCEL",
      "GOAWAY COMPRESSION_ERROR",
      "GOAWAY CONNECT_ERROR",
      "GOAWAY ENHANCE_YOUR_CALM",
      "GOAWAY INADEQUATE_SECURITY",
      "GOAWAY HTTP_1_1_REQUIRED",
      "subchannel shutdown",
      "connection reset",
      "connection timed out",
      "connection aborted",
      "socket error",
      "unknown"};
  return reason >= 0 && reason < kDisconnectReasons
             ? kNames[reason]
             : kNames[kUnknownDisconnect];
}

}  // namespace internal

CallMetrics::CallMetrics(Options options) : options_(std::move(options)) {}

CallMetrics::~CallMetrics() = default;

internal::ClientMetricShard* CallMetrics::AcquireClientShard(
    absl::string_view target) {
  const bool named =
      options_.target_filter == nullptr || options_.target_filter(target);
  const absl::string_view recorded = named ? target : internal::kOtherMethod;
  MutexLock lock(&mu_);
  for (ClientEntry& entry : client_shards_) {
    if (!entry.in_use && entry.shard->target() == recorded) {
      entry.in_use = true;
      return entry.shard.get();
    }
  }
  client_shards_.push_back(ClientEntry{
      std::make_unique<ClientMetricShard>(
          std::string(recorded), options_.max_methods, options_.max_backends,
          options_.record_generic_methods),
      true});
  return client_shards_.back().shard.get();
}

void CallMetrics::ReleaseClientShard(internal::ClientMetricShard* shard) {
  MutexLock lock(&mu_);
  for (ClientEntry& entry : client_shards_) {
    if (entry.shard.get() == shard) entry.in_use = false;
  }
}

internal::ServerMetricShard* CallMetrics::AcquireServerShard(
    const transport::MemoryQuota* memory_quota) {
  MutexLock lock(&mu_);
  for (ServerEntry& entry : server_shards_) {
    if (!entry.in_use) {
      entry.in_use = true;
      entry.memory_quota = memory_quota;
      return entry.shard.get();
    }
  }
  server_shards_.push_back(ServerEntry{
      std::make_unique<ServerMetricShard>(options_.max_methods), true,
      memory_quota});
  return server_shards_.back().shard.get();
}

void CallMetrics::ReleaseServerShard(internal::ServerMetricShard* shard) {
  MutexLock lock(&mu_);
  for (ServerEntry& entry : server_shards_) {
    if (entry.shard.get() == shard) {
      entry.in_use = false;
      entry.memory_quota = nullptr;
    }
  }
}

CallMetricsSnapshot CallMetrics::Snapshot() const {
  std::map<MethodKey, uint64_t> client_started;
  std::map<SeriesKey, CallMetricsSnapshot::ClientSeries> client;
  std::map<MethodKey, CallMetricsSnapshot::ClientRetries> client_retries;
  std::map<std::pair<std::string, std::string>, uint64_t> backends;
  std::map<std::string, uint64_t> server_started;
  std::map<std::pair<std::string, int>, CallMetricsSnapshot::ServerSeries>
      server;
  struct ConnectionTotals {
    uint64_t succeeded = 0;
    uint64_t failed = 0;
    std::array<uint64_t, internal::kDisconnectReasons> disconnections{};
  };
  std::map<std::string, ConnectionTotals> connections;
  CallMetricsSnapshot::ServerConnections server_connections;
  {
    MutexLock lock(&mu_);
    for (const ClientEntry& entry : client_shards_) {
      const std::string& target = entry.shard->target();
      const internal::ConnectionStats& stats = entry.shard->connections();
      const uint64_t succeeded = stats.attempts_succeeded.Read();
      const uint64_t failed = stats.attempts_failed.Read();
      if (succeeded + failed > 0) {
        ConnectionTotals& totals = connections[target];
        totals.succeeded += succeeded;
        totals.failed += failed;
        for (int reason = 0; reason < internal::kDisconnectReasons; ++reason) {
          totals.disconnections[reason] += stats.disconnections[reason].Read();
        }
      }
      entry.shard->backends().ForEach(
          [&](absl::string_view address, const internal::BackendStats& stats) {
            const uint64_t picks = stats.picks.Read();
            if (picks > 0) backends[{target, std::string(address)}] += picks;
          });
      entry.shard->methods().ForEach(
          [&](absl::string_view method, const ClientMethodStats& stats) {
            const uint64_t started = stats.attempts_started.Read();
            if (started > 0) {
              client_started[MethodKey(target, std::string(method))] += started;
            }
            if (CountOf(stats.retry_delay) > 0) {
              CallMetricsSnapshot::ClientRetries& retries =
                  client_retries[MethodKey(target, std::string(method))];
              AddTo(stats.retries, internal::kRetryBounds, 1,
                    &retries.retries);
              AddTo(stats.transparent_retries,
                    internal::kTransparentRetryBounds, 1,
                    &retries.transparent_retries);
              AddLatency(stats.retry_delay, &retries.retry_delay);
            }
            for (int code = 0; code <= kMaxStatusCode; ++code) {
              const ClientStatusStats* by_code = stats.by_status.Find(code);
              if (by_code == nullptr) continue;
              CallMetricsSnapshot::ClientSeries& series =
                  client[SeriesKey(target, std::string(method), code)];
              AddLatency(by_code->attempt_duration, &series.attempt_duration);
              AddSize(by_code->attempt_sent, &series.attempt_sent);
              AddSize(by_code->attempt_rcvd, &series.attempt_rcvd);
              AddLatency(by_code->call_duration, &series.call_duration);
            }
          });
    }
    // A server's loops share its quota: each counted once.
    std::set<const transport::MemoryQuota*> quotas;
    std::array<uint64_t, kHttp2ErrorCodes> goaways{};
    for (const ServerEntry& entry : server_shards_) {
      if (entry.memory_quota != nullptr) quotas.insert(entry.memory_quota);
      const ConnectionEventCounts& events = entry.shard->connection_events();
      // Each pair read closed after opened: never fewer closed than are.
      const uint64_t closed = events.closed.Read();
      const uint64_t opened = events.opened.Read();
      const uint64_t streams_closed = events.streams_closed.Read();
      const uint64_t streams_opened = events.streams_opened.Read();
      server_connections.open += opened - std::min(opened, closed);
      server_connections.open_streams +=
          streams_opened - std::min(streams_opened, streams_closed);
      server_connections.keepalive_timeouts += events.keepalive_timeouts.Read();
      for (int code = 0; code < kHttp2ErrorCodes; ++code) {
        goaways[code] += events.goaways_sent[code].Read();
      }
      entry.shard->methods().ForEach(
          [&](absl::string_view method, const ServerMethodStats& stats) {
            const uint64_t started = stats.calls_started.Read();
            if (started > 0) server_started[std::string(method)] += started;
            for (int code = 0; code <= kMaxStatusCode; ++code) {
              const ServerStatusStats* by_code = stats.by_status.Find(code);
              if (by_code == nullptr) continue;
              CallMetricsSnapshot::ServerSeries& series =
                  server[std::make_pair(std::string(method), code)];
              AddLatency(by_code->call_duration, &series.call_duration);
              AddSize(by_code->call_sent, &series.call_sent);
              AddSize(by_code->call_rcvd, &series.call_rcvd);
            }
          });
    }
    server_connections.recorded = !server_shards_.empty();
    for (const transport::MemoryQuota* quota : quotas) {
      server_connections.memory_quota_used += quota->used();
    }
    for (int code = 0; code < kHttp2ErrorCodes; ++code) {
      if (goaways[code] == 0) continue;
      // "GOAWAY NO_ERROR" less "GOAWAY ".
      server_connections.goaways_sent.emplace_back(
          std::string(internal::DisconnectReasonName(code).substr(7)),
          goaways[code]);
    }
  }
  CallMetricsSnapshot snapshot;
  for (auto& [key, attempts] : client_started) {
    snapshot.client_started.push_back({key.first, key.second, attempts});
  }
  for (auto& [key, series] : client) {
    series.target = std::get<0>(key);
    series.method = std::get<1>(key);
    series.code = static_cast<StatusCode>(std::get<2>(key));
    snapshot.client.push_back(std::move(series));
  }
  for (auto& [key, retries] : client_retries) {
    retries.target = key.first;
    retries.method = key.second;
    snapshot.client_retries.push_back(std::move(retries));
  }
  for (auto& [method, calls] : server_started) {
    snapshot.server_started.push_back({method, calls});
  }
  for (auto& [key, series] : server) {
    series.method = key.first;
    series.code = static_cast<StatusCode>(key.second);
    snapshot.server.push_back(std::move(series));
  }
  for (const auto& [target, totals] : connections) {
    CallMetricsSnapshot::ClientConnections& out =
        snapshot.client_connections.emplace_back();
    out.target = target;
    out.attempts_succeeded = totals.succeeded;
    out.attempts_failed = totals.failed;
    uint64_t ended = 0;
    for (int reason = 0; reason < internal::kDisconnectReasons; ++reason) {
      const uint64_t count = totals.disconnections[reason];
      if (count == 0) continue;
      ended += count;
      out.disconnections.emplace_back(
          std::string(internal::DisconnectReasonName(reason)), count);
    }
    // The two counts are read one after the other: a connection opened and
    // closed in between may show as ended only.
    out.open = totals.succeeded > ended ? totals.succeeded - ended : 0;
  }
  for (const auto& [key, picks] : backends) {
    snapshot.client_backends.push_back({key.first, key.second, picks});
  }
  snapshot.server_connections = std::move(server_connections);
  return snapshot;
}

}  // namespace h2rpc
