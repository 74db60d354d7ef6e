#include "rpc/internal/server/server_core.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/call_metrics.h"
#include "rpc/channelz.h"
#include "rpc/internal/call_metric_shards.h"
#include "rpc/internal/common/connection_options_conversion.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/internal/config/target.h"
#include "rpc/internal/credentials_access.h"
#include "rpc/internal/server/server_call_metrics.h"
#include "rpc/internal/server/server_listener.h"
#include "rpc/internal/server/server_loop.h"
#include "rpc/internal/server/server_stream_call.h"
#include "rpc/internal/server/unary_server_call.h"
#include "transport/core/message_framer.h"
#include "transport/http2/server_session.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {
namespace {

// INVALID_ARGUMENT naming ServerOptions::`name`, `value` and the rule it
// breaks.
Status DurationOutOfRange(const char* name, absl::Duration value,
                          const char* rule) {
  return Status(
      StatusCode::kInvalidArgument,
      absl::StrCat("ServerOptions::", name, " is ", absl::FormatDuration(value),
                   "; it must be ", rule));
}

Status CheckConnectionManagement(const ServerOptions& options) {
  // More than zero (InfiniteDuration: off).
  const std::pair<const char*, absl::Duration> positive[] = {
      {"keepalive_time", options.keepalive_time},
      {"keepalive_timeout", options.keepalive_timeout},
      {"max_connection_idle", options.max_connection_idle},
      {"max_connection_age", options.max_connection_age},
  };
  for (const auto& [name, value] : positive) {
    if (value <= absl::ZeroDuration()) {
      return DurationOutOfRange(name, value, "more than zero");
    }
  }
  const std::pair<const char*, absl::Duration> not_negative[] = {
      {"keepalive_min_time", options.keepalive_min_time},
      {"max_connection_age_grace", options.max_connection_age_grace},
  };
  for (const auto& [name, value] : not_negative) {
    if (value < absl::ZeroDuration()) {
      return DurationOutOfRange(name, value, "at least zero");
    }
  }
  if (options.max_ping_strikes < 0) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("ServerOptions::max_ping_strikes is ",
                               options.max_ping_strikes,
                               "; it must be at least zero (0: no limit)"));
  }
  return Status();
}

Status CheckOptions(const ServerOptions& options) {
  for (const auto& interceptor : options.interceptors) {
    if (interceptor == nullptr) {
      return Status(StatusCode::kInvalidArgument,
                    "a server interceptor is null (ServerOptions::interceptors "
                    "or Server::Builder::AddInterceptor)");
    }
  }
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
  if (options.max_sync_threads_per_connection < 0 ||
      options.max_sync_threads_per_connection > options.max_sync_threads) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::max_sync_threads_per_connection is ",
                     options.max_sync_threads_per_connection,
                     "; it must be from 0 to ", options.max_sync_threads,
                     " (max_sync_threads)"));
  }
  if (options.shutdown_grace_period <= absl::ZeroDuration()) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::shutdown_grace_period is ",
                     absl::FormatDuration(options.shutdown_grace_period),
                     "; it must be more than zero"));
  }
  for (const auto& [name, duration] :
       {std::make_pair("http1_idle_timeout", options.web.http1_idle_timeout),
        std::make_pair("http1_header_timeout",
                       options.web.http1_header_timeout)}) {
    if (duration <= absl::ZeroDuration()) {
      return Status(StatusCode::kInvalidArgument,
                    absl::StrCat("ServerOptions::web.", name, " is ",
                                 absl::FormatDuration(duration),
                                 "; it must be more than zero"));
    }
  }
  for (const auto& [name, value] :
       {std::make_pair("http1_max_requests_per_connection",
                       options.web.http1_max_requests_per_connection),
        std::make_pair("http1_max_target_bytes",
                       options.web.http1_max_target_bytes),
        std::make_pair("http1_max_buffered_input_bytes",
                       options.web.http1_max_buffered_input_bytes)}) {
    if (value < 1) {
      return Status(StatusCode::kInvalidArgument,
                    absl::StrCat("ServerOptions::web.", name, " is ", value,
                                 "; it must be at least 1"));
    }
  }
  if (options.auth_processor_timeout <= absl::ZeroDuration()) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::auth_processor_timeout is ",
                     absl::FormatDuration(options.auth_processor_timeout),
                     "; it must be more than zero"));
  }
  if (options.busy_poll_us < 0 || options.busy_poll_us > kMaxBusyPollUs) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("ServerOptions::busy_poll_us is ",
                               options.busy_poll_us, "; it must be from 0 to ",
                               kMaxBusyPollUs, " (microseconds)"));
  }
  if (options.sync_thread_idle_time < absl::ZeroDuration()) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("ServerOptions::sync_thread_idle_time is ",
                     absl::FormatDuration(options.sync_thread_idle_time),
                     "; it must not be negative"));
  }
  if (Status status = CheckConnectionManagement(options); !status.ok()) {
    return status;
  }
  const ConnectionOptions& connection = options.connection;
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

