#include "transport/io/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
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
  // TCP only: unix-domain sockets have no such option.
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

// Listens on `listen_address` (TCP: port 0), connects to it, accepts, and
// sends bytes both ways.
void ConnectAcceptAndExchange(const SocketAddress& listen_address) {
  const bool tcp = listen_address.family() != AF_UNIX;
  FileDescriptor listener;
  Status status = ListenTcp(listen_address, 16, &listener);
  ASSERT_TRUE(status.ok()) << status.ToString();
  SocketAddress server_address;
  ASSERT_TRUE(LocalAddress(listener.get(), &server_address).ok());
  if (tcp) {
    ASSERT_GT(server_address.port(), 0);
  } else {
    EXPECT_EQ(server_address.port(), -1);
    EXPECT_EQ(server_address.ToString(), listen_address.ToString());
  }

  FileDescriptor client;
  bool in_progress = true;
  status = StartConnectTcp(server_address, &client, &in_progress);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_TRUE(client.valid());
  EXPECT_TRUE(IsNonBlockingAndCloseOnExec(client.get()));
  EXPECT_EQ(HasNoDelay(client.get()), tcp);
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
  EXPECT_EQ(HasNoDelay(server.get()), tcp);

  SocketAddress client_local, client_peer;
  ASSERT_TRUE(LocalAddress(client.get(), &client_local).ok());
  ASSERT_TRUE(PeerAddress(client.get(), &client_peer).ok());
  EXPECT_EQ(peer.ToString(), client_local.ToString());
  EXPECT_EQ(client_peer.ToString(), server_address.ToString());
  if (!tcp) {
    // The client never bound its socket: unnamed on both ends.
    EXPECT_EQ(peer.family(), AF_UNIX);
    EXPECT_EQ(peer.ToString(), "unix:");
    EXPECT_TRUE(peer.unix_name().empty());
    EXPECT_FALSE(peer.is_abstract());
  }

  EXPECT_EQ(Transfer(client.get(), server.get(), "hello from the client"),
            "hello from the client");
  EXPECT_EQ(Transfer(server.get(), client.get(), "and back"), "and back");
}

// A fresh directory under /tmp (short enough for sun_path, unlike Bazel's
// TEST_TMPDIR), removed with what the test left in it.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/h2rpc_socket_test_XXXXXX";
    if (mkdtemp(pattern) != nullptr) path_ = pattern;
    EXPECT_FALSE(path_.empty()) << "mkdtemp: " << strerror(errno);
  }
  ~TempDir() {
    for (const char* name : {"s", "t", "file", "dir"}) {
      const std::string file = path_ + "/" + name;
      if (unlink(file.c_str()) != 0) rmdir(file.c_str());
    }
    rmdir(path_.c_str());
  }
  // `name` in the directory (one of those the destructor removes).
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool Exists(const std::string& path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}

