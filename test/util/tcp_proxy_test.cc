#include "test/util/tcp_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "test/util/loopback_socket.h"
#include "test/util/raw_frames.h"
#include "test/util/wait_for.h"

namespace h2rpc::testing {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(30);

// A listening socket on 127.0.0.1, standing in for the proxied server.
class Upstream {
 public:
  Upstream() {
    fd_ = ListenOnLoopback(0);
    if (fd_ >= 0) port_ = LocalPort(fd_);
  }
  ~Upstream() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }
  // The next connection (blocking, at most kTimeout); -1 if none.
  int Accept() {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(kTimeout))) !=
        1) {
      return -1;
    }
    return accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Reads exactly `n` bytes (true), or fails at EOF, an error or kTimeout.
bool ReadExactly(int fd, size_t n, std::string* out) {
  out->clear();
  const absl::Time give_up = absl::Now() + kTimeout;
  char buffer[4096];
  while (out->size() < n) {
    pollfd p{fd, POLLIN, 0};
    const int64_t left = absl::ToInt64Milliseconds(give_up - absl::Now());
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) != 1) return false;
    const ssize_t got =
        recv(fd, buffer, std::min(sizeof(buffer), n - out->size()), 0);
    if (got <= 0) return false;
    out->append(buffer, static_cast<size_t>(got));
  }
  return true;
}

// True once `fd` reads its end (within kTimeout).
bool ReadsEof(int fd) {
  const absl::Time give_up = absl::Now() + kTimeout;
  char buffer[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int64_t left = absl::ToInt64Milliseconds(give_up - absl::Now());
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) != 1) return false;
    const ssize_t got = recv(fd, buffer, sizeof(buffer), 0);
    if (got == 0) return true;
    if (got < 0) return false;
  }
}

// Writes without blocking until the socket would block; returns the bytes
// written, or -1 if `limit` bytes went out without blocking.
int64_t WriteUntilBlocked(int fd, int64_t limit) {
  const std::string chunk(64 << 10, 'x');
  int64_t total = 0;
  while (total < limit) {
    const ssize_t n =
        send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? total : -1;
    total += n;
  }
  return -1;
}

// Whether a read now would block (nothing has arrived, no EOF).
bool NothingToRead(int fd) {
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) < 0 &&
         (errno == EAGAIN || errno == EWOULDBLOCK);
}

TEST(TcpProxyTest, ForwardsBothWaysAndCountsTheBytes) {
  Upstream upstream;
  ASSERT_GT(upstream.port(), 0);
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  EXPECT_EQ(proxy.target(), absl::StrCat("127.0.0.1:", proxy.port()));
  const int client = ConnectToLoopback(proxy.port());
  ASSERT_GE(client, 0);
  const int server = upstream.Accept();
  ASSERT_GE(server, 0);

  std::string got;
  ASSERT_TRUE(WriteAll(client, "hello"));
  ASSERT_TRUE(ReadExactly(server, 5, &got));
  EXPECT_EQ(got, "hello");
  ASSERT_TRUE(WriteAll(server, "hi back!"));
  ASSERT_TRUE(ReadExactly(client, 8, &got));
  EXPECT_EQ(got, "hi back!");

  const TcpProxy::Counters counters = proxy.counters();
  EXPECT_EQ(counters.accepted, 1);
  EXPECT_EQ(counters.open, 1);
  EXPECT_EQ(counters.upstream_failures, 0);
  EXPECT_EQ(counters.to_server.bytes, 5u);
  EXPECT_EQ(counters.to_client.bytes, 8u);
  EXPECT_NE(counters.to_server.last_forwarded, absl::InfinitePast());
  // Not HTTP/2: no frames counted.
  EXPECT_EQ(counters.to_server.frames, 0);
  EXPECT_EQ(counters.to_client.frames, 0);
  close(client);
  close(server);
}

