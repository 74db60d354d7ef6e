#ifndef H2RPC_RPC_CALL_METRICS_H_
#define H2RPC_RPC_CALL_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "rpc/status.h"

namespace h2rpc {

namespace transport {
class MemoryQuota;
}  // namespace transport

namespace internal {
class CallMetricsAccess;
class ClientMetricShard;
class ServerMetricShard;
}  // namespace internal

// A histogram as read: bucket i counts the values at most bounds[i] (and
// above bounds[i - 1]); the last bucket, one more than there are bounds,
// the values above every bound (+Inf).
struct HistogramData {
  std::vector<double> bounds;
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  double sum = 0;
};

// gRPC's standard call metrics (gRPC proposal A66), as read at one moment.
// Latencies in seconds, sizes in bytes (messages as sent, compressed if
// they were, without gRPC's 5-byte prefixes).
struct CallMetricsSnapshot {
  // A channel target's method with one status code (`code` is the
  // attempt's status for the attempt histograms, the call's for
  // call_duration).
  struct ClientSeries {
    std::string target;
    std::string method;
    StatusCode code = StatusCode::kOk;
    HistogramData attempt_duration;  // grpc.client.attempt.duration
    // grpc.client.attempt.sent_total_compressed_message_size
    HistogramData attempt_sent;
    // grpc.client.attempt.rcvd_total_compressed_message_size
    HistogramData attempt_rcvd;
    HistogramData call_duration;  // grpc.client.call.duration
  };
  // A channel target's method's retries (gRPC proposal A96), over the
  // calls that had any.
  struct ClientRetries {
    std::string target;
    std::string method;
    // grpc.client.call.retries: retries per call, transparent ones not
    // counted (calls that had one or more).
    HistogramData retries;
    // grpc.client.call.transparent_retries (calls that had one or more).
    HistogramData transparent_retries;
    // grpc.client.call.retry_delay: per call that had a retry of either
    // kind, the time no attempt was under way, in seconds.
    HistogramData retry_delay;
  };
  struct ClientStarted {
    std::string target;
    std::string method;
    uint64_t attempts = 0;  // grpc.client.attempt.started
  };
  struct ServerSeries {
    std::string method;
    StatusCode code = StatusCode::kOk;
    HistogramData call_duration;  // grpc.server.call.duration
    // grpc.server.call.sent_total_compressed_message_size
    HistogramData call_sent;
    // grpc.server.call.rcvd_total_compressed_message_size
    HistogramData call_rcvd;
  };
  struct ServerStarted {
    std::string method;
    uint64_t calls = 0;  // grpc.server.call.started
  };
  // A channel target's connections (gRPC proposal A94).
  struct ClientConnections {
    std::string target;
    // grpc.subchannel.connection_attempts_succeeded (the HTTP/2 handshake
    // completed) and _failed.
    uint64_t attempts_succeeded = 0;
    uint64_t attempts_failed = 0;
    // grpc.subchannel.open_connections.
    uint64_t open = 0;
    // grpc.subchannel.disconnections by grpc.disconnect_error ("GOAWAY
    // NO_ERROR", "subchannel shutdown", "connection reset", "connection
    // timed out", "connection aborted", "socket error", "unknown"), those
    // that happened.
    std::vector<std::pair<std::string, uint64_t>> disconnections;
  };

  // The servers' connections, all loops of all servers together (h2rpc's
  // own instruments; gRPC names none for servers).
  struct ServerConnections {
    // A server recorded into these metrics (else every count is zero and
    // left out of the Prometheus text).
    bool recorded = false;
    uint64_t open = 0;                // h2rpc.server.connections
    uint64_t open_streams = 0;        // h2rpc.server.streams
    uint64_t keepalive_timeouts = 0;  // h2rpc.server.keepalive_timeouts
    // h2rpc.server.goaways_sent by h2rpc.goaway_error ("NO_ERROR"), those
    // that happened.
    std::vector<std::pair<std::string, uint64_t>> goaways_sent;
    // h2rpc.server.memory_quota.used: the bytes the running servers hold
    // of their memory quotas (ServerOptions::memory_quota).
    uint64_t memory_quota_used = 0;
  };

  // The calls a channel target's load-balancing policy sent to each
  // backend address (h2rpc.client.lb.picks, labelled grpc.target and
  // h2rpc.backend); at most Options::max_backends addresses per channel,
  // the rest "other".
  struct ClientBackend {
    std::string target;
    std::string address;
    uint64_t picks = 0;
  };

