#ifndef H2RPC_RPC_ORCA_SERVICE_H_
#define H2RPC_RPC_ORCA_SERVICE_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/orca.h"
#include "rpc/server.h"

namespace h2rpc {

namespace internal {
class StreamQuota;
}  // namespace internal

// Limits of an OrcaService. Every field: default, unit.
struct OrcaServiceOptions {
  // The shortest time between two reports on one stream: a client asking
  // for less (or for nothing) gets this (gRPC's default). A client asking
  // for more than a day gets a day. Time.
  absl::Duration min_report_interval = absl::Seconds(30);
  // Most StreamCoreMetrics calls open at once, over all connections; one
  // more fails at once with RESOURCE_EXHAUSTED naming the limit. An open
  // stream holds a server stream (never a worker thread) and about 200
  // bytes here. Streams.
  size_t max_streams = 10000;
  // Most open at once on one connection (ServerContext::connection_id());
  // one more on it fails at once with RESOURCE_EXHAUSTED naming the limit.
  // A client needs one per connection. Streams.
  size_t max_streams_per_connection = 10;
};

// ORCA's out-of-band load reporting service (gRPC's A51),
// xds.service.orca.v3.OpenRcaService/StreamCoreMetrics, as gRPC C++'s
// experimental::OrcaService: each call gets the server's figures, as
// `metrics` has them, at once and then every report interval (the one the
// client asks for, at least min_report_interval), until the client cancels
// it or the server shuts down. Clients: weighted_round_robin with
// enableOobLoadReport, and any LB policy through
// LbSubchannel::WatchLoadReports.
//
//   OrcaServerMetrics metrics;
//   OrcaService orca(&metrics);  // both must outlive the server
//   Server::Builder builder;
//   orca.AddTo(builder);
//   ...
//   metrics.SetCpuUtilization(0.4);  // in the next report of every stream
//
// A report never queues: a stream whose client has not taken the previous
// report yet (flow control) skips its turn.
//
// Server shutdown. AddTo registers a shutdown callback
// (Server::Builder::AddShutdownCallback) that ends every stream with
// UNAVAILABLE ("the server is shutting down"); a call arriving later gets
// UNAVAILABLE at once. So open streams never keep Server::Shutdown waiting.
//
// Threads. The streams run on the server's loop threads as callback
// handlers; one thread of the service's own, started with the first
// stream, sends each stream's reports when they are due (it holds the
// service's mutex only to hand a stream its report). Every method may be
// called from any thread.
//
// Lifetime. Register one service object on one server (AddTo once); it
// must outlive the server. Destroying it while streams are open is misuse
// (reported; a debug build aborts).
//
// Allocations: a stream allocates its reactor (one object), and the first
// on its connection the connection's count; a report copies the
// serialized figures, parses them into the stream's reused message and
// files the stream's next turn in the schedule (a set node).
class OrcaService {
 public:
  // `metrics` must outlive the service.
  explicit OrcaService(const OrcaServerMetrics* metrics,
                       OrcaServiceOptions options = OrcaServiceOptions());
  ~OrcaService();
  OrcaService(const OrcaService&) = delete;
  OrcaService& operator=(const OrcaService&) = delete;

  // Registers /xds.service.orca.v3.OpenRcaService/StreamCoreMetrics (a
  // callback handler) and the shutdown callback on `builder`. Before
  // BuildAndStart; once.
  Server::Builder& AddTo(Server::Builder& builder);

  // StreamCoreMetrics calls open now: from their first report until they
  // end (refused ones never count). Any thread; for tests and monitoring.
  size_t open_streams() const;

 private:
  class Stream;
  using Clock = std::chrono::steady_clock;
  // When each open stream's next report is due.
  using Schedule = std::set<std::pair<Clock::time_point, Stream*>>;

  // The reporting thread: sends each stream's report when it is due.
  void Run();
  // Adds `stream` to the schedule and starts the reporting thread if it
  // is not running.
  void ScheduleStream(Stream* stream, Clock::time_point due)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shutdown callback: ends every stream.
  void OnServerShutdown();
  // Stream::Report and Stream::End on a stream of this service, whose
  // state mu_ guards.
  void ReportOn(Stream* stream, Clock::time_point now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndStream(Stream* stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const OrcaServerMetrics* const metrics_;
  const OrcaServiceOptions options_;
  mutable Mutex mu_;
  CondVar wake_;  // the schedule's head changed, or stopping_
  // Also guards every Stream's state.
  Schedule schedule_ ABSL_GUARDED_BY(mu_);
  // The open streams.
  const std::unique_ptr<internal::StreamQuota> streams_ ABSL_GUARDED_BY(mu_);
  bool server_shut_down_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // the destructor runs
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_ORCA_SERVICE_H_
