#include "rpc/internal/server/server_loop.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "rpc/internal/server/server_stream_call.h"
#include "rpc/internal/server/unary_server_call.h"
#include "transport/http1/server_bridge.h"
#include "transport/tls/tls_session.h"

namespace h2rpc::internal {

using transport::http2::ServerSession;
using transport::http2::ServerStream;

ServerLoop::ServerLoop(Host* server, int cpu, absl::Duration busy_poll)
    : server_(server),
      own_loop_(std::make_unique<transport::io::EventLoop>()),
      loop_(*own_loop_) {
  // Before any connection exists, so before the quota is shared.
  server->memory_quota().AddListener(this);
  loop_.set_busy_poll(busy_poll);
  start_status_ = loop_.Start("h2rpc-server", cpu);
}

ServerLoop::ServerLoop(Host* server, transport::io::EventLoop* loop)
    : server_(server), loop_(*loop) {
  server->memory_quota().AddListener(this);
}

ServerLoop::~ServerLoop() {
  if (own_loop_ != nullptr) {
    loop_.Stop();
    loop_.AssertInLoopThread();  // the thread has exited
    ReleaseLoop();
    return;
  }
  // Tasks run in posting order: every task of this server queued before
  // runs before this one.
  Mutex mu;
  CondVar cv;
  bool released = false;
  loop_.Post([&] {
    loop_.AssertInLoopThread();
    ReleaseLoop();
    MutexLock lock(&mu);
    released = true;
    cv.Signal();
  });
  MutexLock lock(&mu);
  while (!released) cv.Wait(&mu);
}

void ServerLoop::ReleaseLoop() {
  loop_.CancelEndOfIteration(&wake_workers_task_);
  for (UnaryServerCall* call : free_calls_) delete call;
  free_calls_.clear();
  for (ServerStreamCall* call : free_stream_calls_) delete call;
  free_stream_calls_.clear();
}

void ServerLoop::Adopt(transport::io::FileDescriptor socket, std::string peer,
                       std::shared_ptr<const transport::tls::TlsContext> tls) {
  server_->ConnectionOpened();
  loop_.Post([this, fd = socket.release(), peer = std::move(peer),
              tls = std::move(tls)]() mutable {
    loop_.AssertInLoopThread();
    // HTTP/1.1 is served for the web protocols only.
    const transport::http2::WebOptions& web =
        server_->transport_options().web;
    const bool serves_http1 = web.grpc_web || web.connect;
    std::unique_ptr<transport::io::ByteFilter> filter;
    if (tls != nullptr) {
      filter = transport::tls::TlsSession::NewServer(tls, serves_http1);
    }
    std::unique_ptr<transport::io::ByteFilter> http1;
    if (serves_http1) {
      http1 = std::make_unique<transport::http1::ServerBridge>(
          &loop_, web.http1, /*secure=*/tls != nullptr);
    }
    std::unique_ptr<ChannelzNode> channelz_socket;
    if (channelz_server_ != nullptr) {
      channelz_socket = channelz_server_->registry().AddConnection(
          *channelz_server_, fd, std::string(), channelz_calls_);
    }
    auto connection =
        std::make_unique<transport::io::SocketConnection<ServerSession>>(
            &loop_, transport::io::FileDescriptor(fd), std::move(filter),
            std::move(http1), std::move(peer), server_->transport_options(),
            &server_->memory_quota(), this, this);
    auto* raw = connection.get();
    if (metric_shard_ != nullptr) {
      raw->session().set_event_counts(&metric_shard_->connection_events());
    }
    if (channelz_socket != nullptr) {
      raw->session().set_stats(&channelz_socket->connection_stats());
      channelz_sockets_.emplace(&raw->session(), std::move(channelz_socket));
    }
    connections_.push_back(std::move(connection));
    raw->Start();
    if (draining_) raw->session().GracefulShutdown();
  });
}

void ServerLoop::DrainConnections() {
  draining_ = true;
  for (auto& connection : connections_) {
    connection->session().GracefulShutdown();
  }
}

void ServerLoop::CloseConnections() {
  // Close() calls back OnConnectionClosed, which edits connections_.
  std::vector<ServerSession*> open;
  for (auto& connection : connections_) {
    open.push_back(&connection->session());
  }
  for (ServerSession* connection : open) {
    connection->Close(
        Status(StatusCode::kUnavailable, "the server is shutting down"));
  }
}

UnaryServerCall* ServerLoop::TakeCall() {
  if (free_calls_.empty()) return new UnaryServerCall(this);
  UnaryServerCall* call = free_calls_.back();
  free_calls_.pop_back();
  return call;
}

void ServerLoop::ReturnCall(UnaryServerCall* call) {
  free_calls_.push_back(call);
}

ServerStreamCall* ServerLoop::TakeStreamCall(ServerCallHost* server) {
  if (free_stream_calls_.empty()) return new ServerStreamCall(this, server);
  ServerStreamCall* call = free_stream_calls_.back();
  free_stream_calls_.pop_back();
  return call;
}

void ServerLoop::ReturnCall(ServerStreamCall* call) {
  free_stream_calls_.push_back(call);
}

Status ServerLoop::Dispatch(ServerStream* stream) {
  return server_->Dispatch(this, stream);
}

Status ServerLoop::SubmitToWorkers(WorkerTask* task, uint64_t connection_id,
                                   SyncTaskCount* count) {
  const int share = server_->sync_threads_per_connection();
  if (share == 0) return SubmitToPool(task);
  SyncTaskCount& running = sync_tasks_by_connection_[connection_id];
  if (running == nullptr) running = std::make_shared<std::atomic<int>>(0);
  if (running->load(std::memory_order_relaxed) >= share) {
    return Status(StatusCode::kResourceExhausted,
                  absl::StrCat("this connection's ", share,
                               " synchronous handler threads are busy "
                               "(ServerOptions::max_sync_threads_per_"
                               "connection)"));
  }
  // Counted before the pool has it: its Done() may come at once.
  running->fetch_add(1, std::memory_order_relaxed);
  *count = running;
  const Status status = SubmitToPool(task);
  if (!status.ok()) SyncTaskDone(count);
  return status;
}

Status ServerLoop::SubmitToPool(WorkerTask* task) {
  Status status;
  {
    MutexLock lock(&workers_mu_);
    // Shutdown forgets the workers once no call is live, but a connection
    // accepted just before the listeners stopped may still dispatch one.
    if (workers_gone_) {
      return Status(StatusCode::kUnavailable, "the server is shutting down");
    }
    status = server_->workers().TrySubmitDeferred(task);
  }
  if (status.ok()) {
    loop_.RunAtEndOfIteration(&wake_workers_task_);
    // Wake the worker after this chunk of input, not after all of it.
    loop_.RequestYield();
  }
  return status;
}

void ServerLoop::ForgetWorkers() {
  MutexLock lock(&workers_mu_);
  workers_gone_ = true;
}

void ServerLoop::WakeWorkers() {
  loop_.AssertInLoopThread();
  MutexLock lock(&workers_mu_);
  // The second pass may come after the last call ended and the server
  // began destroying the pool.
  if (workers_gone_) return;
  const int more =
      server_->workers().WakeForHandedOut(wake_all_workers_ ? INT_MAX : 1);
  wake_all_workers_ = more > 0;
  if (wake_all_workers_) loop_.RunAtEndOfIteration(&wake_workers_task_);
}

void ServerLoop::RetryMemoryWaiters() {
  loop_.AssertInLoopThread();
  for (auto& connection : connections_) {
    connection->session().RetryMemoryWaiters();
  }
}

void ServerLoop::OnConnectionClosed(ServerSession* connection) {
  loop_.AssertInLoopThread();
  auto it = std::find_if(
      connections_.begin(), connections_.end(),
      [connection](const auto& c) { return &c->session() == connection; });
  if (it == connections_.end()) return;
  auto* dead = it->release();
  connections_.erase(it);
  sync_tasks_by_connection_.erase(connection->id());
  ChannelzNode* channelz_socket = nullptr;
  if (auto node = channelz_sockets_.extract(connection)) {
    channelz_socket = node.mapped().release();
  }
  // Not from inside the connection's own callback: destroy it next turn,
  // with its channelz entry.
  loop_.Post([this, dead, channelz_socket] {
    delete dead;
    delete channelz_socket;
    server_->ConnectionClosed();
  });
}

void ServerLoop::OnConnectionReady(ServerSession* connection) {
  loop_.AssertInLoopThread();
  if (channelz_sockets_.empty()) return;
  auto it = channelz_sockets_.find(connection);
  if (it != channelz_sockets_.end()) it->second->SetTlsOf(*connection);
}

}  // namespace h2rpc::internal