namespace {

std::vector<ServerInterceptor*> InterceptorsOf(const ServerOptions& options) {
  std::vector<ServerInterceptor*> out;
  for (const auto& interceptor : options.interceptors) {
    out.push_back(interceptor.get());
  }
  return out;
}

}  // namespace

std::unique_ptr<ServerCore> ServerCore::Start(
    ServerOptions options, const std::vector<ListeningPort>& ports,
    MethodMap methods, std::unique_ptr<Method> generic_method,
    const std::vector<transport::io::EventLoop*>& loops, Status* status) {
  *status = CheckOptions(options);
  if (!status->ok()) return nullptr;
  for (const ListeningPort& port : ports) {
    if (!port.credentials->status().ok()) {
      *status = Status(port.credentials->status().code(),
                       absl::StrCat("credentials for port ", port.address, ": ",
                                    port.credentials->status().message()));
      return nullptr;
    }
  }
  // The bound sockets; a unix-domain socket file is removed again if a
  // later port fails.
  std::vector<transport::io::FileDescriptor> sockets;
  std::vector<transport::io::SocketFile> files;
  std::vector<transport::io::SocketAddress> bound_addresses;
  for (const auto& [address, selected_port, credentials] : ports) {
    transport::io::SocketAddress listen_address;
    bool is_unix = false;
    *status = ParseUnixTarget(address, &is_unix, &listen_address);
    if (!status->ok()) return nullptr;
    if (is_unix) {
      *status = transport::io::RemoveStaleSocketFile(listen_address);
      if (!status->ok()) return nullptr;
    } else {
      std::vector<transport::io::SocketAddress> addresses;
      *status = transport::io::ResolveTarget(address, &addresses);
      if (!status->ok()) return nullptr;
      listen_address = addresses.front();
    }
    transport::io::FileDescriptor socket;
    *status = transport::io::ListenTcp(listen_address, 1024, &socket);
    if (!status->ok()) return nullptr;
    files.push_back(transport::io::SocketFile::Bound(listen_address));
    transport::io::SocketAddress bound;
    *status = transport::io::LocalAddress(socket.get(), &bound);
    if (!status->ok()) return nullptr;
    if (selected_port != nullptr) *selected_port = is_unix ? 0 : bound.port();
    sockets.push_back(std::move(socket));
    bound_addresses.push_back(bound);
  }
  std::unique_ptr<ServerCore> core(
      new ServerCore(std::move(options), std::move(methods),
                     std::move(generic_method), loops));
  for (const auto& loop : core->loops_) {
    if (!loop->start_status().ok()) {
      *status = loop->start_status();
      return nullptr;
    }
  }
  if (core->channelz_node_ != nullptr) {
    for (const transport::io::SocketAddress& address : bound_addresses) {
      core->channelz_listen_sockets_.push_back(
          core->channelz_node_->registry().AddListenSocket(
              *core->channelz_node_, address));
    }
  }
  // Every listener exists before any starts: ConnectionClosed() reads
  // listeners_ from the loops.
  MutexLock lock(&core->mu_);
  for (size_t i = 0; i < sockets.size(); ++i) {
    core->listeners_.push_back(std::make_unique<ServerListener>(
        core.get(), std::move(sockets[i]), std::move(files[i]),
        CredentialsAccess::Tls(*ports[i].credentials)));
  }
  for (auto& listener : core->listeners_) {
    listener->Start(&core->loops_.front()->loop());
  }
  *status = Status();
  return core;
}

namespace {

// ServerLoop::Host::sync_threads_per_connection().
int SyncThreadsPerConnection(const ServerOptions& options) {
  const int share = options.max_sync_threads_per_connection > 0
                        ? options.max_sync_threads_per_connection
                        : std::max(1, options.max_sync_threads * 3 / 4);
  return share < options.max_sync_threads ? share : 0;
}

}  // namespace

