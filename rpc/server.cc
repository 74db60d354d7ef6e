#include "rpc/server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "rpc/internal/server_call.h"
#include "rpc/internal/server_listener.h"
#include "rpc/internal/server_loop.h"
#include "rpc/internal/server_stream_call.h"
#include "rpc/internal/worker_pool.h"
#include "transport/io/socket.h"
#include "transport/message_framer.h"

namespace h2rpc {
namespace internal {

using transport::http2::ServerSession;
using transport::http2::ServerStream;

// ---------------------------------------------------------------------------
// ServerLoop

ServerLoop::ServerLoop(Server* server, int cpu) : server_(server) {
  // Before any connection exists, so before the quota is shared.
  server->memory_quota_.AddListener(this);
  start_status_ = loop_.Start("h2rpc-server", cpu);
}

ServerLoop::~ServerLoop() {
  loop_.Stop();
  for (ServerCall* call : free_calls_) delete call;
}

void ServerLoop::Adopt(transport::io::FileDescriptor socket, std::string peer) {
  server_->ConnectionOpened();
  loop_.Post([this, fd = socket.release(), peer = std::move(peer)]() mutable {
    auto connection =
        std::make_unique<transport::io::SocketConnection<ServerSession>>(
            &loop_, transport::io::FileDescriptor(fd), std::move(peer),
            server_->options_.connection, &server_->memory_quota_, this, this);
    auto* raw = connection.get();
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

ServerCall* ServerLoop::TakeCall() {
  if (free_calls_.empty()) return new ServerCall(this);
  ServerCall* call = free_calls_.back();
  free_calls_.pop_back();
  return call;
}

void ServerLoop::ReturnCall(ServerCall* call) { free_calls_.push_back(call); }

Status ServerLoop::Dispatch(ServerStream* stream) {
  const transport::MemoryQuota& quota = server_->memory_quota_;
  if (quota.exhausted()) {
    return Status(StatusCode::kResourceExhausted,
                  absl::StrCat("server memory quota exhausted: ", quota.used(),
                               " of ", quota.limit(),
                               " bytes in use (memory_quota); new calls are "
                               "refused while less than 1/16 is free"));
  }
  return server_->Dispatch(this, stream);
}

void ServerLoop::RetryMemoryWaiters() {
  for (auto& connection : connections_) {
    connection->session().RetryMemoryWaiters();
  }
}

void ServerLoop::OnConnectionClosed(ServerSession* connection) {
  auto it = std::find_if(
      connections_.begin(), connections_.end(),
      [connection](const auto& c) { return &c->session() == connection; });
  if (it == connections_.end()) return;
  auto* dead = it->release();
  connections_.erase(it);
  // Not from inside the connection's own callback: destroy it next turn.
  loop_.Post([this, dead] {
    delete dead;
    server_->ConnectionClosed();
  });
}

}  // namespace internal

using internal::ServerCall;
using internal::ServerLoop;

// ---------------------------------------------------------------------------
// Builder

Server::Builder& Server::Builder::AddListeningPort(std::string address,
                                                   int* selected_port) {
  ports_.emplace_back(std::move(address), selected_port);
  return *this;
}

Server::Builder& Server::Builder::SetOptions(const ServerOptions& options) {
  options_ = options;
  return *this;
}

Server::Builder& Server::Builder::Register(
    std::string method, std::unique_ptr<internal::Method> handler) {
  const size_t slash = method.rfind('/');
  if (method.size() < 4 || method[0] != '/' || slash == 0 ||
      slash == method.size() - 1) {
    error_ =
        Status(StatusCode::kInvalidArgument,
               absl::StrCat("method '", method,
                            "' is not of the form /package.Service/Method"));
  } else if (!methods_.emplace(method, std::move(handler)).second) {
    error_ = Status(StatusCode::kInvalidArgument,
                    absl::StrCat("method '", method, "' registered twice"));
  }
  return *this;
}

namespace {

Status CheckOptions(const ServerOptions& options) {
  if (options.max_sync_threads < 1) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::max_sync_threads is ",
                     options.max_sync_threads, "; it must be at least 1"));
  }
  if (options.min_sync_threads < 0 ||
      options.min_sync_threads > options.max_sync_threads) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::min_sync_threads is ",
                     options.min_sync_threads, "; it must be from 0 to ",
                     options.max_sync_threads, " (max_sync_threads)"));
  }
  if (options.shutdown_grace_period <= absl::ZeroDuration()) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::shutdown_grace_period is ",
                     absl::FormatDuration(options.shutdown_grace_period),
                     "; it must be more than zero"));
  }
  if (options.sync_thread_idle_time < absl::ZeroDuration()) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::sync_thread_idle_time is ",
                     absl::FormatDuration(options.sync_thread_idle_time),
                     "; it must not be negative"));
  }
  const transport::http2::ConnectionOptions& connection = options.connection;
  if (connection.memory_quota_share > options.memory_quota) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::connection.memory_quota_share is ",
                     connection.memory_quota_share,
                     " bytes; it must be at most memory_quota (",
                     options.memory_quota, ")"));
  }
  // A message of the largest size accepted must be receivable.
  if (connection.memory_quota_share <
      connection.max_receive_message_size + transport::kMessagePrefixSize) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::connection.memory_quota_share is ",
                     connection.memory_quota_share,
                     " bytes; it must hold a message of "
                     "max_receive_message_size (",
                     connection.max_receive_message_size,
                     ") and its 5-byte prefix"));
  }
  return Status();
}

}  // namespace

