#ifndef H2RPC_RPC_INTERNAL_CALL_METRIC_SHARDS_H_
#define H2RPC_RPC_INTERNAL_CALL_METRIC_SHARDS_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "base/connection_events.h"
#include "base/mutex.h"
#include "base/owned_counter.h"
#include "rpc/status.h"

namespace h2rpc::internal {

// Where CallMetrics (rpc/call_metrics.h) records: one shard per writer (a
// channel's loop thread, a server loop's thread), merged when read. A shard
// has exactly one writer at a time, so recording is plain loads and stores
// of relaxed atomics: no lock, no read-modify-write instruction, no
// allocation once a method and status have been seen. Readers (snapshots)
// may run on any thread at any time; they see each value whole, but a
// histogram's buckets and sum as of slightly different moments.

// The bucket bounds of gRPC's standard metrics (A66): a value v falls in
// the first bucket whose bound is >= v, or in the last one (+Inf).
inline constexpr std::array<double, 41> kLatencyBoundsSeconds = {
    0,     0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002,
    0.003, 0.004,   0.005,   0.006,  0.008,  0.01,   0.013,  0.016, 0.02,
    0.025, 0.03,    0.04,    0.05,   0.065,  0.08,   0.1,    0.13,  0.16,
    0.2,   0.25,    0.3,     0.4,    0.5,    0.65,   0.8,    1,     2,
    5,     10,      20,      50,     100};
constexpr std::array<uint64_t, 41> ToNanos(
    const std::array<double, 41>& seconds) {
  std::array<uint64_t, 41> nanos{};
  for (size_t i = 0; i < seconds.size(); ++i) {
    nanos[i] = static_cast<uint64_t>(seconds[i] * 1e9 + 0.5);
  }
  return nanos;
}
inline constexpr std::array<uint64_t, 41> kLatencyBoundsNanos =
    ToNanos(kLatencyBoundsSeconds);
inline constexpr std::array<uint64_t, 14> kSizeBounds = {
    0,       1024,    2048,     4096,     16384,     65536,      262144,
    1048576, 4194304, 16777216, 67108864, 268435456, 1073741824, 4294967296};

// A96's retry counts per call.
inline constexpr std::array<uint64_t, 5> kRetryBounds = {1, 2, 3, 4, 5};
inline constexpr std::array<uint64_t, 6> kTransparentRetryBounds = {1, 2, 3,
                                                                    4, 5, 10};

// A histogram over `kBounds` written by one thread at a time: a count per
// bucket (kBounds.size() + 1, the last above every bound) and the sum.
template <const auto& kBounds>
class OwnedHistogram {
 public:
  static constexpr size_t kBuckets = kBounds.size() + 1;

  void Record(uint64_t value) {
    const size_t bucket =
        std::lower_bound(kBounds.begin(), kBounds.end(), value) -
        kBounds.begin();
    buckets_[bucket].Add(1);
    sum_.Add(value);
  }
  uint64_t bucket(size_t i) const { return buckets_[i].Read(); }
  uint64_t sum() const { return sum_.Read(); }

 private:
  std::array<OwnedCounter, kBuckets> buckets_;
  OwnedCounter sum_;
};

// Nanoseconds, bytes, retries.
using LatencyRecord = OwnedHistogram<kLatencyBoundsNanos>;
using SizeRecord = OwnedHistogram<kSizeBounds>;
using RetryRecord = OwnedHistogram<kRetryBounds>;
using TransparentRetryRecord = OwnedHistogram<kTransparentRetryBounds>;

// What a channel records per method and status code: its attempts and its
// calls (an attempt's status and its call's may differ).
struct ClientStatusStats {
  LatencyRecord attempt_duration;
  SizeRecord attempt_sent;
  SizeRecord attempt_rcvd;
  LatencyRecord call_duration;
};

// What a server records per method and status code.
struct ServerStatusStats {
  LatencyRecord call_duration;
  SizeRecord call_sent;
  SizeRecord call_rcvd;
};

// Stats per status code, each allocated the first time its code is
// recorded.
template <class Stats>
class ByStatus {
 public:
  ByStatus() = default;
  ByStatus(const ByStatus&) = delete;
  ByStatus& operator=(const ByStatus&) = delete;
  ~ByStatus() {
    for (std::atomic<Stats*>& stats : stats_) delete stats.load();
  }

  // The writer: the stats of `code` (UNKNOWN's for a value outside the
  // enum); allocates the first time.
  Stats& For(StatusCode code) {
    int index = static_cast<int>(code);
    if (index < 0 || index > kMaxStatusCode) {
      index = static_cast<int>(StatusCode::kUnknown);
    }
    Stats* stats = stats_[index].load(std::memory_order_relaxed);
    if (stats == nullptr) {
      stats = new Stats();
      stats_[index].store(stats, std::memory_order_release);
    }
    return *stats;
  }
  // Any thread: the stats of code `index`, null if never recorded.
  const Stats* Find(int index) const {
    return stats_[index].load(std::memory_order_acquire);
  }

