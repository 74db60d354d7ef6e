#include "rpc/internal/channel_core.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/internal/channel_call.h"
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

}  // namespace

ChannelCore::ChannelCore(absl::string_view target,
                         const ChannelCredentials* credentials,
                         const ChannelOptions& options)
    : target_(target),
      options_(options),
      default_authority_(options.ssl_target_name_override.empty()
                             ? target_
                             : options.ssl_target_name_override),
      transport_options_(ToTransportOptions(options.connection)),
      settings_{options.user_agent, options.default_compression,
                options.connection.max_send_message_size,
                options.stream_write_buffer},
      connector_(std::make_unique<ChannelConnector>(
          &loop_, target_, options.connect_timeout,
          options.resolver != nullptr
              ? options.resolver->impl().resolver
              : std::make_shared<transport::io::Resolver>(),
          static_cast<ChannelConnector::Listener*>(this))),
      next_backoff_(options.initial_backoff) {
  if (credentials == nullptr) {
    credentials_error_ =
        Status(StatusCode::kUnavailable, "the channel has null credentials");
  } else if (!credentials->status().ok()) {
    credentials_error_ = Status(StatusCode::kUnavailable,
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
  const Status why(StatusCode::kCancelled, "the channel was destroyed");
  FailPending(why);
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

void ChannelCore::StartOnLoop(ChannelCall* call) {
  if (shut_down_) {
    call->FailBeforeStream(
        Status(StatusCode::kCancelled, "the channel was destroyed"));
    return;
  }
  if (!credentials_error_.ok()) {
    call->FailBeforeStream(credentials_error_);
    return;
  }
  if (state_ == State::kReady) {
    if (connection_ != nullptr && connection_->session().accepting_calls()) {
      connection_->session().StartCall(&call->stream());
      return;
    }
    state_ = State::kIdle;
  }
  if (state_ == State::kBackoff) {
    if (loop_.Now() < backoff_until_) {
      call->FailBeforeStream(last_error_);
      return;
    }
    state_ = State::kIdle;
  }
  call->WaitForConnection(&pending_);
  if (state_ == State::kIdle) Connect();
}

void ChannelCore::Connect() {
  state_ = State::kConnecting;
  connector_->Start();
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
  connection_->Start();
  state_ = State::kReady;
  while (pending_ != nullptr) {
    ChannelCall* call = pending_;
    call->LeavePending();
    connection_->session().StartCall(&call->stream());
  }
}

void ChannelCore::OnConnectFailed(const Status& why) {
  state_ = State::kBackoff;
  last_error_ = why;
  backoff_until_ = loop_.Now() + next_backoff_;
  next_backoff_ = std::min(next_backoff_ * options_.backoff_multiplier,
                           options_.max_backoff);
  FailPending(why);
}

void ChannelCore::FailPending(const Status& why) {
  while (pending_ != nullptr) {
    ChannelCall* call = pending_;
    call->LeavePending();
    call->FailBeforeStream(why);
  }
}

void ChannelCore::OnConnectionDraining(ClientSession* connection) {
  if (connection_ == nullptr || connection != &connection_->session()) return;
  draining_.push_back(std::move(connection_));
  state_ = State::kIdle;
}

void ChannelCore::OnConnectionClosed(ClientSession* connection,
                                     const Status& why) {
  // A connection that got through the server's HTTP/2 handshake was a
  // successful connect: the next failure starts the backoff over.
  if (connection->handshake_done()) next_backoff_ = options_.initial_backoff;
  std::unique_ptr<Connection> closed;
  if (connection_ != nullptr && connection == &connection_->session()) {
    closed = std::move(connection_);
    state_ = State::kIdle;
    // A connection that closed before the server's HTTP/2 handshake (a
    // failed TLS handshake, a peer that is not an HTTP/2 server) is a
    // failed connect: back off before the next attempt.
    if (!connection->handshake_done()) OnConnectFailed(why);
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