std::unique_ptr<Server> Server::Builder::BuildAndStart(Status* status) {
  if (!error_.ok()) {
    *status = error_;
    return nullptr;
  }
  *status = CheckOptions(options_);
  if (!status->ok()) return nullptr;
  std::vector<transport::io::FileDescriptor> sockets;
  for (auto& [address, selected_port] : ports_) {
    std::vector<transport::io::SocketAddress> addresses;
    *status = transport::io::ResolveTarget(address, &addresses);
    if (!status->ok()) return nullptr;
    transport::io::FileDescriptor socket;
    *status = transport::io::ListenTcp(addresses.front(), 1024, &socket);
    if (!status->ok()) return nullptr;
    transport::io::SocketAddress bound;
    *status = transport::io::LocalAddress(socket.get(), &bound);
    if (!status->ok()) return nullptr;
    if (selected_port != nullptr) *selected_port = bound.port();
    sockets.push_back(std::move(socket));
  }
  std::unique_ptr<Server> server(
      new Server(std::move(options_), std::move(methods_)));
  for (const auto& loop : server->loops_) {
    if (!loop->start_status().ok()) {
      *status = loop->start_status();
      return nullptr;
    }
  }
  // Every listener exists before any starts: ConnectionClosed() reads
  // listeners_ from the loops.
  transport::io::MutexLock lock(&server->mu_);
  for (auto& socket : sockets) {
    server->listeners_.push_back(std::make_unique<internal::ServerListener>(
        server.get(), std::move(socket)));
  }
  for (auto& listener : server->listeners_) {
    listener->Start(&server->loops_.front()->loop());
  }
  *status = Status();
  return server;
}

// ---------------------------------------------------------------------------
// Server

Server::Server(
    ServerOptions options,
    std::map<std::string, std::unique_ptr<internal::Method>, std::less<>>
        methods)
    : options_(std::move(options)), methods_(std::move(methods)) {
  for (const auto& [method, handler] : methods_) {
    services_.insert(method.substr(1, method.rfind('/') - 1));
  }
  const int cores =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int num_loops = options_.num_loops > 0 ? options_.num_loops : cores;
  for (int i = 0; i < num_loops; ++i) {
    const int cpu = i < static_cast<int>(options_.loop_cpus.size())
                        ? options_.loop_cpus[i]
                        : -1;
    loops_.push_back(std::make_unique<ServerLoop>(this, cpu));
  }
  const int min_sync_threads =
      options_.min_sync_threads > 0
          ? options_.min_sync_threads
          : std::min(std::max(4, 2 * cores), options_.max_sync_threads);
  workers_ = std::make_unique<internal::WorkerPool>(
      min_sync_threads, options_.max_sync_threads,
      options_.sync_thread_idle_time);
}

Server::~Server() {
  Shutdown(absl::Now());
  Wait();
}

ServerLoop* Server::NextLoop() {
  return loops_[next_loop_.fetch_add(1, std::memory_order_relaxed) %
                loops_.size()]
      .get();
}

Status Server::Dispatch(ServerLoop* loop,
                        transport::http2::ServerStream* stream) {
  const absl::string_view path = stream->method();
  auto it = methods_.find(path);
  if (it == methods_.end()) {
    const size_t slash = path.rfind('/');
    const absl::string_view service =
        slash == absl::string_view::npos || slash == 0
            ? path
            : path.substr(1, slash - 1);
    if (services_.find(service) == services_.end()) {
      return Status(StatusCode::kUnimplemented,
                    absl::StrCat("unknown service ", service));
    }
    return Status(StatusCode::kUnimplemented,
                  absl::StrCat("unknown method ", path.substr(slash + 1),
                               " for service ", service));
  }
  internal::Method* method = it->second.get();
  CallStarted(method);
  if (method->kind() == internal::MethodKind::kUnary) {
    loop->TakeCall()->Begin(this, method, it->first, stream);
  } else {
    (new internal::ServerStreamCall(loop, this, method, it->first, stream))
        ->Start();
  }
  return Status();
}

void Server::CallStarted(const internal::Method* method) {
  method->live_calls_.fetch_add(1, std::memory_order_relaxed);
}

