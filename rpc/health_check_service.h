#ifndef H2RPC_RPC_HEALTH_CHECK_SERVICE_H_
#define H2RPC_RPC_HEALTH_CHECK_SERVICE_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "rpc/server.h"

namespace h2rpc {

namespace internal {
class StreamQuota;
}  // namespace internal

// Limits of a HealthCheckService. Every field: default, unit.
struct HealthCheckServiceOptions {
  // Longest service name a Check or Watch may ask about (gRPC's limit); a
  // longer one fails the call with INVALID_ARGUMENT naming its length and
  // the limit. Bytes.
  size_t max_service_name_length = 200;
  // Most Watch calls open at once, over all connections; one more fails at
  // once with RESOURCE_EXHAUSTED naming the limit. The bound on the whole
  // (the connections are bounded by ServerOptions::max_connections,
  // unlimited by default). An open watch holds a server stream (never a
  // worker thread) and about 150 bytes here. Watches.
  size_t max_watches = 10000;
  // Most Watch calls open at once on one connection (ServerContext::
  // connection_id()); one more on it fails at once with RESOURCE_EXHAUSTED
  // naming the limit, while other connections' watches go on. So one
  // client cannot take max_watches from the others (whose client-side
  // health checking would then take the server out of their rotation)
  // without opening max_watches / max_watches_per_connection connections;
  // a health-checking client needs one watch per service it balances on.
  // Watches.
  size_t max_watches_per_connection = 100;
};

// gRPC's health checking service, grpc.health.v1.Health (Check and Watch;
// proto/grpc/health/v1/health.proto), as gRPC C++'s default
// HealthCheckServiceInterface: the server sets a serving status per service
// name, and health clients (gRPC's, and load balancers' client-side health
// checking) ask for it or watch it.
//
//   HealthCheckService health;  // must outlive the server
//   health.SetServingStatus("echo.Echo", true);
//   Server::Builder builder;
//   builder.AddListeningPort("127.0.0.1:0", &port);
//   health.AddTo(builder);
//   std::unique_ptr<Server> server = builder.BuildAndStart(&status);
//   ...
//   health.SetServingStatus(false);  // every service NOT_SERVING: draining
//
// Statuses. Service "" (the server as a whole) is SERVING from
// construction, as in gRPC; any other name is unknown until
// SetServingStatus names it.
//
// Check answers the status (SERVING or NOT_SERVING), or NOT_FOUND for an
// unknown service. Watch sends the status at once (SERVICE_UNKNOWN for an
// unknown service, and the stream stays open), then a message each time
// it changes. A watcher that does not read gets only the latest status:
// each watch has at most one message being written and one status
// pending, the latest, so nothing queues however often the status changes
// (a message already handed to the connection still waits there for flow
// control). A watch ends when the client cancels it or when the server
// shuts down.
//
// Server shutdown. AddTo registers a shutdown callback
// (Server::Builder::AddShutdownCallback): when Server::Shutdown begins,
// the service does what Shutdown() does (every service NOT_SERVING), then
// ends every watch, once its last status is written, with UNAVAILABLE
// ("the server is shutting down"); a Watch arriving later (on a connection
// still draining) gets UNAVAILABLE at once. So open watches never keep
// Server::Shutdown waiting for its deadline (a watch whose client does not
// read still waits for flow control, up to the deadline).
//
// Threads. Every method may be called from any thread, concurrently. Check
// and Watch run on the server's loop threads as callback handlers: they
// never block a worker thread and never wait, beyond one mutex held for a
// lookup or to hand each watch the new status.
//
// Lifetime. Register one service object on one server (AddTo once); it
// must outlive the server. Destroying it while watches are open is misuse
// (reported; a debug build aborts).
//
// Allocations: SetServingStatus allocates a map node for a service name it
// has not seen; a Watch allocates its reactor (one object), its entry in
// the service's set of watchers, a map node for an unknown service, and,
// the first on its connection, the connection's count of watches;
// Check allocates nothing beyond the call's own.
class HealthCheckService {
 public:
  explicit HealthCheckService(
      HealthCheckServiceOptions options = HealthCheckServiceOptions());
  ~HealthCheckService();
  HealthCheckService(const HealthCheckService&) = delete;
  HealthCheckService& operator=(const HealthCheckService&) = delete;

  // Registers /grpc.health.v1.Health/Check and /Watch (callback handlers)
  // and the shutdown callback on `builder`. Before BuildAndStart; once.
  Server::Builder& AddTo(Server::Builder& builder);

  // Sets the status of `service` ("" is the server as a whole), and tells
  // its watchers if it changed. After Shutdown() the status is NOT_SERVING
  // whatever `serving` says (a new name is still recorded), as in gRPC.
  void SetServingStatus(absl::string_view service, bool serving);
  // Sets the status of every service named so far ("" included); ignored
  // after Shutdown(), as in gRPC.
  void SetServingStatus(bool serving);
  // Every service NOT_SERVING for good: later SetServingStatus calls cannot
  // make any SERVING. Open watches get NOT_SERVING and stay open (gRPC's
  // semantics); the server's shutdown ends them (see above). Idempotent.
  void Shutdown();

  // Watch calls open now: from their first status until they end (refused
  // ones never count). Any thread; for tests and monitoring.
  size_t open_watches() const;

 private:
  class Watcher;

  // A service's status, in grpc.health.v1's numbering (kUnknown: none).
  enum class Serving {
    kUnknown = 0,
    kServing = 1,
    kNotServing = 2,
    kServiceUnknown = 3
  };

  struct ServiceState {
    // kServiceUnknown until SetServingStatus names the service; an unknown
    // service has an entry only while someone watches it.
    Serving status = Serving::kServiceUnknown;
    std::unordered_set<Watcher*> watchers;
  };
  using ServiceMap = std::map<std::string, ServiceState, std::less<>>;

  // Sets `state` to `status` and tells its watchers if it changed.
  void Update(ServiceState& state, Serving status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShutdownLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Watcher::Send and Watcher::Close on a watcher of this service, whose
  // state mu_ guards.
  void SendTo(Watcher* watcher, Serving status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseWatch(Watcher* watcher) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shutdown callback: Shutdown(), then ends every watch.
  void OnServerShutdown();
  // Check's handler body: the status of `service` or an error.
  h2rpc::Status Check(absl::string_view service, Serving* status);
  // The error for a service name over the limit, or OK.
  h2rpc::Status CheckNameLength(absl::string_view service) const;

  const HealthCheckServiceOptions options_;
  mutable Mutex mu_;
  // Also guards every Watcher's state.
  ServiceMap services_ ABSL_GUARDED_BY(mu_);
  // The open watches (from their first status until they end).
  const std::unique_ptr<internal::StreamQuota> watches_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;         // Shutdown()
  bool server_shut_down_ ABSL_GUARDED_BY(mu_) = false;  // the callback ran
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_HEALTH_CHECK_SERVICE_H_
