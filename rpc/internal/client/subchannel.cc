#include "rpc/internal/client/subchannel.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {

using transport::http2::ClientSession;

Subchannel::Subchannel(transport::io::EventLoop* loop, Host* host,
                       ResolvedAddress resolved,
                       const transport::io::SocketAddress& socket_address,
                       const ConnectionBackoff::Options& backoff,
                       const HealthCheckSettings* health)
    : LbSubchannel(std::move(resolved)),
      loop_(loop),
      host_(host),
      socket_address_(socket_address),
      connector_(loop, static_cast<ChannelConnector::Listener*>(this)),
      backoff_(backoff, loop),
      health_watch_(
          health == nullptr
              ? nullptr
              : std::make_unique<HealthWatch>(
                    health, static_cast<HealthWatch::Listener*>(this))) {
  if (ClientMetricShard* metrics = host_->metric_shard()) {
    picks_ = &metrics->backends().For(address().address).picks;
  }
  if (ChannelzNode* channel = host_->channelz_node()) {
    channelz_node_ =
        channel->registry().AddSubchannel(*channel, address().address);
    channelz_calls_ = channelz_node_->NewCallCounts();
  }
}

Subchannel::~Subchannel() {
  loop_->Cancel(&connect_timer_);
  loop_->Cancel(&attempt_timer_);
  loop_->Cancel(&backoff_timer_);
  loop_->Cancel(&health_retry_timer_);
  loop_->Cancel(&load_report_timer_);
}

void Subchannel::RequestConnection() {
  if (state_ != ConnectivityState::kIdle || closed_ ||
      connect_timer_.scheduled()) {
    return;
  }
  loop_->Schedule(&connect_timer_, loop_->Now());
}

void Subchannel::StartCall(transport::http2::ClientStream* stream) {
  if (picks_ != nullptr) picks_->Add(1);
  connection_->session().StartCall(stream);
}

void Subchannel::Orphan() {
  orphaned_ = true;
  // The observer may go with the policy; calls still draining report to
  // nobody.
  set_call_observer(nullptr);
  load_report_watcher_ = nullptr;
  connector_.Abort();
  loop_->Cancel(&connect_timer_);
  loop_->Cancel(&attempt_timer_);
  loop_->Cancel(&backoff_timer_);
  if (connection_ == nullptr) {
    MaybeDone();
    return;
  }
  ClientSession& session = connection_->session();
  const bool established = session.handshake_done();
  DrainConnection();
  if (established) {
    // GOAWAY; closed once its calls have finished.
    session.GracefulShutdown();
  } else {
    // Calls back OnConnectionClosed, which finds it draining.
    session.Close(
        Status(StatusCode::kUnavailable, "the subchannel is no longer used"));
  }
}

void Subchannel::Close(const Status& why) {
  closed_ = true;
  orphaned_ = true;
  load_report_watcher_ = nullptr;
  connector_.Abort();
  loop_->Cancel(&connect_timer_);
  loop_->Cancel(&attempt_timer_);
  loop_->Cancel(&backoff_timer_);
  if (connection_ != nullptr) DrainConnection();
  // Close() calls back OnConnectionClosed, which edits draining_.
  std::vector<ClientSession*> sessions;
  for (auto& connection : draining_) sessions.push_back(&connection->session());
  for (ClientSession* session : sessions) session->Close(why);
}

void Subchannel::SetState(ConnectivityState state) {
  if (state_ == state) return;
  state_ = state;
  if (channelz_node_ != nullptr) channelz_node_->SetState(state);
  // The policy may orphan the subchannel from here.
  if (!orphaned_) host_->OnSubchannelStateChange(this);
}

void Subchannel::Connect() {
  if (orphaned_ || connection_ != nullptr) return;
  const transport::io::MonotonicTime start = loop_->Now();
  attempt_deadline_ = backoff_.BeginAttempt();
  attempt_timeout_ = attempt_deadline_ - start;
  SetState(ConnectivityState::kConnecting);
  if (orphaned_) return;
  // May report its outcome before returning.
  connector_.Start(socket_address_, attempt_deadline_);
}