TEST(TcpProxyTest, HalfClosesAreForwardedAndClosedConnectionsCounted) {
  Upstream upstream;
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const int client = ConnectToLoopback(proxy.port());
  const int server = upstream.Accept();
  ASSERT_GE(server, 0);
  ASSERT_TRUE(WriteAll(client, "request"));
  shutdown(client, SHUT_WR);
  std::string got;
  ASSERT_TRUE(ReadExactly(server, 7, &got));
  EXPECT_TRUE(ReadsEof(server));
  // The other direction still flows.
  ASSERT_TRUE(WriteAll(server, "response"));
  ASSERT_TRUE(ReadExactly(client, 8, &got));
  EXPECT_EQ(got, "response");
  close(server);
  EXPECT_TRUE(ReadsEof(client));
  EXPECT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return c.open == 0; }, kTimeout));
  EXPECT_EQ(proxy.counters().accepted, 1);
  close(client);
}

TEST(TcpProxyTest, CountsConnections) {
  Upstream upstream;
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const int a = ConnectToLoopback(proxy.port());
  const int b = ConnectToLoopback(proxy.port());
  const int a_server = upstream.Accept();
  const int b_server = upstream.Accept();
  ASSERT_GE(a_server, 0);
  ASSERT_GE(b_server, 0);
  EXPECT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return c.accepted == 2; }, kTimeout));
  EXPECT_EQ(proxy.counters().open, 2);
  close(a);
  EXPECT_TRUE(ReadsEof(a_server));
  close(a_server);
  EXPECT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return c.open == 1; }, kTimeout));
  close(b);
  close(b_server);
  EXPECT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return c.open == 0; }, kTimeout));
  EXPECT_EQ(proxy.counters().accepted, 2);
}

TEST(TcpProxyTest, AConnectionToADeadTargetIsClosed) {
  int dead_port;
  {
    Upstream gone;  // bound and closed: nothing listens there now
    dead_port = gone.port();
  }
  TcpProxy proxy(dead_port);
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const int client = ConnectToLoopback(proxy.port());
  ASSERT_GE(client, 0);
  EXPECT_TRUE(ReadsEof(client));
  const TcpProxy::Counters counters = proxy.counters();
  EXPECT_EQ(counters.accepted, 1);
  EXPECT_EQ(counters.upstream_failures, 1);
  EXPECT_EQ(counters.open, 0);
  close(client);
}

TEST(TcpProxyTest, FreezeStopsBothDirectionsKeepingTheSocketsOpenUntilThaw) {
  Upstream upstream;
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const int client = ConnectToLoopback(proxy.port());
  const int server = upstream.Accept();
  ASSERT_GE(server, 0);
  std::string got;
  ASSERT_TRUE(WriteAll(client, "before"));
  ASSERT_TRUE(ReadExactly(server, 6, &got));

  // The server drains everything it gets, counting it.
  std::atomic<int64_t> drained{0};
  std::atomic<bool> stop{false};
  std::thread drain([&] {
    char buffer[64 << 10];
    while (!stop.load()) {
      pollfd p{server, POLLIN, 0};
      if (poll(&p, 1, 10) != 1) continue;
      const ssize_t n = recv(server, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) {
        if (n < 0 && errno == EAGAIN) continue;
        return;
      }
      drained += n;
    }
  });

  proxy.Freeze();
  const TcpProxy::Counters frozen = proxy.counters();
  // Client to server: the client's writes block once its buffer and the
  // proxy's receive buffer are full, and nothing reaches the server.
  const int64_t sent = WriteUntilBlocked(client, int64_t{256} << 20);
  ASSERT_GT(sent, 0) << "the client never blocked: the proxy kept reading";
  // Server to client (the server writes from this thread; its drain thread
  // only reads).
  const int64_t answered = WriteUntilBlocked(server, int64_t{256} << 20);
  ASSERT_GT(answered, 0) << "the server never blocked: the proxy kept reading";
  EXPECT_TRUE(NothingToRead(client));  // open, and nothing forwarded
  EXPECT_EQ(drained.load(), 0);
  const TcpProxy::Counters still = proxy.counters();
  EXPECT_EQ(still.to_server.bytes, frozen.to_server.bytes);
  EXPECT_EQ(still.to_client.bytes, frozen.to_client.bytes);
  EXPECT_EQ(still.open, 1);

  proxy.Thaw();
  // Everything that waited arrives.
  std::string answer;
  ASSERT_TRUE(ReadExactly(client, static_cast<size_t>(answered), &answer));
  EXPECT_TRUE(proxy.WaitUntil(
      [&](const TcpProxy::Counters& c) {
        return c.to_server.bytes ==
               frozen.to_server.bytes + static_cast<uint64_t>(sent);
      },
      kTimeout));
  EXPECT_TRUE(WaitFor([&] { return drained.load() >= sent; }, kTimeout));
  EXPECT_EQ(drained.load(), sent);
  stop = true;
  drain.join();
  close(client);
  close(server);
}

