#include "rpc/internal/channel_connector.h"

#include <sys/epoll.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {

ChannelConnector::ChannelConnector(
    transport::io::EventLoop* loop, std::string target,
    std::shared_ptr<transport::io::Resolver> resolver, Listener* listener)
    : loop_(loop),
      target_(std::move(target)),
      resolver_(std::move(resolver)),
      listener_(listener) {}

void ChannelConnector::Start(transport::io::MonotonicTime deadline) {
  addresses_.clear();
  next_ = 0;
  last_error_ = Status();
  attempt_timeout_ = deadline - loop_->Now();
  loop_->Schedule(this, deadline);
  Status status = transport::io::ResolveNumericTarget(target_, &addresses_);
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
  resolution_ = resolver_->Resolve(
      target_, loop_, [this](transport::io::Resolver::Result result) {
        OnResolved(std::move(result));
      });
}

void ChannelConnector::Abort() {
  resolution_.Cancel();
  loop_->Cancel(this);
  if (socket_.valid()) {
    loop_->RemoveFd(socket_.get());
    socket_.reset();
  }
}

void ChannelConnector::OnResolved(transport::io::Resolver::Result result) {
  if (!result.status.ok()) {
    Fail(result.status);
    return;
  }
  addresses_ = std::move(result.addresses);
  TryNext();
}

void ChannelConnector::TryNext() {
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
    status = loop_->AddFd(socket_.get(), EPOLLOUT, this);
    if (!status.ok()) {
      socket_.reset();
      last_error_ = std::move(status);
      continue;
    }
    return;
  }
  Fail(last_error_);
}

void ChannelConnector::OnFdReady(uint32_t events) {
  loop_->RemoveFd(socket_.get());
  Status status = transport::io::FinishConnectTcp(socket_.get(), current_);
  if (status.ok()) {
    Succeed();
    return;
  }
  socket_.reset();
  last_error_ = std::move(status);
  TryNext();
}

void ChannelConnector::OnTimer() {
  const bool resolving = resolution_.active();
  resolution_.Cancel();
  if (socket_.valid()) {
    loop_->RemoveFd(socket_.get());
    socket_.reset();
  }
  const std::string timeout = absl::FormatDuration(attempt_timeout_);
  listener_->OnConnectFailed(Status(
      StatusCode::kUnavailable,
      resolving
          ? absl::StrCat("resolving '", target_, "' timed out after ", timeout,
                         " (ChannelOptions::min_connect_timeout)")
          : absl::StrCat("connect to ", current_.ToString(),
                         " timed out after ", timeout,
                         " (ChannelOptions::min_connect_timeout)")));
}

void ChannelConnector::Fail(const Status& why) {
  loop_->Cancel(this);
  listener_->OnConnectFailed(why);
}

void ChannelConnector::Succeed() {
  loop_->Cancel(this);
  listener_->OnConnected(std::move(socket_), current_.ToString());
}

}  // namespace h2rpc::internal