void Subchannel::OnConnected(transport::io::FileDescriptor socket,
                             std::string peer) {
  std::unique_ptr<ChannelzNode> channelz_socket;
  if (channelz_node_ != nullptr) {
    channelz_socket = channelz_node_->registry().AddConnection(
        *channelz_node_, socket.get(), address().address, channelz_calls_);
  }
  connection_ = std::make_unique<Connection>(
      loop_, std::move(socket), host_->NewConnectionFilter(address().address),
      host_->NewProtocolFilter(), std::move(peer), host_->transport_options(),
      static_cast<ClientSession::Listener*>(this));
  if (channelz_socket != nullptr) {
    connection_->session().set_stats(&channelz_socket->connection_stats());
    channelz_sockets_.emplace_back(&connection_->session(),
                                   std::move(channelz_socket));
  }
  // The TLS and HTTP/2 handshakes count against the attempt's deadline too.
  loop_->Schedule(&attempt_timer_, attempt_deadline_);
  // May close the connection (OnConnectionClosed) before returning.
  connection_->Start();
}

void Subchannel::OnConnectFailed(const Status& why) {
  EnterTransientFailure(why);
}

void Subchannel::OnAttemptDeadline() {
  if (connection_ == nullptr || connection_->session().handshake_done()) {
    return;
  }
  // Calls back OnConnectionClosed: a failed attempt.
  connection_->session().Close(
      Status(StatusCode::kUnavailable,
             absl::StrCat("connection to ", connection_->session().peer(),
                          " did not complete its handshake within ",
                          absl::FormatDuration(attempt_timeout_),
                          " (ChannelOptions::min_connect_timeout)")));
}

void Subchannel::EnterTransientFailure(const Status& why) {
  if (ClientMetricShard* metrics = host_->metric_shard()) {
    metrics->connections().attempts_failed.Add(1);
  }
  loop_->Cancel(&attempt_timer_);
  last_error_ = why.code() == StatusCode::kUnavailable
                    ? why
                    : Status(StatusCode::kUnavailable, why.message());
  // SleepUntil(current_deadline): at once if the attempt took longer.
  loop_->Schedule(&backoff_timer_,
                  std::max(backoff_.next_attempt_time(), loop_->Now()));
  SetState(ConnectivityState::kTransientFailure);
}

void Subchannel::OnBackoffDone() {
  if (state_ == ConnectivityState::kTransientFailure) Connect();
}

void Subchannel::DrainConnection() {
  if (health_watch_ != nullptr) {
    health_watch_->Cancel();
    loop_->Cancel(&health_retry_timer_);
  }
  if (load_report_watch_ != nullptr) load_report_watch_->Cancel();
  loop_->Cancel(&load_report_timer_);
  draining_.push_back(std::move(connection_));
}

void Subchannel::StartHealthWatch() {
  if (orphaned_ || connection_ == nullptr ||
      !connection_->session().accepting_calls()) {
    return;
  }
  health_watch_->Start(&connection_->session());
}

void Subchannel::OnHealthChanged(bool serving, const Status& why) {
  last_error_ = why;
  SetState(serving ? ConnectivityState::kReady
                   : ConnectivityState::kTransientFailure);
}

void Subchannel::OnHealthWatchEnded(const Status& status, bool cancelled) {
  if (connection_ == nullptr || !connection_->session().accepting_calls() ||
      !connection_->session().handshake_done()) {
    return;  // the connection is going (its end is reported) or not there
  }
  if (cancelled) {
    // An earlier connection's watch, which kept the current connection's
    // from starting: start it now (not from inside the stream's close).
    loop_->Schedule(&health_retry_timer_, loop_->Now());
    return;
  }
  if (status.code() == StatusCode::kUnimplemented) {
    // As gRPC: a backend without the health service counts as serving.
    std::fprintf(stderr,
                 "h2rpc: %s does not implement grpc.health.v1.Health/Watch "
                 "(%s); health checking disabled for this connection\n",
                 connection_->session().peer().c_str(),
                 status.ToString().c_str());
    last_error_ = Status();
    SetState(ConnectivityState::kReady);
    return;
  }
  last_error_ = Status(StatusCode::kUnavailable,
                       absl::StrCat("health check call to ", address().address,
                                    " failed: ", status.ToString()));
  loop_->Schedule(&health_retry_timer_, loop_->Now() + kHealthRetryDelay);
  SetState(ConnectivityState::kTransientFailure);
}

