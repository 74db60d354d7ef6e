#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_CORE_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_CORE_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/compression.h"
#include "rpc/interceptor.h"
#include "rpc/internal/common/listening_port.h"
#include "rpc/internal/common/method.h"
#include "rpc/internal/server/server_call_host.h"
#include "rpc/internal/server/server_listener.h"
#include "rpc/internal/server/server_loop.h"
#include "rpc/server_options.h"
#include "rpc/status.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/session.h"

namespace h2rpc {

namespace internal {

// Everything behind a Server: its loops and their connections, the
// listeners, the worker pool, the memory quota, the method table, the
// counts of connections and calls, and Shutdown. Server forwards to it; the
// loops, listeners and calls see it only through the narrow interfaces it
// implements (ServerLoop::Host, ServerListener::Host, ServerCallHost).
//
// Threads: Shutdown, Wait and live_calls from any thread but the server's
// own; the interfaces as they say.
class ServerCore final : public ServerCallHost,
                         public ServerLoop::Host,
                         public ServerListener::Host {
 public:
  using MethodMap = internal::MethodMap;

  // Checks `options`, binds `ports` (as Server::Builder::AddListeningPort
  // takes them, and where to write the port picked for port 0), starts the
  // loops and the listeners. `generic_method` (may be null) serves the
  // calls no method of `methods` claims. Non-empty `loops` (started and
  // run by their owner until the server has shut down) are the server's
  // loops, in place of its own (ServerOptions::num_loops, loop_cpus and
  // busy_poll_us then do not apply). Returns null and sets `*status` as
  // Server::Builder::BuildAndStart says.
  static std::unique_ptr<ServerCore> Start(
      ServerOptions options, const std::vector<ListeningPort>& ports,
      MethodMap methods, std::unique_ptr<Method> generic_method,
      const std::vector<transport::io::EventLoop*>& loops, Status* status);
  // Shutdown(now) and Wait().
  ~ServerCore();
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  // Server's API (see there).
  void Shutdown(absl::Time deadline);
  void Wait();
  int live_calls() const;

  // Any thread: round-robin over the loops.
  ServerLoop* NextLoop();

  // ServerCallHost.
  const ServerCallSettings& call_settings() const override { return settings_; }
  void CallEnded(const Method* method) override;

  // ServerLoop::Host.
  const transport::http2::ConnectionOptions& transport_options()
      const override {
    return transport_options_;
  }
  transport::MemoryQuota& memory_quota() override { return memory_quota_; }
  WorkerPool& workers() override { return *workers_; }
  int sync_threads_per_connection() const override {
    return sync_threads_per_connection_;
  }
  Status Dispatch(ServerLoop* loop,
                  transport::http2::ServerStream* stream) override;
  void ConnectionOpened() override;
  // Also tells the listeners when the count drops below max_connections.
  void ConnectionClosed() override;

  // ServerListener::Host.
  bool AtConnectionLimit() override;
  void Adopt(transport::io::FileDescriptor socket, std::string peer,
             std::shared_ptr<const transport::tls::TlsContext> tls) override;

 private:
  ServerCore(ServerOptions options, MethodMap methods,
             std::unique_ptr<Method> generic_method,
             const std::vector<transport::io::EventLoop*>& loops);

  // Shutdown: waits up to `timeout` (steady clock) for every connection to
  // close and every call to end; true if they have.
  bool WaitUntilIdle(absl::Duration timeout);
  bool Idle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Shutdown: logs what it still waits for, `past_deadline` after its
  // deadline.
  void LogStillRunning(absl::Duration past_deadline);
  // Why a new call to `path` (a method of a registered service, or not) is
  // refused before it reaches a handler: the memory quota is exhausted, or
  // no handler serves the path. OK otherwise.
  Status RefuseNewCall(absl::string_view path, bool registered) const;

  const ServerOptions options_;
  const transport::http2::ConnectionOptions transport_options_;
  const ServerCallSettings settings_;
  const int sync_threads_per_connection_;
  // Outlives the loops and their connections.
  transport::MemoryQuota memory_quota_{options_.memory_quota};
  const MethodMap methods_;
  const std::unique_ptr<Method> generic_method_;  // null: none
  std::set<std::string, std::less<>> services_;
  // channelz (options_.channelz): the server's entry, whose call counts
  // (one set per loop) the loops' connections write, so it outlives them;
  // its listening sockets'. Null and empty without channelz.
  std::unique_ptr<ChannelzNode> channelz_node_;
  std::vector<std::unique_ptr<ChannelzNode>> channelz_listen_sockets_;
  // Written by the constructor and by Shutdown once every call has ended
  // and every connection closed (read without a lock in between).
  std::vector<std::unique_ptr<ServerLoop>> loops_;
  std::unique_ptr<WorkerPool> workers_;
  std::atomic<size_t> next_loop_{0};
  // One per loop, taken from options_.metrics (when set) by the
  // constructor and given back by the destructor.
  std::vector<ServerMetricShard*> metric_shards_;

  mutable Mutex mu_;
  // Any of the fields below changed, or a method's count of live calls
  // dropped to zero while Shutdown waits.
  CondVar changed_;
  std::vector<std::unique_ptr<ServerListener>> listeners_ ABSL_GUARDED_BY(mu_);
  bool shutdown_started_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_done_ ABSL_GUARDED_BY(mu_) = false;
  int live_connections_ ABSL_GUARDED_BY(mu_) = 0;
  // Set (before Shutdown first looks at the counts) while Shutdown waits
  // for calls: CallEnded() takes mu_ to wake it only then, so a call costs
  // two atomic operations on its method's count and no lock.
  std::atomic<bool> watching_calls_{false};
};

}  // namespace internal
}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_CORE_H_
