#include "transport/io/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h2rpc::transport::io {
namespace {

using ::testing::HasSubstr;

// Generous: only catches hangs, never measures speed.
constexpr int kHangTimeoutMs = 60000;

bool WaitFor(int fd, short events) {
  pollfd p = {fd, events, 0};
  return poll(&p, 1, kHangTimeoutMs) == 1 && (p.revents & events) != 0;
}

bool IsNonBlockingAndCloseOnExec(int fd) {
  return (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0 &&
         (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
}

bool HasNoDelay(int fd) {
  int value = 0;
  socklen_t size = sizeof(value);
  return getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &size) == 0 &&
         value != 0;
}

SocketAddress Resolve(const std::string& target) {
  std::vector<SocketAddress> addresses;
  Status status = ResolveTarget(target, &addresses);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(addresses.size(), 1u) << target;
  return addresses.empty() ? SocketAddress() : addresses[0];
}

// Sends `data` on `from` and reads it back whole from `to`.
std::string Transfer(int from, int to, const std::string& data) {
  EXPECT_EQ(send(from, data.data(), data.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(data.size()));
  std::string received;
  while (received.size() < data.size()) {
    if (!WaitFor(to, POLLIN)) break;
    char buffer[256];
    const ssize_t n = recv(to, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    received.append(buffer, n);
  }
  return received;
}

// Listens on `listen_target` (port 0), connects to it, accepts, and sends
// bytes both ways.
void ConnectAcceptAndExchange(const std::string& listen_target) {
  FileDescriptor listener;
  Status status = ListenTcp(Resolve(listen_target), 16, &listener);
  ASSERT_TRUE(status.ok()) << status.ToString();
  SocketAddress server_address;
  ASSERT_TRUE(LocalAddress(listener.get(), &server_address).ok());
  ASSERT_GT(server_address.port(), 0);

  FileDescriptor client;
  bool in_progress = true;
  status = StartConnectTcp(server_address, &client, &in_progress);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_TRUE(client.valid());
  EXPECT_TRUE(IsNonBlockingAndCloseOnExec(client.get()));
  EXPECT_TRUE(HasNoDelay(client.get()));
  if (in_progress) {
    ASSERT_TRUE(WaitFor(client.get(), POLLOUT));
    status = FinishConnectTcp(client.get(), server_address);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  ASSERT_TRUE(WaitFor(listener.get(), POLLIN));
  SocketAddress peer;
  int error = -1;
  FileDescriptor server = AcceptTcp(listener.get(), &peer, &error);
  ASSERT_TRUE(server.valid()) << "accept: " << strerror(error);
  EXPECT_EQ(error, 0);
  EXPECT_TRUE(IsNonBlockingAndCloseOnExec(server.get()));
  EXPECT_TRUE(HasNoDelay(server.get()));

  SocketAddress client_local, client_peer;
  ASSERT_TRUE(LocalAddress(client.get(), &client_local).ok());
  ASSERT_TRUE(PeerAddress(client.get(), &client_peer).ok());
  EXPECT_EQ(peer.ToString(), client_local.ToString());
  EXPECT_EQ(client_peer.ToString(), server_address.ToString());

  EXPECT_EQ(Transfer(client.get(), server.get(), "hello from the client"),
            "hello from the client");
  EXPECT_EQ(Transfer(server.get(), client.get(), "and back"), "and back");
}

// Whether [::1] can be bound here (some sandboxes have no IPv6).
bool HaveIpv6Loopback() {
  std::vector<SocketAddress> addresses;
  if (!ResolveTarget("[::1]:0", &addresses).ok()) return false;
  FileDescriptor listener;
  return ListenTcp(addresses[0], 1, &listener).ok();
}

TEST(ResolveTargetTest, NumericIpv4) {
  SocketAddress address = Resolve("127.0.0.1:80");
  EXPECT_EQ(address.family(), AF_INET);
  EXPECT_EQ(address.port(), 80);
  EXPECT_EQ(address.size, sizeof(sockaddr_in));
  EXPECT_EQ(address.ToString(), "127.0.0.1:80");
}

TEST(ResolveTargetTest, BracketedIpv6) {
  SocketAddress address = Resolve("[::1]:443");
  EXPECT_EQ(address.family(), AF_INET6);
  EXPECT_EQ(address.port(), 443);
  EXPECT_EQ(address.size, sizeof(sockaddr_in6));
  EXPECT_EQ(address.ToString(), "[::1]:443");
}

TEST(ResolveTargetTest, LocalhostGivesLoopbackAddresses) {
  std::vector<SocketAddress> addresses(3);  // Replaced, not appended to.
  Status status = ResolveTarget("localhost:8080", &addresses);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_FALSE(addresses.empty());
  for (const SocketAddress& address : addresses) {
    EXPECT_EQ(address.port(), 8080);
    const std::string text = address.ToString();
    EXPECT_TRUE(text.rfind("127.", 0) == 0 || text == "[::1]:8080") << text;
  }
}

TEST(ResolveTargetTest, PortZeroIsAllowedForListening) {
  EXPECT_EQ(Resolve("0.0.0.0:0").port(), 0);
}

TEST(ResolveTargetTest, MalformedTargetsAreInvalidArguments) {
  for (const char* target :
       {"", "nohost", "host:", ":80", "host:99999", "[::1", "host:12ab",
        "[::1]", "[::1]80", "::1:80", "[]:80", "[not-v6]:80", "[127.0.0.1]:80",
        "host:+80", "host:-1", "host: 80", "host:123456"}) {
    std::vector<SocketAddress> addresses(1);
    Status status = ResolveTarget(target, &addresses);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
        << "'" << target << "': " << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr("'" + std::string(target) + "'"));
    EXPECT_TRUE(addresses.empty()) << target;
  }
}

TEST(ResolveNumericTargetTest, ConvertsAddressLiterals) {
  for (const char* target : {"127.0.0.1:80", "[::1]:443"}) {
    std::vector<SocketAddress> addresses;
    Status status = ResolveNumericTarget(target, &addresses);
    ASSERT_TRUE(status.ok()) << target << ": " << status.ToString();
    ASSERT_EQ(addresses.size(), 1u) << target;
    EXPECT_EQ(addresses[0].ToString(), target);
  }
}

TEST(ResolveNumericTargetTest, LeavesHostNamesToTheResolver) {
  for (const char* target : {"localhost:80", "example.invalid:80"}) {
    std::vector<SocketAddress> addresses(2);  // Cleared.
    Status status = ResolveNumericTarget(target, &addresses);
    EXPECT_TRUE(status.ok()) << target << ": " << status.ToString();
    EXPECT_TRUE(addresses.empty()) << target;
  }
}

TEST(ResolveNumericTargetTest, MalformedTargetsAreInvalidArguments) {
  for (const char* target : {"nohost", "host:99999", "[::1", "[not-v6]:80"}) {
    std::vector<SocketAddress> addresses;
    Status status = ResolveNumericTarget(target, &addresses);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
        << "'" << target << "': " << status.ToString();
    EXPECT_THAT(status.message(), HasSubstr("'" + std::string(target) + "'"));
  }
}

TEST(SocketAddressTest, EmptyAddress) {
  SocketAddress address;
  EXPECT_EQ(address.family(), AF_UNSPEC);
  EXPECT_EQ(address.port(), -1);
  EXPECT_EQ(address.ToString(), "(unspecified address)");
}

TEST(FileDescriptorTest, ClosesOnResetAndDestructionButNotAfterRelease) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  {
    FileDescriptor read_end(pipe_fds[0]);
    FileDescriptor moved(std::move(read_end));
    EXPECT_FALSE(read_end.valid());
    EXPECT_EQ(moved.get(), pipe_fds[0]);
    FileDescriptor assigned;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.get(), pipe_fds[0]);
    assigned.reset();
    EXPECT_FALSE(assigned.valid());
    EXPECT_EQ(fcntl(pipe_fds[0], F_GETFD), -1);  // Closed.
  }
  {
    FileDescriptor write_end(pipe_fds[1]);
    EXPECT_EQ(write_end.release(), pipe_fds[1]);
  }
  EXPECT_NE(fcntl(pipe_fds[1], F_GETFD), -1);  // Released: still open.
  close(pipe_fds[1]);
}

TEST(SocketTest, ListenOnPortZeroReportsTheChosenPort) {
  FileDescriptor listener;
  Status status = ListenTcp(Resolve("127.0.0.1:0"), 16, &listener);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(IsNonBlockingAndCloseOnExec(listener.get()));
  SocketAddress local;
  ASSERT_TRUE(LocalAddress(listener.get(), &local).ok());
  EXPECT_EQ(local.family(), AF_INET);
  EXPECT_GT(local.port(), 0);
  EXPECT_EQ(local.ToString(), "127.0.0.1:" + std::to_string(local.port()));

  // Nothing pending: no connection, EAGAIN.
  int error = 0;
  SocketAddress peer;
  EXPECT_FALSE(AcceptTcp(listener.get(), &peer, &error).valid());
  EXPECT_EQ(error, EAGAIN);
  EXPECT_FALSE(AcceptTcp(listener.get(), nullptr).valid());
}

TEST(SocketTest, ListenOnAPortInUseNamesTheAddress) {
  FileDescriptor first;
  ASSERT_TRUE(ListenTcp(Resolve("127.0.0.1:0"), 16, &first).ok());
  SocketAddress taken;
  ASSERT_TRUE(LocalAddress(first.get(), &taken).ok());
  FileDescriptor second;
  Status status = ListenTcp(taken, 16, &second);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "bind to " + taken.ToString() + " failed: Address already in use");
  EXPECT_FALSE(second.valid());
}

TEST(SocketTest, ConnectAcceptAndExchangeBytesOverIpv4) {
  ConnectAcceptAndExchange("127.0.0.1:0");
}

TEST(SocketTest, ConnectAcceptAndExchangeBytesOverIpv6) {
  if (!HaveIpv6Loopback()) GTEST_SKIP() << "[::1] cannot be bound here";
  ConnectAcceptAndExchange("[::1]:0");
}

TEST(SocketTest, ConnectToAClosedPortIsRefused) {
  // A port that was free a moment ago.
  SocketAddress address;
  {
    FileDescriptor listener;
    ASSERT_TRUE(ListenTcp(Resolve("127.0.0.1:0"), 1, &listener).ok());
    ASSERT_TRUE(LocalAddress(listener.get(), &address).ok());
  }
  FileDescriptor client;
  bool in_progress = false;
  Status status = StartConnectTcp(address, &client, &in_progress);
  if (status.ok() && in_progress) {
    ASSERT_TRUE(WaitFor(client.get(), POLLOUT));
    status = FinishConnectTcp(client.get(), address);
  }
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_EQ(status.message(),
            "connect to " + address.ToString() + " failed: Connection refused");
}

TEST(SocketTest, PeerAddressOfAnUnconnectedSocketIsUnavailable) {
  FileDescriptor listener;
  ASSERT_TRUE(ListenTcp(Resolve("127.0.0.1:0"), 1, &listener).ok());
  SocketAddress peer;
  Status status = PeerAddress(listener.get(), &peer);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("not connected"));
  EXPECT_EQ(peer.size, 0u);
}

}  // namespace
}  // namespace h2rpc::transport::io