void Subchannel::WatchLoadReports(LbLoadReportWatcher* watcher,
                                  absl::Duration interval) {
  if (orphaned_ ||
      (watcher == load_report_watcher_ && interval == load_report_interval_)) {
    return;
  }
  load_report_watcher_ = watcher;
  load_report_interval_ = interval;
  load_report_backoff_ = kLoadReportInitialBackoff;
  loop_->Cancel(&load_report_timer_);
  if (load_report_watch_ != nullptr && load_report_watch_->active()) {
    // Started again, with the new interval, once it has ended.
    load_report_watch_->Cancel();
    return;
  }
  StartLoadReportWatch();
}

void Subchannel::StartLoadReportWatch() {
  if (orphaned_ || load_report_watcher_ == nullptr || connection_ == nullptr ||
      !connection_->session().handshake_done() ||
      !connection_->session().accepting_calls()) {
    return;
  }
  if (load_report_watch_ == nullptr) {
    load_report_watch_ = std::make_unique<LoadReportWatch>(
        &host_->control_call_settings(),
        static_cast<LoadReportWatch::Listener*>(this));
  }
  load_report_watch_->Start(&connection_->session(), load_report_interval_);
}

void Subchannel::OnLoadReport(absl::string_view report) {
  load_report_backoff_ = kLoadReportInitialBackoff;
  if (load_report_watcher_ != nullptr) {
    load_report_watcher_->OnLoadReport(this, report);
  }
}

void Subchannel::OnLoadReportWatchEnded(const Status& status, bool cancelled) {
  if (load_report_watcher_ == nullptr || connection_ == nullptr ||
      !connection_->session().accepting_calls() ||
      !connection_->session().handshake_done()) {
    return;  // not wanted, or the connection is going or not there
  }
  if (cancelled) {
    // Restarted with a new interval, or an earlier connection's call: start
    // it now (not from inside the stream's close).
    loop_->Schedule(&load_report_timer_, loop_->Now());
    return;
  }
  if (status.code() == StatusCode::kUnimplemented) {
    std::fprintf(stderr,
                 "h2rpc: %s does not implement "
                 "xds.service.orca.v3.OpenRcaService (%s); no out-of-band "
                 "load reports on this connection\n",
                 connection_->session().peer().c_str(),
                 status.ToString().c_str());
    return;
  }
  loop_->Schedule(&load_report_timer_, loop_->Now() + load_report_backoff_);
  load_report_backoff_ =
      std::min(load_report_backoff_ * 2, kLoadReportMaxBackoff);
}

void Subchannel::MaybeDone() {
  if (orphaned_ && !closed_ && !done_ && connection_ == nullptr &&
      draining_.empty()) {
    done_ = true;
    host_->OnSubchannelDone(this);
  }
}

void Subchannel::OnConnectionReady(ClientSession* connection) {
  if (connection_ == nullptr || connection != &connection_->session()) return;
  if (ClientMetricShard* metrics = host_->metric_shard()) {
    metrics->connections().attempts_succeeded.Add(1);
  }
  loop_->Cancel(&attempt_timer_);
  backoff_.Reset();
  last_error_ = Status();
  if (ChannelzNode* socket = ChannelzSocketOf(connection)) {
    socket->SetTlsOf(*connection);
  }
  StartLoadReportWatch();
  if (health_watch_ != nullptr) {
    // CONNECTING until the backend's first answer.
    StartHealthWatch();
    return;
  }
  SetState(ConnectivityState::kReady);
}

