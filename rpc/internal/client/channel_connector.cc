#include "rpc/internal/client/channel_connector.h"

#include <sys/epoll.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {

void ChannelConnector::Start(const transport::io::SocketAddress& address,
                             transport::io::MonotonicTime deadline) {
  address_ = address;
  attempt_timeout_ = deadline - loop_->Now();
  bool in_progress = false;
  Status status =
      transport::io::StartConnectTcp(address_, &socket_, &in_progress);
  if (status.ok() && in_progress) {
    status = loop_->AddFd(socket_.get(), EPOLLOUT, this);
    if (status.ok()) {
      loop_->Schedule(this, deadline);
      return;
    }
  }
  if (!status.ok()) {
    socket_.reset();
    listener_->OnConnectFailed(status);
    return;
  }
  listener_->OnConnected(std::move(socket_), address_.ToString());
}

void ChannelConnector::Abort() {
  loop_->Cancel(this);
  if (socket_.valid()) {
    loop_->RemoveFd(socket_.get());
    socket_.reset();
  }
}

void ChannelConnector::OnFdReady(uint32_t events) {
  loop_->Cancel(this);
  loop_->RemoveFd(socket_.get());
  Status status = transport::io::FinishConnectTcp(socket_.get(), address_);
  if (!status.ok()) {
    socket_.reset();
    listener_->OnConnectFailed(status);
    return;
  }
  listener_->OnConnected(std::move(socket_), address_.ToString());
}

void ChannelConnector::OnTimer() {
  Abort();
  listener_->OnConnectFailed(Status(
      StatusCode::kUnavailable,
      absl::StrCat("connect to ", address_.ToString(), " timed out after ",
                   absl::FormatDuration(attempt_timeout_),
                   " (ChannelOptions::min_connect_timeout)")));
}

}  // namespace h2rpc::internal