ServerCore::ServerCore(ServerOptions options, MethodMap methods,
                       std::unique_ptr<Method> generic_method,
                       const std::vector<transport::io::EventLoop*>& loops)
    : options_(std::move(options)),
      transport_options_(ToServerTransportOptions(options_)),
      settings_{options_.default_compression,
                options_.connection.max_send_message_size,
                options_.stream_write_buffer,
                InterceptorsOf(options_),
                options_.tracer.get(),
                options_.auth_metadata_processor.get(),
                options_.auth_processor_timeout},
      sync_threads_per_connection_(SyncThreadsPerConnection(options_)),
      methods_(std::move(methods)),
      generic_method_(std::move(generic_method)) {
  for (const auto& [method, handler] : methods_) {
    services_.insert(method.substr(1, method.rfind('/') - 1));
  }
  const int cores =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (transport::io::EventLoop* loop : loops) {
    loops_.push_back(std::make_unique<ServerLoop>(this, loop));
  }
  const int num_loops = !loops.empty()           ? 0
                        : options_.num_loops > 0 ? options_.num_loops
                                                 : cores;
  for (int i = 0; i < num_loops; ++i) {
    const int cpu = i < static_cast<int>(options_.loop_cpus.size())
                        ? options_.loop_cpus[i]
                        : -1;
    loops_.push_back(std::make_unique<ServerLoop>(
        this, cpu, absl::Microseconds(options_.busy_poll_us)));
  }
  if (options_.metrics != nullptr) {
    for (const auto& loop : loops_) {
      metric_shards_.push_back(CallMetricsAccess::AcquireServerShard(
          *options_.metrics, &memory_quota_));
      loop->set_metric_shard(metric_shards_.back());
    }
  }
  if (options_.channelz != nullptr) {
    channelz_node_ = ChannelzAccess::Registry(*options_.channelz).AddServer();
    for (const auto& loop : loops_) {
      loop->set_channelz(channelz_node_.get(), channelz_node_->NewCallCounts());
    }
  }
  const int min_sync_threads =
      options_.min_sync_threads > 0
          ? options_.min_sync_threads
          : std::min(std::max(4, 2 * cores), options_.max_sync_threads);
  workers_ =
      std::make_unique<WorkerPool>(min_sync_threads, options_.max_sync_threads,
                                   options_.sync_thread_idle_time);
}

ServerCore::~ServerCore() {
  Shutdown(absl::Now());
  Wait();
  for (ServerMetricShard* shard : metric_shards_) {
    CallMetricsAccess::ReleaseServerShard(*options_.metrics, shard);
  }
}

ServerLoop* ServerCore::NextLoop() {
  return loops_[next_loop_.fetch_add(1, std::memory_order_relaxed) %
                loops_.size()]
      .get();
}

void ServerCore::Adopt(transport::io::FileDescriptor socket, std::string peer,
                       std::shared_ptr<const transport::tls::TlsContext> tls) {
  NextLoop()->Adopt(std::move(socket), std::move(peer), std::move(tls));
}

Status ServerCore::Dispatch(ServerLoop* loop,
                            transport::http2::ServerStream* stream) {
  loop->loop().AssertInLoopThread();
  const absl::string_view path = stream->method();
  auto it = methods_.find(path);
  const bool registered = it != methods_.end();
  ServerMethodStats* metrics = nullptr;
  if (ServerMetricShard* shard = loop->metric_shard()) {
    metrics = &shard->methods().For(
        registered || options_.metrics->options().record_generic_methods
            ? path
            : kOtherMethod);
  }
  const Status refused = RefuseNewCall(path, registered);
  if (!refused.ok()) {
    if (metrics != nullptr) {
      ServerCallMetrics::RecordRefused(*metrics, refused.code());
    }
    return refused;
  }
  if (!registered) {
    // The stream's path outlives the call (released at its end).
    generic_method_->CallStarted();
    loop->TakeStreamCall(this)->Begin(generic_method_.get(), path, stream,
                                      metrics);
    return Status();
  }
  Method* method = it->second.get();
  method->CallStarted();
  if (method->kind() == MethodKind::kUnary) {
    loop->TakeCall()->Begin(this, method, it->first, stream, metrics);
  } else {
    loop->TakeStreamCall(this)->Begin(method, it->first, stream, metrics);
  }
  return Status();
}

