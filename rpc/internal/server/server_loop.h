#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_LOOP_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_LOOP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "rpc/internal/call_metric_shards.h"
#include "rpc/internal/channelz/channelz_registry.h"
#include "rpc/internal/common/member_task.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/internal/server/server_call_host.h"
#include "rpc/internal/server/sync_task_count.h"
#include "rpc/status.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/server_session.h"
#include "transport/io/event_loop.h"
#include "transport/io/socket.h"
#include "transport/io/socket_connection.h"
#include "transport/tls/tls_context.h"

namespace h2rpc::internal {

class ServerStreamCall;
class UnaryServerCall;

// One of the server's event loops with the connections it serves and its
// pool of call objects (touched only on its thread).
class ServerLoop final : public ServerCallLoop,
                         public transport::http2::ServerDispatcher,
                         public transport::http2::ServerSession::Listener,
                         private transport::MemoryQuota::Listener {
 public:
  // What a loop needs of its server. ServerCore implements it.
  class Host {
   public:
    // Any thread; fixed when the server starts.
    virtual const transport::http2::ConnectionOptions& transport_options()
        const = 0;
    virtual transport::MemoryQuota& memory_quota() = 0;
    virtual WorkerPool& workers() = 0;
    // ServerOptions::max_sync_threads_per_connection, its default resolved;
    // 0 when it is max_sync_threads (no connection has a share of its own).
    virtual int sync_threads_per_connection() const = 0;
    // Loop thread: routes a new call to its handler on `loop`.
    virtual Status Dispatch(ServerLoop* loop,
                            transport::http2::ServerStream* stream) = 0;
    // Any thread: a connection was handed to a loop, or has closed and been
    // destroyed.
    virtual void ConnectionOpened() = 0;
    virtual void ConnectionClosed() = 0;

   protected:
    ~Host() = default;
  };

  // `server` must outlive the loop. Starts the loop thread, pinned to `cpu`
  // unless it is -1, busy-polling for `busy_poll` (EventLoop::set_busy_poll).
  ServerLoop(Host* server, int cpu, absl::Duration busy_poll);
  // Serves on `loop`, which another owner started and runs until this
  // ServerLoop is destroyed (which must not happen on `loop`'s thread).
  ServerLoop(Host* server, transport::io::EventLoop* loop);
  // With its own loop: stops it. On a borrowed loop: lets the loop run
  // every task queued so far, and forgets the loop (a task of the server
  // still queued for the end of its iteration is withdrawn); the server's
  // connections must be gone.
  ~ServerLoop();

  transport::io::EventLoop& loop() override ABSL_LOCK_RETURNED(loop_) {
    return loop_;
  }
  // Why the loop thread could not start (e.g. a CPU it cannot pin to).
  const Status& start_status() const { return start_status_; }
  // Where this loop's calls record CallMetrics; null: they do not. Set
  // before the loop serves its first connection.
  ServerMetricShard* metric_shard() const { return metric_shard_; }
  void set_metric_shard(ServerMetricShard* shard) { metric_shard_ = shard; }
  // channelz: the server's entry, the parent of this loop's connections',
  // whose streams count as the server's calls in `calls` (this loop's set).
  // Set before the loop serves its first connection; unset: not registered.
  void set_channelz(ChannelzNode* server, transport::http2::CallCounts* calls) {
    channelz_server_ = server;
    channelz_calls_ = calls;
  }

  // Any thread: serve a newly accepted socket on this loop, over TLS with
  // `tls` unless it is null.
  void Adopt(transport::io::FileDescriptor socket, std::string peer,
             std::shared_ptr<const transport::tls::TlsContext> tls);
  // Loop thread.
  void DrainConnections() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void CloseConnections() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);