 private:
  std::array<std::atomic<Stats*>, kMaxStatusCode + 1> stats_{};
};

struct ClientMethodStats {
  OwnedCounter attempts_started;
  ByStatus<ClientStatusStats> by_status;
  // A96's, per call that had them: retries (transparent ones not counted),
  // transparent retries, and the time without an attempt under way between
  // the first attempt's start and the last one's (nanoseconds).
  RetryRecord retries;
  TransparentRetryRecord transparent_retries;
  LatencyRecord retry_delay;
};

struct ServerMethodStats {
  OwnedCounter calls_started;
  ByStatus<ServerStatusStats> by_status;
};

// The label of methods not recorded by name (A66): unregistered ones, and
// those past a table's max_methods.
inline constexpr absl::string_view kOtherMethod = "other";

// Stats by method name: the writer looks methods up without a lock (it is
// the only thread that adds to the table); adding one takes the lock, and
// so does reading.
template <class Stats>
class MethodTable {
 public:
  explicit MethodTable(size_t max_methods) : max_methods_(max_methods) {}
  MethodTable(const MethodTable&) = delete;
  MethodTable& operator=(const MethodTable&) = delete;

  // The writer: the stats of `method`; kOtherMethod's when it is that name
  // or the table already holds max_methods others. Allocates the first time
  // it sees a method.
  Stats& For(absl::string_view method) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    // The method of the previous call first: calls of one method in a row
    // compare its name instead of hashing it.
    if (last_ != nullptr && method == last_->first) return *last_->second;
    // Without the lock: only this thread changes methods_, and readers hold
    // the lock (their reads and this one do not conflict).
    auto it = methods_.find(method);
    if (it == methods_.end()) {
      if (method == kOtherMethod || methods_.size() >= max_methods_) {
        return other_;
      }
      MutexLock lock(&mu_);
      it = methods_.emplace(method, std::make_unique<Stats>()).first;
    }
    // Valid until the next insertion (which may move the entries), and
    // only this function inserts, setting it again.
    last_ = &*it;
    return *it->second;
  }
  Stats& other() { return other_; }

  // Any thread: `visit(name, stats)` for every method, kOtherMethod last.
  template <class Visit>
  void ForEach(Visit visit) const {
    {
      MutexLock lock(&mu_);
      for (const auto& [name, stats] : methods_) visit(name, *stats);
    }
    visit(kOtherMethod, other_);
  }

 private:
  const size_t max_methods_;
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Stats>> methods_
      ABSL_GUARDED_BY(mu_);
  // The writer's last hit in methods_.
  const std::pair<const std::string, std::unique_ptr<Stats>>* last_ = nullptr;
  Stats other_;
};

// Why a channel's connection ended (A94's grpc.disconnect_error): the
// first GOAWAY it received (by HTTP/2 error code, NO_ERROR to
// HTTP_1_1_REQUIRED), the subchannel's own shutdown, a socket error (reset,
// timed out, a keepalive timeout included, aborted, or another), or
// anything else.
inline constexpr int kGoAwayReasons = 14;
inline constexpr int kSubchannelShutdown = kGoAwayReasons;
inline constexpr int kConnectionReset = kGoAwayReasons + 1;
inline constexpr int kConnectionTimedOut = kGoAwayReasons + 2;
inline constexpr int kConnectionAborted = kGoAwayReasons + 3;
inline constexpr int kSocketError = kGoAwayReasons + 4;
inline constexpr int kUnknownDisconnect = kGoAwayReasons + 5;
inline constexpr int kDisconnectReasons = kGoAwayReasons + 6;
// "GOAWAY NO_ERROR", "subchannel shutdown", "connection reset", ...,
// "unknown".
absl::string_view DisconnectReasonName(int reason);

// A channel's connections (A94's subchannel metrics).
struct ConnectionStats {
  OwnedCounter attempts_succeeded;  // the HTTP/2 handshake completed
  OwnedCounter attempts_failed;
  std::array<OwnedCounter, kDisconnectReasons> disconnections;
};

// The calls a channel's load-balancing policy sent to one backend address.
struct BackendStats {
  OwnedCounter picks;
};

// A channel's shard: its target (as recorded), its methods, its
// connections and its backends.
class ClientMetricShard {
 public:
  ClientMetricShard(std::string target, size_t max_methods,
                    size_t max_backends, bool record_generic_methods)
      : target_(std::move(target)),
        record_generic_methods_(record_generic_methods),
        methods_(max_methods),
        backends_(max_backends) {}
  const std::string& target() const { return target_; }
  // CallMetrics::Options::record_generic_methods.
  bool record_generic_methods() const { return record_generic_methods_; }
  MethodTable<ClientMethodStats>& methods() { return methods_; }
  const MethodTable<ClientMethodStats>& methods() const { return methods_; }
  ConnectionStats& connections() { return connections_; }
  const ConnectionStats& connections() const { return connections_; }
  // By address ("127.0.0.1:50051"), written by the channel's loop thread.
  MethodTable<BackendStats>& backends() { return backends_; }
  const MethodTable<BackendStats>& backends() const { return backends_; }

 private:
  const std::string target_;
  const bool record_generic_methods_;
  MethodTable<ClientMethodStats> methods_;
  ConnectionStats connections_;
  MethodTable<BackendStats> backends_;
};

// A server loop's shard: its methods, and its connections' events, which
// their sessions count (Session::set_event_counts).
class ServerMetricShard {
 public:
  explicit ServerMetricShard(size_t max_methods) : methods_(max_methods) {}
  MethodTable<ServerMethodStats>& methods() { return methods_; }
  const MethodTable<ServerMethodStats>& methods() const { return methods_; }
  ConnectionEventCounts& connection_events() { return connection_events_; }
  const ConnectionEventCounts& connection_events() const {
    return connection_events_;
  }

 private:
  MethodTable<ServerMethodStats> methods_;
  ConnectionEventCounts connection_events_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CALL_METRIC_SHARDS_H_
