#include "test/util/fake_tcp_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "test/util/loopback_socket.h"

namespace h2rpc::testing {

FakeServer::FakeServer(Handler handler, int port)
    : handler_(std::move(handler)) {
  listen_fd_ = ListenOnLoopback(port);
  if (listen_fd_ >= 0) port_ = LocalPort(listen_fd_);
  if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  thread_ = std::thread([this] { Run(); });
}

FakeServer::~FakeServer() {
  const char c = 0;
  (void)!write(wake_[1], &c, 1);
  thread_.join();
  for (int fd : kept_) close(fd);
  if (listen_fd_ >= 0) close(listen_fd_);
  close(wake_[0]);
  close(wake_[1]);
}

std::string FakeServer::target() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void FakeServer::Run() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents != 0) return;
    if (p[0].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      accepted_.fetch_add(1);
      if (handler_(fd)) kept_.push_back(fd);
    }
  }
}

}  // namespace h2rpc::testing