  // The loop's pooled call objects.
  UnaryServerCall* TakeCall() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void ReturnCall(UnaryServerCall* call) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // `server`: the call's host (the server; the same for every call).
  ServerStreamCall* TakeStreamCall(ServerCallHost* server)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  void ReturnCall(ServerStreamCall* call) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);

  // Loop thread. Hands a synchronous handler's task, for a call on the
  // connection `connection_id` (ServerStream::connection_id()), to the
  // server's worker pool (WorkerPool::TrySubmit's results; after
  // ForgetWorkers(), UNAVAILABLE "the server is shutting down" without
  // touching the pool). When that connection already has its share,
  // Host::sync_threads_per_connection() tasks accepted and not yet
  // done, RESOURCE_EXHAUSTED without touching the pool either. An accepted
  // task is counted in `*count` (left null when connections have no share),
  // which the task's Done() must give back with SyncTaskDone().
  // Sleeping threads are woken at the end of the loop iteration, together:
  // first one, and if the tasks need more, the rest at the end of the next
  // iteration, which follows at once (the loop does not sleep meanwhile). A
  // thread woken for a batch of quick handlers thus often runs them all (one
  // wake-up, not one per call) before the loop runs again; a task stays
  // untaken past that only if the loop cannot get the CPU back. The loop
  // reads no further input in this iteration (EventLoop::RequestYield), so
  // the wake-up follows the chunk of input that carried the call.
  Status SubmitToWorkers(WorkerTask* task, uint64_t connection_id,
                         SyncTaskCount* count) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);
  // Any thread, before the server's worker pool is destroyed: from its
  // return on, the loop no longer uses the pool (SubmitToWorkers() refuses,
  // wake-ups still due do nothing). Tasks it handed over before stay the
  // pool's: the pool's destructor wakes threads for them and waits for them
  // to finish (their Done() may still post to this loop).
  void ForgetWorkers();

 private:
  Status Dispatch(transport::http2::ServerStream* stream) override;
  void OnConnectionClosed(transport::http2::ServerSession* connection) override;
  void OnConnectionReady(transport::http2::ServerSession* connection) override;
  // Any thread: memory of the server's quota was released while a message
  // waits for it; the loop's connections retry on a posted task.
  void OnMemoryQuotaReleased() override { loop_.Post(&memory_task_); }
  // Posted tasks (memory_task_, wake_workers_task_).
  void RetryMemoryWaiters();
  void WakeWorkers();
  // SubmitToWorkers() once the connection's share leaves room for the task.
  Status SubmitToPool(WorkerTask* task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);

  // Frees the pooled calls; on the loop thread, or once no thread runs it.
  void ReleaseLoop() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_);

  Host* const server_;
  // Null when the loop is borrowed.
  const std::unique_ptr<transport::io::EventLoop> own_loop_;
  transport::io::EventLoop& loop_;
  std::vector<std::unique_ptr<
      transport::io::SocketConnection<transport::http2::ServerSession>>>
      connections_ ABSL_GUARDED_BY(loop_);
  std::vector<UnaryServerCall*> free_calls_ ABSL_GUARDED_BY(loop_);
  std::vector<ServerStreamCall*> free_stream_calls_ ABSL_GUARDED_BY(loop_);
  // The open connections' counts of synchronous tasks, by connection id,
  // made at their first task. Loop thread.
  absl::flat_hash_map<uint64_t, SyncTaskCount> sync_tasks_by_connection_
      ABSL_GUARDED_BY(loop_);
  bool draining_ ABSL_GUARDED_BY(loop_) = false;
  Status start_status_;
  ServerMetricShard* metric_shard_ = nullptr;
  ChannelzNode* channelz_server_ = nullptr;
  transport::http2::CallCounts* channelz_calls_ = nullptr;
  // The open connections' channelz entries, each destroyed with its
  // connection; empty without channelz.
  absl::flat_hash_map<const transport::http2::ServerSession*,
                      std::unique_ptr<ChannelzNode>>
      channelz_sockets_ ABSL_GUARDED_BY(loop_);
  MemberTask<ServerLoop, &ServerLoop::RetryMemoryWaiters> memory_task_{this};
  MemberTask<ServerLoop, &ServerLoop::WakeWorkers> wake_workers_task_{this};
  // The next WakeWorkers() wakes every thread the handed-out tasks need.
  bool wake_all_workers_ ABSL_GUARDED_BY(loop_) = false;
  // Held while SubmitToWorkers() or WakeWorkers() uses the pool; once set,
  // the pool may be gone.
  Mutex workers_mu_;
  bool workers_gone_ ABSL_GUARDED_BY(workers_mu_) = false;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_LOOP_H_