void Server::CallEnded(const internal::Method* method) {
  // Dekker-style with Shutdown() (both sequentially consistent): either
  // this sees watching_calls_ and wakes it, or Shutdown, which sets it
  // before it reads the counts, sees this decrement.
  if (method->live_calls_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      watching_calls_.load(std::memory_order_seq_cst)) {
    transport::io::MutexLock lock(&mu_);
    changed_.SignalAll();
  }
}

int Server::live_calls() const {
  int live = 0;
  for (const auto& [name, method] : methods_) {
    live += method->live_calls_.load(std::memory_order_seq_cst);
  }
  return live;
}

void Server::ConnectionOpened() {
  transport::io::MutexLock lock(&mu_);
  ++live_connections_;
}

void Server::ConnectionClosed() {
  transport::io::MutexLock lock(&mu_);
  if (--live_connections_ == 0) changed_.SignalAll();
  // Under mu_, so that Shutdown(), once it has seen the last close, clears
  // listeners_ and the loops with no notification under way.
  if (!shutdown_started_ && options_.max_connections > 0 &&
      static_cast<size_t>(live_connections_) + 1 == options_.max_connections) {
    for (auto& listener : listeners_) listener->ConnectionSlotFreed();
  }
}

bool Server::AtConnectionLimit() {
  if (options_.max_connections == 0) return false;
  transport::io::MutexLock lock(&mu_);
  return static_cast<size_t>(live_connections_) >= options_.max_connections;
}

bool Server::Idle() { return live_connections_ == 0 && live_calls() == 0; }

bool Server::WaitUntilIdle(absl::Duration timeout) {
  using Clock = std::chrono::steady_clock;
  // Beyond a century (InfiniteDuration included) is for ever.
  const bool forever = timeout >= absl::Hours(24 * 365 * 100);
  const Clock::time_point until =
      forever ? Clock::time_point::max()
              : Clock::now() + absl::ToChronoNanoseconds(timeout);
  transport::io::MutexLock lock(&mu_);
  while (!Idle()) {
    if (forever) {
      changed_.Wait(&mu_);
      continue;
    }
    const Clock::duration left = until - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    changed_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
  return true;
}

void Server::LogStillRunning(absl::Duration past_deadline) {
  std::string calls;
  int total = 0;
  for (const auto& [name, method] : methods_) {
    const int live = method->live_calls_.load(std::memory_order_seq_cst);
    if (live == 0) continue;
    total += live;
    absl::StrAppend(&calls, calls.empty() ? "" : ", ", name, " (", live,
                    live == 1 ? " call)" : " calls)");
  }
  int connections;
  {
    transport::io::MutexLock lock(&mu_);
    connections = live_connections_;
  }
  const std::string line = absl::StrCat(
      "h2rpc server: Shutdown is still waiting ",
      absl::FormatDuration(past_deadline), " after its deadline for ", total,
      total == 1 ? " call" : " calls", " whose handler has not returned",
      calls.empty() ? "" : ": ", calls, "; ", connections,
      connections == 1 ? " connection" : " connections", " open\n");
  std::fputs(line.c_str(), stderr);
}

void Server::Shutdown(absl::Time deadline) {
  {
    transport::io::MutexLock lock(&mu_);
    if (shutdown_started_) {
      while (!shutdown_done_) changed_.Wait(&mu_);
      return;
    }
    shutdown_started_ = true;
    // Stop accepting.
    for (auto& listener : listeners_) {
      loops_.front()->loop().Post([l = listener.get()] { l->Stop(); });
    }
  }
  watching_calls_.store(true, std::memory_order_seq_cst);
  // GOAWAY everywhere; calls in flight go on until the deadline.
  for (auto& loop : loops_) {
    loop->loop().Post([l = loop.get()] { l->DrainConnections(); });
  }
  if (!WaitUntilIdle(std::max(deadline - absl::Now(), absl::ZeroDuration()))) {
    // Past the deadline: cancel whatever is left. What still keeps a call
    // alive after this is its handler (see Shutdown's contract).
    for (auto& loop : loops_) {
      loop->loop().Post([l = loop.get()] { l->CloseConnections(); });
    }
    absl::Duration waited = absl::ZeroDuration();
    while (!WaitUntilIdle(options_.shutdown_grace_period)) {
      waited += options_.shutdown_grace_period;
      LogStillRunning(waited);
    }
  }
  // Every handler has returned and every call object is released; loops
  // run their last tasks and join; only then may the listeners (watched by
  // the first loop) go.
  workers_.reset();
  loops_.clear();
  std::vector<std::unique_ptr<internal::ServerListener>> listeners;
  transport::io::MutexLock lock(&mu_);
  listeners.swap(listeners_);
  shutdown_done_ = true;
  changed_.SignalAll();
}

void Server::Wait() {
  transport::io::MutexLock lock(&mu_);
  while (!shutdown_done_) changed_.Wait(&mu_);
}

}  // namespace h2rpc
