#include "rpc/internal/channel_core.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/internal/channel_call.h"
#include "rpc/internal/channel_options_check.h"
#include "rpc/internal/client_call.h"
#include "rpc/internal/client_stream_call.h"
#include "rpc/internal/connection_options_conversion.h"
#include "rpc/internal/credentials_access.h"
#include "rpc/internal/name_resolver_impl.h"
#include "rpc/internal/reactor_access.h"
#include "transport/tls/tls_session.h"

namespace h2rpc::internal {

using transport::http2::ClientSession;

namespace {

// The host part of "host:port" or "[v6]:port".
absl::string_view HostOf(absl::string_view target) {
  if (!target.empty() && target.front() == '[') {
    const size_t end = target.find(']');
    return end == absl::string_view::npos ? target.substr(1)
                                          : target.substr(1, end - 1);
  }
  const size_t colon = target.rfind(':');
  return colon == absl::string_view::npos ? target : target.substr(0, colon);
}

transport::http2::ConnectionOptions TransportOptionsFor(
    const ChannelOptions& options) {
  transport::http2::ConnectionOptions out =
      ToTransportOptions(options.connection);
  out.keepalive.time = options.keepalive_time;
  out.keepalive.timeout = options.keepalive_timeout;
  out.keepalive.permit_without_calls = options.keepalive_permit_without_calls;
  return out;
}

ConnectionBackoff::Options BackoffOptionsFor(const ChannelOptions& options) {
  ConnectionBackoff::Options out;
  out.initial_backoff = options.initial_backoff;
  out.multiplier = options.backoff_multiplier;
  out.jitter = options.backoff_jitter;
  out.max_backoff = options.max_backoff;
  out.min_connect_timeout = options.min_connect_timeout;
  return out;
}

}  // namespace

ChannelCore::ChannelCore(absl::string_view target,
                         const ChannelCredentials* credentials,
                         const ChannelOptions& options)
    : target_(target),
      options_(options),
      channel_error_(CheckChannelOptions(options)),
      default_authority_(options.ssl_target_name_override.empty()
                             ? target_
                             : options.ssl_target_name_override),
      settings_{options.user_agent, options.default_compression,
                options.connection.max_send_message_size,
                options.stream_write_buffer},
      watch_(ConnectivityState::kIdle),
      transport_options_(TransportOptionsFor(options)),
      state_(ConnectivityState::kIdle),
      connector_(std::make_unique<ChannelConnector>(
          &loop_, target_,
          options.resolver != nullptr
              ? options.resolver->impl().resolver
              : std::make_shared<transport::io::Resolver>(),
          static_cast<ChannelConnector::Listener*>(this))),
      backoff_(BackoffOptionsFor(options), &loop_),
      keepalive_time_(options.keepalive_time) {
  if (!channel_error_.ok()) {
    // Reported by every call; no connection is ever made.
  } else if (credentials == nullptr) {
    channel_error_ =
        Status(StatusCode::kUnavailable, "the channel has null credentials");
  } else if (!credentials->status().ok()) {
    channel_error_ = Status(StatusCode::kUnavailable,
                            absl::StrCat("unusable channel credentials: ",
                                         credentials->status().message()));
  } else if (credentials->secure()) {
    tls_ = CredentialsAccess::Tls(*credentials);
    scheme_ = "https";
    tls_server_name_ = options.ssl_target_name_override.empty()
                           ? std::string(HostOf(target_))
                           : options.ssl_target_name_override;
  }
  loop_status_ = loop_.Start("h2rpc-channel", options_.loop_cpu);
  if (!channel_error_.ok() || !loop_status_.ok()) {
    // A channel that can never connect.
    state_ = ConnectivityState::kTransientFailure;
    watch_.Set(state_);
  }
}

ChannelCore::~ChannelCore() {
  loop_.Post([this] { Shutdown(); });
  loop_.Stop();
  transport::io::MutexLock lock(&pool_mu_);
  for (ClientCall* call : free_calls_) delete call;
}

void ChannelCore::Destroy(std::unique_ptr<ChannelCore> core) {
  if (core == nullptr || !core->loop_.InLoopThread()) return;
  // ~EventLoop must not run on the loop thread; stopping it from another
  // joins the loop thread, which orders everything the loop did before the
  // delete.
  std::thread([dead = core.release()] { delete dead; }).detach();
}

void ChannelCore::Shutdown() {
  shut_down_ = true;
  connector_->Abort();
  loop_.Cancel(&attempt_timer_);
  loop_.Cancel(&backoff_timer_);
  loop_.Cancel(&idle_timer_);
  const Status why(StatusCode::kCancelled, "the channel was destroyed");
  FailPending(why, /*keep_wait_for_ready=*/false);
  if (connection_ != nullptr) connection_->session().Close(why);
  // Close() calls back OnConnectionClosed, which edits draining_.
  std::vector<ClientSession*> draining;
  for (auto& connection : draining_) draining.push_back(&connection->session());
  for (ClientSession* session : draining) session->Close(why);
}

ClientCall* ChannelCore::TakeCall() {
  transport::io::MutexLock lock(&pool_mu_);
  if (free_calls_.empty()) return new ClientCall(this);
  ClientCall* call = free_calls_.back();
  free_calls_.pop_back();
  return call;
}

void ChannelCore::ReturnCall(ClientCall* call) {
  call->ResetForReuse();
  transport::io::MutexLock lock(&pool_mu_);
  free_calls_.push_back(call);
}

ClientCall* ChannelCore::PrepareCall(
    ClientContext* context, absl::string_view method,
    const google::protobuf::MessageLite* request,
    absl::string_view request_bytes, Status* status) {
  if (!loop_status_.ok()) {
    *status = loop_status_;
    return nullptr;
  }
  ClientCall* call = TakeCall();
  *status = call->Prepare(context, method, request, request_bytes);
  if (!status->ok()) {
    ReturnCall(call);
    return nullptr;
  }
  return call;
}

Status ChannelCore::RunBlocking(ClientCall* call) {
  call->Start();
  Status status = call->Wait();
  call->Release();
  return status;
}

Status ChannelCore::UnaryCall(ClientContext* context, absl::string_view method,
                              const google::protobuf::MessageLite& request,
                              google::protobuf::MessageLite* response) {
  Status status;
  ClientCall* call = PrepareCall(context, method, &request, {}, &status);
  if (call == nullptr) return status;
  call->response = response;
  return RunBlocking(call);
}

Status ChannelCore::GenericUnaryCall(ClientContext* context,
                                     absl::string_view method,
                                     absl::string_view request,
                                     std::string* response) {
  Status status;
  ClientCall* call = PrepareCall(context, method, nullptr, request, &status);
  if (call == nullptr) return status;
  call->response_bytes = response;
  return RunBlocking(call);
}

void ChannelCore::CompleteUnstarted(
    absl::AnyInvocable<void(const Status&)> done, Status status) {
  auto complete = [done = std::move(done),
                   status = std::move(status)]() mutable { done(status); };
  if (!loop_status_.ok()) {
    // No loop runs: a thread of its own keeps `done` off the caller's stack.
    std::thread(std::move(complete)).detach();
    return;
  }
  loop_.Post(std::move(complete));  // allocates; a failure path only
}

void ChannelCore::AsyncUnaryCall(ClientContext* context,
                                 absl::string_view method,
                                 const google::protobuf::MessageLite& request,
                                 google::protobuf::MessageLite* response,
                                 absl::AnyInvocable<void(const Status&)> done) {
  Status status;
  ClientCall* call = PrepareCall(context, method, &request, {}, &status);
  if (call == nullptr) {
    CompleteUnstarted(std::move(done), std::move(status));
    return;
  }
  call->response = response;
  call->done = std::move(done);
  call->Start();
}

void ChannelCore::AsyncGenericUnaryCall(
    ClientContext* context, absl::string_view method, absl::string_view request,
    std::string* response, absl::AnyInvocable<void(const Status&)> done) {
  Status status;
  ClientCall* call = PrepareCall(context, method, nullptr, request, &status);
  if (call == nullptr) {
    CompleteUnstarted(std::move(done), std::move(status));
    return;
  }
  call->response_bytes = response;
  call->done = std::move(done);
  call->Start();
}

void ChannelCore::BindStreamingCall(
    ClientContext* context, absl::string_view method,
    const google::protobuf::MessageLite* request,
    google::protobuf::MessageLite* response, ClientStreamReactor* reactor) {
  auto* call = new ClientStreamCall(this, reactor);
  ClientReactorAccess::Bind(reactor, call);
  call->Prepare(context, method, request, response);
}

void ChannelCore::StartBlockingStream(
    ClientContext* context, absl::string_view method,
    const google::protobuf::MessageLite* request,
    google::protobuf::MessageLite* response, BlockingClientStream* stream) {
  BindStreamingCall(context, method, request, response, stream);
  // Released by the wrapper's destructor, which may still reach the call.
  ClientReactorAccess::Call(*stream)->KeepAlive();
  stream->StartCall();
}

ConnectivityState ChannelCore::GetState(bool try_to_connect) {
  const ConnectivityState state = watch_.Get();
  if (try_to_connect && state == ConnectivityState::kIdle) {
    loop_.Post(&connect_task_);
  }
  return state;
}

bool ChannelCore::WaitForStateChange(ConnectivityState last_observed,
                                     absl::Time deadline) {
  return watch_.WaitForChange(last_observed,
                              transport::io::MonotonicFromWall(deadline));
}

bool ChannelCore::WaitForConnected(absl::Time deadline) {
  return watch_.WaitUntilReady(transport::io::MonotonicFromWall(deadline),
                               [this] { loop_.Post(&connect_task_); });
}

absl::Duration ChannelCore::keepalive_time() const {
  transport::io::MutexLock lock(&keepalive_mu_);
  return keepalive_time_;
}

void ChannelCore::StartOnLoop(ChannelCall* call) {
  if (shut_down_) {
    call->FailBeforeStream(
        Status(StatusCode::kCancelled, "the channel was destroyed"));
    return;
  }
  if (!channel_error_.ok()) {
    call->FailBeforeStream(channel_error_);
    return;
  }
  if (call->CountInProgress()) ++active_calls_;
  switch (state_) {
    case ConnectivityState::kReady:
      connection_->session().StartCall(&call->stream());
      return;
    case ConnectivityState::kTransientFailure:
      if (!call->wait_for_ready()) {
        call->FailBeforeStream(last_error_);
        return;
      }
      call->WaitForConnection(&pending_);
      return;
    case ConnectivityState::kConnecting:
      call->WaitForConnection(&pending_);
      return;
    case ConnectivityState::kIdle:
    case ConnectivityState::kShutdown:  // not on the loop's side
      call->WaitForConnection(&pending_);
      ExitIdle();
      return;
  }
}

void ChannelCore::OnCallEnded() {
  if (--active_calls_ > 0) return;
  idle_since_ = loop_.Now();
  ArmIdleTimer();
}

Status ChannelCore::PendingDeadlineStatus() const {
  return Status(
      StatusCode::kDeadlineExceeded,
      last_error_.ok()
          ? absl::StrCat("deadline exceeded while waiting for a connection to ",
                         target_)
          : absl::StrCat("deadline exceeded while waiting for a connection to ",
                         target_,
                         "; last connection attempt: ", last_error_.message()));
}

void ChannelCore::SetState(ConnectivityState state) {
  state_ = state;
  watch_.Set(state);
}

void ChannelCore::ConnectIfIdle() {
  if (shut_down_ || state_ != ConnectivityState::kIdle ||
      !channel_error_.ok()) {
    return;
  }
  ExitIdle();
}

void ChannelCore::ExitIdle() {
  if (!last_error_.ok() && loop_.Now() < backoff_.next_attempt_time()) {
    // The channel went idle while backing off after a failed attempt: the
    // backoff still holds.
    EnterTransientFailure(last_error_);
  } else {
    Connect();
  }
  if (active_calls_ == 0) {
    // Woken by GetState(true): idle again after idle_timeout unless a call
    // comes.
    idle_since_ = loop_.Now();
    ArmIdleTimer();
  }
}

void ChannelCore::Connect() {
  SetState(ConnectivityState::kConnecting);
  const transport::io::MonotonicTime start = loop_.Now();
  attempt_deadline_ = backoff_.BeginAttempt();
  attempt_timeout_ = attempt_deadline_ - start;
  // May report its outcome before returning.
  connector_->Start(attempt_deadline_);
}

void ChannelCore::OnConnected(transport::io::FileDescriptor socket,
                              std::string peer) {
  if (shut_down_) return;
  std::unique_ptr<transport::io::ByteFilter> filter;
  if (tls_ != nullptr) {
    filter = transport::tls::TlsSession::NewClient(tls_, tls_server_name_);
  }
  connection_ = std::make_unique<Connection>(
      &loop_, std::move(socket), std::move(filter), std::move(peer),
      transport_options_, static_cast<ClientSession::Listener*>(this));
  // The TLS and HTTP/2 handshakes count against the attempt's deadline too.
  loop_.Schedule(&attempt_timer_, attempt_deadline_);
  // May close the connection (OnConnectionClosed) before returning.
  connection_->Start();
}

void ChannelCore::OnConnectFailed(const Status& why) {
  if (shut_down_) return;
  EnterTransientFailure(why);
}

void ChannelCore::OnAttemptDeadline() {
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

void ChannelCore::EnterTransientFailure(const Status& why) {
  loop_.Cancel(&attempt_timer_);
  last_error_ = why.code() == StatusCode::kUnavailable
                    ? why
                    : Status(StatusCode::kUnavailable, why.message());
  SetState(ConnectivityState::kTransientFailure);
  FailPending(last_error_, /*keep_wait_for_ready=*/true);
  // SleepUntil(current_deadline): at once if the attempt took longer.
  loop_.Schedule(&backoff_timer_,
                 std::max(backoff_.next_attempt_time(), loop_.Now()));
}

void ChannelCore::OnBackoffDone() {
  if (shut_down_ || state_ != ConnectivityState::kTransientFailure) return;
  Connect();
}

void ChannelCore::FailPending(const Status& why, bool keep_wait_for_ready) {
  // Moved to a list of their own first: a failing call's `done` may start
  // new calls (posted, so they cannot join this list meanwhile).
  ChannelCall* failing = nullptr;
  for (ChannelCall* call = pending_; call != nullptr;) {
    ChannelCall* const next = call->next_pending();
    if (!keep_wait_for_ready || !call->wait_for_ready()) {
      call->MovePending(&failing);
    }
    call = next;
  }
  while (failing != nullptr) {
    ChannelCall* const call = failing;
    call->LeavePending();
    call->FailBeforeStream(why);
  }
}

void ChannelCore::ArmIdleTimer() {
  if (options_.idle_timeout == absl::InfiniteDuration() ||
      idle_timer_.scheduled() || state_ == ConnectivityState::kIdle ||
      shut_down_) {
    return;
  }
  loop_.Schedule(&idle_timer_, idle_since_ + options_.idle_timeout);
}

void ChannelCore::OnIdleTimer() {
  // A call in progress re-arms the timer when it ends.
  if (shut_down_ || active_calls_ > 0 || state_ == ConnectivityState::kIdle) {
    return;
  }
  const transport::io::MonotonicTime due = idle_since_ + options_.idle_timeout;
  if (loop_.Now() < due) {
    loop_.Schedule(&idle_timer_, due);
    return;
  }
  EnterIdle();
}

void ChannelCore::EnterIdle() {
  connector_->Abort();
  loop_.Cancel(&attempt_timer_);
  loop_.Cancel(&backoff_timer_);
  loop_.Cancel(&idle_timer_);
  SetState(ConnectivityState::kIdle);
  if (connection_ == nullptr) return;
  ClientSession& session = connection_->session();
  draining_.push_back(std::move(connection_));
  if (session.handshake_done()) {
    // GOAWAY, then closed as soon as it is written (no stream is open).
    session.GracefulShutdown();
  } else {
    // Calls back OnConnectionClosed, which finds it draining.
    session.Close(Status(StatusCode::kUnavailable, "the channel went idle"));
  }
}

void ChannelCore::OnConnectionReady(ClientSession* connection) {
  if (connection_ == nullptr || connection != &connection_->session()) return;
  loop_.Cancel(&attempt_timer_);
  backoff_.Reset();
  last_error_ = Status();
  SetState(ConnectivityState::kReady);
  while (pending_ != nullptr && state_ == ConnectivityState::kReady) {
    ChannelCall* const call = pending_;
    call->LeavePending();
    connection_->session().StartCall(&call->stream());
  }
}

void ChannelCore::OnGoAwayReceived(ClientSession* connection,
                                   uint32_t error_code,
                                   absl::string_view debug_data) {
  if (error_code != NGHTTP2_ENHANCE_YOUR_CALM ||
      debug_data != "too_many_pings" || connection == calmed_connection_ ||
      transport_options_.keepalive.time == absl::InfiniteDuration()) {
    return;
  }
  // As gRPC clients do: the server's keepalive_min_time is longer than our
  // keepalive_time, so ping half as often on later connections.
  calmed_connection_ = connection;
  transport_options_.keepalive.time *= 2;
  {
    transport::io::MutexLock lock(&keepalive_mu_);
    keepalive_time_ = transport_options_.keepalive.time;
  }
  std::fprintf(stderr,
               "h2rpc channel to %s: %s sent GOAWAY ENHANCE_YOUR_CALM "
               "\"too_many_pings\"; keepalive_time doubled to %s for new "
               "connections\n",
               target_.c_str(), connection->peer().c_str(),
               absl::FormatDuration(transport_options_.keepalive.time).c_str());
}

void ChannelCore::OnConnectionDraining(ClientSession* connection) {
  if (connection_ == nullptr || connection != &connection_->session()) return;
  draining_.push_back(std::move(connection_));
  if (state_ == ConnectivityState::kReady) {
    SetState(ConnectivityState::kIdle);
  } else if (state_ == ConnectivityState::kConnecting) {
    EnterTransientFailure(
        Status(StatusCode::kUnavailable,
               absl::StrCat(connection->peer(),
                            " sent GOAWAY before completing its handshake")));
  }
}

void ChannelCore::OnConnectionClosed(ClientSession* connection,
                                     const Status& why) {
  if (connection == calmed_connection_) calmed_connection_ = nullptr;
  std::unique_ptr<Connection> closed;
  if (connection_ != nullptr && connection == &connection_->session()) {
    closed = std::move(connection_);
    if (!connection->handshake_done()) {
      // Closed before the server's HTTP/2 handshake (a failed TLS
      // handshake, a peer that is not an HTTP/2 server, the attempt's
      // deadline): a failed attempt.
      if (!shut_down_) EnterTransientFailure(why);
    } else if (state_ == ConnectivityState::kReady) {
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
  // Not from inside the connection's own callback: destroy it next turn.
  loop_.Post([dead = closed.release()] { delete dead; });
}

}  // namespace h2rpc::internal