// True once a read on `fd` fails with ECONNRESET (within kTimeout).
bool ReadsReset(int fd) {
  const absl::Time give_up = absl::Now() + kTimeout;
  char buffer[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int64_t left = absl::ToInt64Milliseconds(give_up - absl::Now());
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) != 1) return false;
    const ssize_t got = recv(fd, buffer, sizeof(buffer), 0);
    if (got < 0) return errno == ECONNRESET;
    if (got == 0) return false;
  }
}

TEST(TcpProxyTest, ResetConnectionsSendsRstBothWaysAndKeepsAccepting) {
  Upstream upstream;
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const int client = ConnectToLoopback(proxy.port());
  const int server = upstream.Accept();
  ASSERT_GE(server, 0);
  std::string got;
  ASSERT_TRUE(WriteAll(client, "ping"));
  ASSERT_TRUE(ReadExactly(server, 4, &got));
  // Bytes the server never reads: frozen ones are dropped as well.
  proxy.Freeze();
  ASSERT_TRUE(WriteAll(client, "dropped"));

  proxy.ResetConnections();
  const TcpProxy::Counters counters = proxy.counters();
  EXPECT_EQ(counters.reset, 1);
  EXPECT_EQ(counters.open, 0);
  EXPECT_TRUE(ReadsReset(client));
  EXPECT_TRUE(ReadsReset(server));
  close(client);
  close(server);

  // Still frozen until thawed; new connections are forwarded once it is.
  proxy.Thaw();
  const int again = ConnectToLoopback(proxy.port());
  const int again_server = upstream.Accept();
  ASSERT_GE(again_server, 0);
  ASSERT_TRUE(WriteAll(again, "after"));
  ASSERT_TRUE(ReadExactly(again_server, 5, &got));
  EXPECT_EQ(got, "after");
  EXPECT_EQ(proxy.counters().accepted, 2);
  close(again);
  close(again_server);
}

TEST(TcpProxyTest, AConnectionAcceptedWhileFrozenIsFrozenToo) {
  Upstream upstream;
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  proxy.Freeze();
  const int client = ConnectToLoopback(proxy.port());
  const int server = upstream.Accept();  // connected, but nothing forwarded
  ASSERT_GE(server, 0);
  ASSERT_TRUE(WriteAll(client, "held"));
  ASSERT_TRUE(WriteAll(server, "held too"));
  EXPECT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) { return c.accepted == 1; }, kTimeout));
  EXPECT_TRUE(NothingToRead(server));
  EXPECT_TRUE(NothingToRead(client));
  proxy.Thaw();
  std::string got;
  ASSERT_TRUE(ReadExactly(server, 4, &got));
  EXPECT_EQ(got, "held");
  ASSERT_TRUE(ReadExactly(client, 8, &got));
  EXPECT_EQ(got, "held too");
  close(client);
  close(server);
}

// Sends `bytes` one at a time, each forwarded before the next is sent, so
// that the proxy sees every frame boundary split.
void SendByteByByte(int fd, absl::string_view bytes, TcpProxy& proxy,
                    bool to_server) {
  for (char c : bytes) {
    const TcpProxy::Counters before = proxy.counters();
    const uint64_t was =
        to_server ? before.to_server.bytes : before.to_client.bytes;
    ASSERT_TRUE(WriteAll(fd, absl::string_view(&c, 1)));
    ASSERT_TRUE(proxy.WaitUntil(
        [&](const TcpProxy::Counters& now) {
          return (to_server ? now.to_server.bytes : now.to_client.bytes) > was;
        },
        kTimeout));
  }
}

std::string GoAwayPayload(uint32_t last_stream_id, uint32_t error_code,
                          absl::string_view debug_data) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  return absl::StrCat(be32(last_stream_id), be32(error_code), debug_data);
}