bool IsSocketFile(const std::string& path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

SocketAddress Unix(const std::string& path, bool abstract = false) {
  SocketAddress address;
  Status status = UnixSocketAddress(path, abstract, &address);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return address;
}

// A name in the abstract namespace no other test process uses.
std::string UniqueAbstractName(const std::string& what) {
  return "h2rpc_socket_test/" + what + "/" + std::to_string(getpid());
}

// Binds a listening socket at `path` and closes it: the socket file stays,
// with nothing listening on it (a server that exited without cleaning up).
void LeaveStaleSocketFile(const std::string& path) {
  FileDescriptor listener;
  Status status = ListenTcp(Unix(path), 1, &listener);
  ASSERT_TRUE(status.ok()) << status.ToString();
  listener.reset();
  ASSERT_TRUE(IsSocketFile(path));
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
  ConnectAcceptAndExchange(Resolve("127.0.0.1:0"));
}

TEST(SocketTest, ConnectAcceptAndExchangeBytesOverIpv6) {
  if (!HaveIpv6Loopback()) GTEST_SKIP() << "[::1] cannot be bound here";
  ConnectAcceptAndExchange(Resolve("[::1]:0"));
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

TEST(UnixSocketAddressTest, Pathname) {
  const SocketAddress address = Unix("/tmp/some.sock");
  EXPECT_EQ(address.family(), AF_UNIX);
  EXPECT_EQ(address.size, offsetof(sockaddr_un, sun_path) + 15);
  EXPECT_EQ(address.port(), -1);
  EXPECT_FALSE(address.is_abstract());
  EXPECT_EQ(address.unix_name(), "/tmp/some.sock");
  EXPECT_EQ(address.ToString(), "unix:/tmp/some.sock");
  EXPECT_EQ(Unix("relative/x").ToString(), "unix:relative/x");
}

TEST(UnixSocketAddressTest, AbstractNameMayHoldAnyBytes) {
  const std::string name("a\0b\\c\n\xff d", 9);
  const SocketAddress address = Unix(name, /*abstract=*/true);
  EXPECT_EQ(address.family(), AF_UNIX);
  // The leading NUL and the name, no terminator.
  EXPECT_EQ(address.size, offsetof(sockaddr_un, sun_path) + 1 + name.size());
  EXPECT_EQ(address.port(), -1);
  EXPECT_TRUE(address.is_abstract());
  EXPECT_EQ(address.unix_name(), name);
  EXPECT_EQ(address.ToString(), "unix-abstract:a\\x00b\\x5cc\\x0a\\xff d");
  EXPECT_EQ(Unix("name", true).ToString(), "unix-abstract:name");
}

TEST(UnixSocketAddressTest, TheLongestPathAndNameFitSunPath) {
  const std::string longest(kMaxUnixPathLength, 'x');
  EXPECT_EQ(kMaxUnixPathLength, sizeof(sockaddr_un::sun_path) - 1);
  EXPECT_EQ(Unix(longest).unix_name(), longest);
  EXPECT_EQ(Unix(longest, true).unix_name(), longest);
  EXPECT_EQ(Unix(longest, true).size, sizeof(sockaddr_un));
}

TEST(UnixSocketAddressTest, RefusesEmptyTooLongAndNulInAPath) {
  struct Case {
    std::string path;
    bool abstract;
    std::string message;
  };
  const std::string too_long(kMaxUnixPathLength + 1, 'x');
  const Case cases[] = {
      {"", false, "empty unix socket path"},
      {"", true, "empty abstract unix socket name"},
      {too_long, false,
       "unix socket path '" + too_long +
           "' is 108 bytes; the limit is 107 (sun_path)"},
      {too_long, true,
       "abstract unix socket name '" + too_long +
           "' is 108 bytes; the limit is 107 (sun_path)"},
      {std::string("/tmp/a\0b", 8), false,
       "unix socket path '/tmp/a\\x00b' contains a NUL byte"},
  };
  for (const Case& c : cases) {
    SocketAddress address = Unix("/untouched");
    Status status = UnixSocketAddress(c.path, c.abstract, &address);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(status.message(), c.message);
    EXPECT_EQ(address.ToString(), "unix:/untouched");
  }
}

TEST(UnixSocketAddressTest, AnUnnamedAddressHasOnlyTheFamily) {
  SocketAddress address;
  address.storage.ss_family = AF_UNIX;
  address.size = sizeof(sa_family_t);
  EXPECT_EQ(address.ToString(), "unix:");
  EXPECT_TRUE(address.unix_name().empty());
  EXPECT_FALSE(address.is_abstract());
  EXPECT_EQ(address.port(), -1);
}

TEST(UnixSocketAddressTest, OtherFamiliesHaveNoUnixName) {
  EXPECT_TRUE(Resolve("127.0.0.1:80").unix_name().empty());
  EXPECT_FALSE(Resolve("127.0.0.1:80").is_abstract());
  EXPECT_TRUE(SocketAddress().unix_name().empty());
}

TEST(UnixSocketTest, ConnectAcceptAndExchangeBytesOverAPath) {
  TempDir dir;
  ConnectAcceptAndExchange(Unix(dir.File("s")));
}

TEST(UnixSocketTest, ConnectAcceptAndExchangeBytesOverARelativePath) {
  TempDir dir;
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(dir.File("").c_str()), 0);
  ConnectAcceptAndExchange(Unix("s"));
  EXPECT_TRUE(IsSocketFile(dir.File("s")));
  ASSERT_EQ(chdir(cwd), 0);
}

TEST(UnixSocketTest, ConnectAcceptAndExchangeBytesOverAnAbstractName) {
  ConnectAcceptAndExchange(Unix(UniqueAbstractName("exchange"), true));
}

TEST(UnixSocketTest, ListenOnAnExistingFileFailsNamingThePath) {
  TempDir dir;
  LeaveStaleSocketFile(dir.File("s"));
  FileDescriptor listener;
  Status status = ListenTcp(Unix(dir.File("s")), 1, &listener);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "bind to unix:" + dir.File("s") +
                                  " failed: Address already in use");
}

