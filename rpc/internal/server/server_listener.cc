#include "rpc/internal/server/server_listener.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {
namespace {

// Connections accepted per readiness event before the loop serves others.
constexpr int kMaxAcceptsPerEvent = 64;

}  // namespace

AcceptFailure ClassifyAcceptFailure(int error) {
  switch (error) {
    case EAGAIN:  // == EWOULDBLOCK on Linux
      return AcceptFailure::kDrained;
    // A connection aborted or refused by a firewall rule, and the network
    // errors Linux reports early on the accepted connection (accept(2)).
    case ECONNABORTED:
    case EINTR:
    case EPERM:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
    case ETIMEDOUT:
    case ESOCKTNOSUPPORT:
    case EPROTONOSUPPORT:
      return AcceptFailure::kSkipConnection;
    default:  // EMFILE, ENFILE, ENOBUFS, ENOMEM, EBADF, EINVAL...
      return AcceptFailure::kBackOff;
  }
}

absl::Duration NextAcceptBackoff(absl::Duration previous) {
  if (previous <= absl::ZeroDuration()) return kAcceptBackoffInitial;
  return std::min(previous * 2, kAcceptBackoffMax);
}

ServerListener::ServerListener(
    Host* server, transport::io::FileDescriptor socket,
    transport::io::SocketFile file,
    std::shared_ptr<transport::tls::TlsContextSlot> tls)
    : server_(server),
      socket_(std::move(socket)),
      file_(std::move(file)),
      tls_(std::move(tls)) {
  transport::io::SocketAddress bound;
  const Status status = transport::io::LocalAddress(socket_.get(), &bound);
  address_ = status.ok() ? bound.ToString()
                         : absl::StrCat("listening socket ", socket_.get());
}

void ServerListener::Start(transport::io::EventLoop* loop) {
  loop_ = loop;
  loop->Post([this] {
    loop_->AssertInLoopThread();
    Watch();
  });
}

void ServerListener::Stop() {
  loop_->AssertInLoopThread();
  if (!socket_.valid()) return;
  Unwatch();
  loop_->Cancel(this);
  paused_at_limit_ = false;
  socket_.reset();
  file_.Remove();
}

void ServerListener::ConnectionSlotFreed() {
  loop_->Post(static_cast<transport::io::Task*>(this));
}

void ServerListener::OnFdReady(uint32_t events) {
  loop_->AssertInLoopThread();
  for (int i = 0; i < kMaxAcceptsPerEvent && watching_; ++i) {
    if (server_->AtConnectionLimit()) {
      // Pending connections wait in the backlog until one closes.
      Unwatch();
      paused_at_limit_ = true;
      return;
    }
    transport::io::SocketAddress peer;
    int error = 0;
    transport::io::FileDescriptor accepted =
        transport::io::AcceptTcp(socket_.get(), &peer, &error);
    if (accepted.valid()) {
      backoff_ = absl::ZeroDuration();
      server_->Adopt(std::move(accepted), PeerName(peer),
                     tls_ != nullptr ? tls_->Get() : nullptr);
      continue;
    }
    switch (ClassifyAcceptFailure(error)) {
      case AcceptFailure::kDrained:
        return;
      case AcceptFailure::kSkipConnection:
        continue;
      case AcceptFailure::kBackOff: {
        char buffer[256];
        // GNU strerror_r: returns the message, maybe not in `buffer`.
        BackOff("accept", strerror_r(error, buffer, sizeof(buffer)));
        return;
      }
    }
  }
}

std::string ServerListener::PeerName(
    const transport::io::SocketAddress& peer) const {
  // A unix-domain client rarely binds its socket: gRPC C++ names the
  // server's socket then.
  if (peer.family() == AF_UNIX && peer.unix_name().empty() &&
      !peer.is_abstract()) {
    return address_;
  }
  return peer.ToString();
}

void ServerListener::OnTimer() {
  loop_->AssertInLoopThread();
  Watch();
}

void ServerListener::Run() {
  loop_->AssertInLoopThread();
  if (!paused_at_limit_) return;
  paused_at_limit_ = false;
  Watch();
}

void ServerListener::Watch() {
  if (watching_ || !socket_.valid()) return;
  const Status status = loop_->AddFd(socket_.get(), EPOLLIN, this);
  if (!status.ok()) {
    BackOff("watching the socket", status.message());
    return;
  }
  watching_ = true;
}

void ServerListener::Unwatch() {
  if (!watching_) return;
  loop_->RemoveFd(socket_.get());
  watching_ = false;
}

void ServerListener::BackOff(const char* what, absl::string_view reason) {
  if (backoff_ == absl::ZeroDuration()) {
    std::fprintf(stderr, "h2rpc server: %s failed on %s: %.*s; backing off\n",
                 what, address_.c_str(), static_cast<int>(reason.size()),
                 reason.data());
  }
  backoff_ = NextAcceptBackoff(backoff_);
  Unwatch();
  loop_->Schedule(this, loop_->Now() + backoff_);
}

}  // namespace h2rpc::internal