Status ServerCore::RefuseNewCall(absl::string_view path,
                                 bool registered) const {
  if (memory_quota_.exhausted()) {
    return Status(
        StatusCode::kResourceExhausted,
        absl::StrCat("server memory quota exhausted: ", memory_quota_.used(),
                     " of ", memory_quota_.limit(),
                     " bytes in use (memory_quota); new calls are "
                     "refused while less than 1/16 is free"));
  }
  if (registered || generic_method_ != nullptr) return Status();
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

void ServerCore::CallEnded(const Method* method) {
  // Dekker-style with Shutdown() (both sequentially consistent): either
  // this sees watching_calls_ and wakes it, or Shutdown, which sets it
  // before it reads the counts, sees this decrement.
  if (method->CallEnded() && watching_calls_.load(std::memory_order_seq_cst)) {
    MutexLock lock(&mu_);
    changed_.SignalAll();
  }
}

int ServerCore::live_calls() const {
  int live = 0;
  for (const auto& [name, method] : methods_) live += method->live_calls();
  if (generic_method_ != nullptr) live += generic_method_->live_calls();
  return live;
}

void ServerCore::ConnectionOpened() {
  MutexLock lock(&mu_);
  ++live_connections_;
}

void ServerCore::ConnectionClosed() {
  MutexLock lock(&mu_);
  if (--live_connections_ == 0) changed_.SignalAll();
  // Under mu_, so that Shutdown(), once it has seen the last close, clears
  // listeners_ and the loops with no notification under way.
  if (!shutdown_started_ && options_.max_connections > 0 &&
      static_cast<size_t>(live_connections_) + 1 == options_.max_connections) {
    for (auto& listener : listeners_) listener->ConnectionSlotFreed();
  }
}

bool ServerCore::AtConnectionLimit() {
  if (options_.max_connections == 0) return false;
  MutexLock lock(&mu_);
  return static_cast<size_t>(live_connections_) >= options_.max_connections;
}

bool ServerCore::Idle() { return live_connections_ == 0 && live_calls() == 0; }

bool ServerCore::WaitUntilIdle(absl::Duration timeout) {
  using Clock = std::chrono::steady_clock;
  // Beyond a century (InfiniteDuration included) is for ever.
  const bool forever = timeout >= absl::Hours(24 * 365 * 100);
  const Clock::time_point until =
      forever ? Clock::time_point::max()
              : Clock::now() + absl::ToChronoNanoseconds(timeout);
  MutexLock lock(&mu_);
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

void ServerCore::LogStillRunning(absl::Duration past_deadline) {
  std::string calls;
  int total = 0;
  auto add = [&](absl::string_view name, const Method& method) {
    const int live = method.live_calls();
    if (live == 0) return;
    total += live;
    absl::StrAppend(&calls, calls.empty() ? "" : ", ", name, " (", live,
                    live == 1 ? " call)" : " calls)");
  };
  for (const auto& [name, method] : methods_) add(name, *method);
  if (generic_method_ != nullptr) add("the generic service", *generic_method_);
  int connections;
  {
    MutexLock lock(&mu_);
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

void ServerCore::Shutdown(absl::Time deadline) {
  {
    MutexLock lock(&mu_);
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
    loop->loop().Post([l = loop.get()] {
      l->loop().AssertInLoopThread();
      l->DrainConnections();
    });
  }
  if (!WaitUntilIdle(std::max(deadline - absl::Now(), absl::ZeroDuration()))) {
    // Past the deadline: cancel whatever is left. What still keeps a call
    // alive after this is its handler (see Shutdown's contract).
    for (auto& loop : loops_) {
      loop->loop().Post([l = loop.get()] {
        l->loop().AssertInLoopThread();
        l->CloseConnections();
      });
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
  for (auto& loop : loops_) loop->ForgetWorkers();
  workers_.reset();
  loops_.clear();
  std::vector<std::unique_ptr<ServerListener>> listeners;
  MutexLock lock(&mu_);
  listeners.swap(listeners_);
  shutdown_done_ = true;
  changed_.SignalAll();
}

void ServerCore::Wait() {
  MutexLock lock(&mu_);
  while (!shutdown_done_) changed_.Wait(&mu_);
}

}  // namespace h2rpc::internal