  // Sorted by target, method, code; only what was recorded.
  std::vector<ClientStarted> client_started;
  std::vector<ClientSeries> client;
  std::vector<ClientRetries> client_retries;
  std::vector<ServerStarted> server_started;
  std::vector<ServerSeries> server;
  // Sorted by target; targets that made a connection attempt.
  std::vector<ClientConnections> client_connections;
  // Sorted by target and address; addresses picked at least once.
  std::vector<ClientBackend> client_backends;
  ServerConnections server_connections;
};

// Records gRPC's standard per-call metrics (A66) for the channels and
// servers given it (ChannelOptions::metrics, ServerOptions::metrics):
//
//   client: grpc.client.attempt.started, grpc.client.attempt.duration,
//     grpc.client.attempt.sent_total_compressed_message_size,
//     grpc.client.attempt.rcvd_total_compressed_message_size and
//     grpc.client.call.duration, labelled grpc.method, grpc.target and
//     (all but the first) grpc.status; and gRPC's A96 retry instruments,
//     grpc.client.call.retries, grpc.client.call.transparent_retries and
//     grpc.client.call.retry_delay, labelled grpc.method and grpc.target;
//   server: grpc.server.call.started, grpc.server.call.duration,
//     grpc.server.call.sent_total_compressed_message_size and
//     grpc.server.call.rcvd_total_compressed_message_size, labelled
//     grpc.method and (all but the first) grpc.status;
//
// with A66's buckets; and the channels' connections as gRPC's A94 counts
// them: grpc.subchannel.connection_attempts_succeeded, _failed,
// grpc.subchannel.disconnections (by grpc.disconnect_error) and
// grpc.subchannel.open_connections, labelled grpc.target; and the servers'
// connections: h2rpc.server.connections and h2rpc.server.streams (open
// now), h2rpc.server.keepalive_timeouts, h2rpc.server.goaways_sent (by
// h2rpc.goaway_error) and h2rpc.server.memory_quota.used. Methods no service
// registered (a server's generic service or unknown paths, a channel's generic
// calls) are recorded as "other" unless Options::record_generic_methods says
// otherwise, and each channel or server loop records at most
// Options::max_methods names, the rest as "other", so a peer naming endless
// methods cannot grow it.
//
// Cost: recording happens on the loop threads, each channel and server
// loop into a shard of its own (no lock, no read-modify-write instruction,
// two clock reads per call per side); the first call of a method and
// status allocates its buckets, later ones nothing. A channel or server
// without metrics pays one branch per call.
//
// Thread-safe. Channels and servers hold it by shared_ptr; what they
// recorded stays after they are gone (counters never go down), and a new
// channel to a target recorded before continues its counts.
class CallMetrics {
 public:
  struct Options {
    // Record the methods of generic calls and services under their names
    // instead of "other" (still bounded by max_methods).
    bool record_generic_methods = false;
    // Method names recorded per channel and per server loop, each side
    // apart; later ones are recorded as "other".
    size_t max_methods = 1000;
    // Backend addresses whose picks are recorded per channel (the
    // resolver's answers name them); later ones are recorded as "other".
    size_t max_backends = 1000;
    // Called when a channel is made (on its creator's thread): false
    // records its target as "other" (A66's override for channels made to
    // many IP addresses). Null: every target as is.
    std::function<bool(absl::string_view target)> target_filter;
  };

  CallMetrics() : CallMetrics(Options()) {}
  explicit CallMetrics(Options options);
  ~CallMetrics();
  CallMetrics(const CallMetrics&) = delete;
  CallMetrics& operator=(const CallMetrics&) = delete;

  // Any thread; allocates the copy. Merges every shard.
  CallMetricsSnapshot Snapshot() const;

  const Options& options() const { return options_; }

 private:
  friend class internal::CallMetricsAccess;

  // A shard for a channel to `target` (recorded as the filter says): a
  // released one with that target if there is one. Valid until this
  // object is destroyed; ReleaseClientShard when the channel is gone.
  internal::ClientMetricShard* AcquireClientShard(absl::string_view target);
  void ReleaseClientShard(internal::ClientMetricShard* shard);
  // A server loop's shard; the server's `memory_quota` (which must stay
  // valid until the shard is released) is read by snapshots meanwhile.
  internal::ServerMetricShard* AcquireServerShard(
      const transport::MemoryQuota* memory_quota);
  void ReleaseServerShard(internal::ServerMetricShard* shard);

  const Options options_;
  mutable Mutex mu_;
  // Every shard ever made, with whether a writer holds it.
  struct ClientEntry {
    std::unique_ptr<internal::ClientMetricShard> shard;
    bool in_use;
  };
  struct ServerEntry {
    std::unique_ptr<internal::ServerMetricShard> shard;
    bool in_use;
    // While in use: its server's quota.
    const transport::MemoryQuota* memory_quota;
  };
  std::vector<ClientEntry> client_shards_ ABSL_GUARDED_BY(mu_);
  std::vector<ServerEntry> server_shards_ ABSL_GUARDED_BY(mu_);
};

namespace internal {
// How channels and servers take their shards.
class CallMetricsAccess {
 public:
  static ClientMetricShard* AcquireClientShard(CallMetrics& metrics,
                                               absl::string_view target) {
    return metrics.AcquireClientShard(target);
  }
  static void ReleaseClientShard(CallMetrics& metrics,
                                 ClientMetricShard* shard) {
    metrics.ReleaseClientShard(shard);
  }
  static ServerMetricShard* AcquireServerShard(
      CallMetrics& metrics, const transport::MemoryQuota* memory_quota) {
    return metrics.AcquireServerShard(memory_quota);
  }
  static void ReleaseServerShard(CallMetrics& metrics,
                                 ServerMetricShard* shard) {
    metrics.ReleaseServerShard(shard);
  }
};
}  // namespace internal

}  // namespace h2rpc

#endif  // H2RPC_RPC_CALL_METRICS_H_