void Subchannel::OnGoAwayReceived(ClientSession* connection,
                                  uint32_t error_code,
                                  absl::string_view debug_data) {
  if (host_->metric_shard() != nullptr &&
      std::none_of(goaway_codes_.begin(), goaway_codes_.end(),
                   [connection](const auto& entry) {
                     return entry.first == connection;
                   })) {
    goaway_codes_.emplace_back(connection, error_code);
  }
  if (error_code == NGHTTP2_ENHANCE_YOUR_CALM &&
      debug_data == "too_many_pings" && connection != calmed_) {
    calmed_ = connection;
    host_->OnTooManyPings(connection->peer());
  }
}

void Subchannel::OnConnectionDraining(ClientSession* connection) {
  if (connection_ == nullptr || connection != &connection_->session()) return;
  DrainConnection();
  if (connection->handshake_done()) {
    SetState(ConnectivityState::kIdle);
  } else {
    EnterTransientFailure(
        Status(StatusCode::kUnavailable,
               absl::StrCat(connection->peer(),
                            " sent GOAWAY before completing its handshake")));
  }
}

void Subchannel::OnConnectionClosed(ClientSession* connection,
                                    const Status& why) {
  if (connection == calmed_) calmed_ = nullptr;
  CountDisconnection(connection);
  std::unique_ptr<Connection> closed;
  if (connection_ != nullptr && connection == &connection_->session()) {
    closed = std::move(connection_);
    if (!connection->handshake_done()) {
      // Closed before the server's HTTP/2 handshake (a failed TLS
      // handshake, a peer that is not an HTTP/2 server, the attempt's
      // deadline): a failed attempt.
      EnterTransientFailure(why);
    } else {
      loop_->Cancel(&health_retry_timer_);
      loop_->Cancel(&load_report_timer_);
      SetState(ConnectivityState::kIdle);
    }
  } else {
    auto it = std::find_if(
        draining_.begin(), draining_.end(),
        [connection](const auto& c) { return &c->session() == connection; });
    if (it == draining_.end()) return;
    closed = std::move(*it);
    draining_.erase(it);
  }
  // Not from inside the connection's own callback: destroy it next turn,
  // with its channelz entry.
  std::unique_ptr<ChannelzNode> channelz_socket;
  auto entry = std::find_if(
      channelz_sockets_.begin(), channelz_sockets_.end(),
      [connection](const auto& entry) { return entry.first == connection; });
  if (entry != channelz_sockets_.end()) {
    channelz_socket = std::move(entry->second);
    channelz_sockets_.erase(entry);
  }
  loop_->Post([dead = closed.release(), socket = channelz_socket.release()] {
    delete dead;
    delete socket;
  });
  MaybeDone();
}

ChannelzNode* Subchannel::ChannelzSocketOf(
    const ClientSession* connection) const {
  for (const auto& [session, node] : channelz_sockets_) {
    if (session == connection) return node.get();
  }
  return nullptr;
}

void Subchannel::CountDisconnection(ClientSession* connection) {
  auto goaway = std::find_if(
      goaway_codes_.begin(), goaway_codes_.end(),
      [connection](const auto& entry) { return entry.first == connection; });
  int reason = kUnknownDisconnect;
  if (goaway != goaway_codes_.end()) {
    reason = goaway->second < static_cast<uint32_t>(kGoAwayReasons)
                 ? static_cast<int>(goaway->second)
                 : kUnknownDisconnect;
    goaway_codes_.erase(goaway);
  } else if (orphaned_) {
    reason = kSubchannelShutdown;
  } else if (connection->close_cause() ==
             ClientSession::CloseCause::kKeepaliveTimeout) {
    reason = kConnectionTimedOut;
  } else if (connection->close_cause() ==
             ClientSession::CloseCause::kSocketError) {
    switch (connection->close_error_number()) {
      case ECONNRESET:
        reason = kConnectionReset;
        break;
      case ETIMEDOUT:
        reason = kConnectionTimedOut;
        break;
      case ECONNABORTED:
        reason = kConnectionAborted;
        break;
      default:
        reason = kSocketError;
    }
  }
  ClientMetricShard* metrics = host_->metric_shard();
  // Only an established connection disconnects; one that never completed
  // its handshake was a failed attempt.
  if (metrics != nullptr && connection->handshake_done()) {
    metrics->connections().disconnections[reason].Add(1);
  }
}

}  // namespace h2rpc::internal