TEST(TcpProxyTest, CountsPingsAndGoAwaysOfCleartextHttp2) {
  Upstream upstream;
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const int client = ConnectToLoopback(proxy.port());
  const int server = upstream.Accept();
  ASSERT_GE(server, 0);
  // Client: preface, SETTINGS, two PINGs, a PING ACK; server: SETTINGS,
  // SETTINGS ACK, a PING ACK, a PING, GOAWAY(3, ENHANCE_YOUR_CALM,
  // "too_many_pings").
  const std::string from_client = absl::StrCat(
      kClientPreface, EncodeFrame(0x4, 0, 0, ""),
      EncodeFrame(0x6, 0, 0, "pingping"), EncodeFrame(0x6, 0, 0, "pongpong"),
      EncodeFrame(0x6, 0x1, 0, "12345678"));
  const std::string from_server = absl::StrCat(
      EncodeFrame(0x4, 0, 0, ""), EncodeFrame(0x4, 0x1, 0, ""),
      EncodeFrame(0x6, 0x1, 0, "pingping"), EncodeFrame(0x6, 0, 0, "12345678"),
      EncodeFrame(0x7, 0, 0, GoAwayPayload(3, 0xb, "too_many_pings")));
  SendByteByByte(client, from_client, proxy, /*to_server=*/true);
  SendByteByByte(server, from_server, proxy, /*to_server=*/false);
  // And a second connection with a whole GOAWAY in one write.
  const int client2 = ConnectToLoopback(proxy.port());
  const int server2 = upstream.Accept();
  ASSERT_GE(server2, 0);
  ASSERT_TRUE(WriteAll(
      client2, absl::StrCat(kClientPreface, EncodeFrame(0x4, 0, 0, ""))));
  ASSERT_TRUE(WriteAll(
      server2, EncodeFrame(0x7, 0, 0, GoAwayPayload(0x7fffffff, 0, ""))));
  ASSERT_TRUE(proxy.WaitUntil(
      [](const TcpProxy::Counters& c) {
        return c.to_client.goaways.size() == 2 && c.to_server.frames == 5;
      },
      kTimeout));

  const TcpProxy::Counters counters = proxy.counters();
  EXPECT_EQ(counters.to_server.frames, 5);  // 4 + the second SETTINGS
  EXPECT_EQ(counters.to_server.pings, 2);
  EXPECT_EQ(counters.to_server.ping_acks, 1);
  EXPECT_TRUE(counters.to_server.goaways.empty());
  EXPECT_EQ(counters.to_client.frames, 6);
  EXPECT_EQ(counters.to_client.pings, 1);
  EXPECT_EQ(counters.to_client.ping_acks, 1);
  const TcpProxy::GoAway& calm = counters.to_client.goaways[0];
  EXPECT_EQ(calm.connection, 0);
  EXPECT_EQ(calm.last_stream_id, 3u);
  EXPECT_EQ(calm.error_code, 0xbu);
  EXPECT_EQ(calm.debug_data, "too_many_pings");
  const TcpProxy::GoAway& graceful = counters.to_client.goaways[1];
  EXPECT_EQ(graceful.connection, 1);
  EXPECT_EQ(graceful.last_stream_id, 0x7fffffffu);
  EXPECT_EQ(graceful.error_code, 0u);
  EXPECT_EQ(graceful.debug_data, "");
  close(client);
  close(server);
  close(client2);
  close(server2);
}

TEST(TcpProxyTest, AClientNotSpeakingHttp2GetsNoFramesCounted) {
  Upstream upstream;
  TcpProxy proxy(upstream.port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const int client = ConnectToLoopback(proxy.port());
  const int server = upstream.Accept();
  ASSERT_GE(server, 0);
  // Almost the preface, then not.
  const std::string hello = "PRI * HTTP/1.1\r\n\r\n";
  ASSERT_TRUE(WriteAll(client, hello));
  std::string got;
  ASSERT_TRUE(ReadExactly(server, hello.size(), &got));
  const std::string frame_like = EncodeFrame(0x6, 0, 0, "pingping");
  ASSERT_TRUE(WriteAll(server, frame_like));
  ASSERT_TRUE(ReadExactly(client, frame_like.size(), &got));
  const TcpProxy::Counters counters = proxy.counters();
  EXPECT_EQ(counters.to_server.frames, 0);
  EXPECT_EQ(counters.to_client.frames, 0);
  close(client);
  close(server);
}

}  // namespace
}  // namespace h2rpc::testing