TEST(UnixSocketTest, ConnectWithNothingListeningFailsAtOnce) {
  TempDir dir;
  FileDescriptor client;
  bool in_progress = true;
  Status status = StartConnectTcp(Unix(dir.File("s")), &client, &in_progress);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "connect to unix:" + dir.File("s") +
                                  " failed: No such file or directory");
  EXPECT_FALSE(in_progress);

  LeaveStaleSocketFile(dir.File("s"));
  status = StartConnectTcp(Unix(dir.File("s")), &client, &in_progress);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "connect to unix:" + dir.File("s") + " failed: Connection refused");
}

TEST(RemoveStaleSocketFileTest, RemovesASocketFileSoListenSucceeds) {
  TempDir dir;
  LeaveStaleSocketFile(dir.File("s"));
  Status status = RemoveStaleSocketFile(Unix(dir.File("s")));
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_FALSE(Exists(dir.File("s")));
  FileDescriptor listener;
  status = ListenTcp(Unix(dir.File("s")), 1, &listener);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(RemoveStaleSocketFileTest, NothingToRemoveIsFine) {
  TempDir dir;
  EXPECT_TRUE(RemoveStaleSocketFile(Unix(dir.File("s"))).ok());
  EXPECT_TRUE(RemoveStaleSocketFile(Unix("any", /*abstract=*/true)).ok());
  EXPECT_TRUE(RemoveStaleSocketFile(Resolve("127.0.0.1:80")).ok());
}

TEST(RemoveStaleSocketFileTest, LeavesOtherFilesAndSaysWhatIsThere) {
  TempDir dir;
  const std::string file = dir.File("file");
  FileDescriptor(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  Status status = RemoveStaleSocketFile(Unix(file));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "cannot listen on unix:" + file +
                ": a regular file exists at that path (only a socket file "
                "left there is replaced)");
  EXPECT_TRUE(Exists(file));

  const std::string directory = dir.File("dir");
  ASSERT_EQ(mkdir(directory.c_str(), 0700), 0);
  status = RemoveStaleSocketFile(Unix(directory));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr(": a directory exists"));
  EXPECT_TRUE(Exists(directory));
}

TEST(SocketFileTest, RemovesTheBoundFile) {
  TempDir dir;
  const SocketAddress address = Unix(dir.File("s"));
  FileDescriptor listener;
  ASSERT_TRUE(ListenTcp(address, 1, &listener).ok());
  SocketFile file = SocketFile::Bound(address);
  EXPECT_EQ(file.path(), dir.File("s"));
  file.Remove();
  EXPECT_FALSE(Exists(dir.File("s")));
  EXPECT_TRUE(file.path().empty());
  file.Remove();  // Nothing more to do.
}

TEST(SocketFileTest, DestructionRemovesAndAMovedFromFileDoesNot) {
  TempDir dir;
  const SocketAddress address = Unix(dir.File("s"));
  FileDescriptor listener;
  ASSERT_TRUE(ListenTcp(address, 1, &listener).ok());
  {
    SocketFile first = SocketFile::Bound(address);
    SocketFile second(std::move(first));
    EXPECT_TRUE(first.path().empty());
    {
      SocketFile moved_from(std::move(second));
      second = std::move(moved_from);
    }
    EXPECT_TRUE(IsSocketFile(dir.File("s")));
  }
  EXPECT_FALSE(Exists(dir.File("s")));
}

TEST(SocketFileTest, LeavesAFileBoundAgainSince) {
  TempDir dir;
  const SocketAddress address = Unix(dir.File("s"));
  FileDescriptor first_listener;
  ASSERT_TRUE(ListenTcp(address, 1, &first_listener).ok());
  SocketFile first = SocketFile::Bound(address);
  // Another server replaces the file.
  ASSERT_TRUE(RemoveStaleSocketFile(address).ok());
  FileDescriptor second_listener;
  ASSERT_TRUE(ListenTcp(address, 1, &second_listener).ok());
  first.Remove();
  EXPECT_TRUE(IsSocketFile(dir.File("s")));
  SocketFile second = SocketFile::Bound(address);
  second.Remove();
  EXPECT_FALSE(Exists(dir.File("s")));
}

TEST(SocketFileTest, HoldsNothingForOtherAddresses) {
  EXPECT_TRUE(SocketFile::Bound(Resolve("127.0.0.1:80")).path().empty());
  EXPECT_TRUE(SocketFile::Bound(Unix("x", /*abstract=*/true)).path().empty());
  TempDir dir;  // Nothing bound at the path.
  EXPECT_TRUE(SocketFile::Bound(Unix(dir.File("s"))).path().empty());
}

}  // namespace
}  // namespace h2rpc::transport::io
