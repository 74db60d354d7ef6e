#include "rpc/channel.h"

#include <sys/epoll.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/internal/client_call.h"
#include "rpc/internal/client_stream_call.h"
#include "transport/io/socket.h"

namespace h2rpc {
namespace internal {

// Connects the channel's socket: resolves the target (an IP address at once,
// a host name on the resolver thread), tries each address in turn with a
// non-blocking connect, all within the connect timeout. Lives as long as the
// channel; one attempt at a time, on the loop thread.
class ChannelConnector final : private transport::io::FdWatcher,
                               private transport::io::Timer {
 public:
  ChannelConnector(Channel* channel,
                   std::shared_ptr<transport::io::Resolver> resolver)
      : channel_(channel), resolver_(std::move(resolver)) {}

  void Start() {
    addresses_.clear();
    next_ = 0;
    last_error_ = Status();
    channel_->loop_.Schedule(
        this, channel_->loop_.Now() + channel_->options_.connect_timeout);
    Status status =
        transport::io::ResolveNumericTarget(channel_->target_, &addresses_);
    if (!status.ok()) {
      Fail(status);
      return;
    }
    if (!addresses_.empty()) {
      TryNext();
      return;
    }
    // Safe to capture `this`: Abort() (before the channel goes) and the
    // timeout cancel the resolution, and a cancelled one never calls back.
    resolution_ =
        resolver_->Resolve(channel_->target_, &channel_->loop_,
                           [this](transport::io::Resolver::Result result) {
                             OnResolved(std::move(result));
                           });
  }

  // Abandons an attempt in progress (channel shutting down).
  void Abort() {
    resolution_.Cancel();
    channel_->loop_.Cancel(this);
    if (socket_.valid()) {
      channel_->loop_.RemoveFd(socket_.get());
      socket_.reset();
    }
  }

 private:
  void OnResolved(transport::io::Resolver::Result result) {
    if (!result.status.ok()) {
      Fail(result.status);
      return;
    }
    addresses_ = std::move(result.addresses);
    TryNext();
  }

  void TryNext() {
    while (next_ < addresses_.size()) {
      current_ = addresses_[next_++];
      bool in_progress = false;
      Status status =
          transport::io::StartConnectTcp(current_, &socket_, &in_progress);
      if (!status.ok()) {
        last_error_ = std::move(status);
        continue;
      }
      if (!in_progress) {
        Succeed();
        return;
      }
      status = channel_->loop_.AddFd(socket_.get(), EPOLLOUT, this);
      if (!status.ok()) {
        socket_.reset();
        last_error_ = std::move(status);
        continue;
      }
      return;
    }
    Fail(last_error_);
  }

  void OnFdReady(uint32_t events) override {
    channel_->loop_.RemoveFd(socket_.get());
    Status status = transport::io::FinishConnectTcp(socket_.get(), current_);
    if (status.ok()) {
      Succeed();
      return;
    }
    socket_.reset();
    last_error_ = std::move(status);
    TryNext();
  }

  void OnTimer() override {
    const bool resolving = resolution_.active();
    resolution_.Cancel();
    if (socket_.valid()) {
      channel_->loop_.RemoveFd(socket_.get());
      socket_.reset();
    }
    const std::string timeout =
        absl::FormatDuration(channel_->options_.connect_timeout);
    channel_->OnConnectFailed(
        Status(StatusCode::kUnavailable,
               resolving ? absl::StrCat("resolving '", channel_->target_,
                                        "' timed out after ", timeout,
                                        " (ChannelOptions::connect_timeout)")
                         : absl::StrCat("connect to ", current_.ToString(),
                                        " timed out after ", timeout,
                                        " (ChannelOptions::connect_timeout)")));
  }

  void Fail(const Status& why) {
    channel_->loop_.Cancel(this);
    channel_->OnConnectFailed(why);
  }

  void Succeed() {
    channel_->loop_.Cancel(this);
    channel_->OnConnected(std::move(socket_), current_.ToString());
  }

  Channel* const channel_;
  const std::shared_ptr<transport::io::Resolver> resolver_;
  transport::io::Resolver::Resolution resolution_;
  std::vector<transport::io::SocketAddress> addresses_;
  size_t next_ = 0;
  transport::io::SocketAddress current_;
  transport::io::FileDescriptor socket_;
  Status last_error_;
};

}  // namespace internal

using internal::ChannelCall;
using internal::ClientCall;
using transport::http2::ClientSession;

Channel::Channel(absl::string_view target, const ChannelOptions& options)
    : target_(target),
      options_(options),
      connector_(std::make_unique<internal::ChannelConnector>(
          this, options.resolver != nullptr
                    ? options.resolver
                    : std::make_shared<transport::io::Resolver>())),
      next_backoff_(options.initial_backoff) {
  loop_status_ = loop_.Start("h2rpc-channel", options_.loop_cpu);
}

Channel::~Channel() {
  loop_.Post([this] { Shutdown(); });
  loop_.Stop();
  transport::io::MutexLock lock(&pool_mu_);
  for (ClientCall* call : free_calls_) delete call;
}

void Channel::Shutdown() {
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

ClientCall* Channel::TakeCall() {
  transport::io::MutexLock lock(&pool_mu_);
  if (free_calls_.empty()) return new ClientCall(this);
  ClientCall* call = free_calls_.back();
  free_calls_.pop_back();
  return call;
}

void Channel::ReturnCall(ClientCall* call) {
  call->ResetForReuse();
  transport::io::MutexLock lock(&pool_mu_);
  free_calls_.push_back(call);
}

ClientCall* Channel::PrepareCall(ClientContext* context,
                                 absl::string_view method,
                                 const google::protobuf::MessageLite* request,
                                 absl::string_view request_bytes,
                                 Status* status) {
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

Status Channel::RunBlocking(ClientCall* call) {
  call->Start();
  Status status = call->Wait();
  call->Release();
  return status;
}

Status Channel::UnaryCall(ClientContext* context, absl::string_view method,
                          const google::protobuf::MessageLite& request,
                          google::protobuf::MessageLite* response) {
  Status status;
  ClientCall* call = PrepareCall(context, method, &request, {}, &status);
  if (call == nullptr) return status;
  call->response = response;
  return RunBlocking(call);
}

Status Channel::GenericUnaryCall(ClientContext* context,
                                 absl::string_view method,
                                 absl::string_view request,
                                 std::string* response) {
  Status status;
  ClientCall* call = PrepareCall(context, method, nullptr, request, &status);
  if (call == nullptr) return status;
  call->response_bytes = response;
  return RunBlocking(call);
}

void Channel::CompleteUnstarted(absl::AnyInvocable<void(const Status&)> done,
                                Status status) {
  auto complete = [done = std::move(done),
                   status = std::move(status)]() mutable { done(status); };
  if (!loop_status_.ok()) {
    // No loop runs: a thread of its own keeps `done` off the caller's stack.
    std::thread(std::move(complete)).detach();
    return;
  }
  loop_.Post(std::move(complete));  // allocates; a failure path only
}

void Channel::AsyncUnaryCall(ClientContext* context, absl::string_view method,
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

void Channel::AsyncGenericUnaryCall(
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

void Channel::BindStreamingCall(ClientContext* context,
                                absl::string_view method,
                                const google::protobuf::MessageLite* request,
                                google::protobuf::MessageLite* response,
                                ClientStreamReactor* reactor) {
  auto* call = new internal::ClientStreamCall(this, reactor);
  reactor->call_ = call;
  call->Prepare(context, method, request, response);
}

void Channel::StartBlockingStream(ClientContext* context,
                                  absl::string_view method,
                                  const google::protobuf::MessageLite* request,
                                  google::protobuf::MessageLite* response,
                                  internal::BlockingClientStream* stream) {
  BindStreamingCall(context, method, request, response, stream);
  // Released by the wrapper's destructor, which may still reach the call.
  stream->call_->KeepAlive();
  stream->StartCall();
}

void Channel::StartOnLoop(ChannelCall* call) {
  if (shut_down_) {
    call->FailBeforeStream(
        Status(StatusCode::kCancelled, "the channel was destroyed"));
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

void Channel::Connect() {
  state_ = State::kConnecting;
  connector_->Start();
}

void Channel::OnConnected(transport::io::FileDescriptor socket,
                          std::string peer) {
  if (shut_down_) return;
  connection_ = std::make_unique<Connection>(
      &loop_, std::move(socket), std::move(peer), options_.connection,
      static_cast<ClientSession::Listener*>(this));
  connection_->Start();
  state_ = State::kReady;
  next_backoff_ = options_.initial_backoff;
  while (pending_ != nullptr) {
    ChannelCall* call = pending_;
    call->LeavePending();
    connection_->session().StartCall(&call->stream());
  }
}

void Channel::OnConnectFailed(const Status& why) {
  state_ = State::kBackoff;
  last_error_ = why;
  backoff_until_ = loop_.Now() + next_backoff_;
  next_backoff_ = std::min(next_backoff_ * options_.backoff_multiplier,
                           options_.max_backoff);
  FailPending(why);
}

void Channel::FailPending(const Status& why) {
  while (pending_ != nullptr) {
    ChannelCall* call = pending_;
    call->LeavePending();
    call->FailBeforeStream(why);
  }
}

void Channel::OnConnectionDraining(ClientSession* connection) {
  if (connection_ == nullptr || connection != &connection_->session()) return;
  draining_.push_back(std::move(connection_));
  state_ = State::kIdle;
}

void Channel::OnConnectionClosed(ClientSession* connection, const Status& why) {
  std::unique_ptr<Connection> closed;
  if (connection_ != nullptr && connection == &connection_->session()) {
    closed = std::move(connection_);
    state_ = State::kIdle;
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

}  // namespace h2rpc
