// An h2rpc Channel against servers that misbehave: fake servers made of
// plain sockets (closing, silent, or speaking broken HTTP/2), a real h2rpc
// server torn down mid-call, and a TCP proxy that resets the connection.
// Every call must end with a sensible status, never hang.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/fake_tcp_server.h"
#include "test/util/loopback_socket.h"
#include "test/util/notification.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/zlib_reference.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::AllocationsByRole;
using ::h2rpc::testing::FakeServer;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::ListenOnLoopback;
using ::h2rpc::testing::LocalPort;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::ParseFrames;
using ::h2rpc::testing::RawFrame;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::ThreadRole;
using ::h2rpc::testing::WriteAll;
using ::h2rpc::testing::ZlibCompress;
using ::h2rpc::testing::ZlibCompressZeros;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr char kEcho[] = "/h2rpc.test.Fault/Echo";
constexpr char kBlock[] = "/h2rpc.test.Fault/Block";
constexpr size_t kClientPrefaceSize = 24;

// Milliseconds for poll(), at least 0.
int PollMillis(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

// Closes `fd` with an RST instead of a FIN.
void CloseWithReset(int fd) {
  const linger abortive{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &abortive, sizeof(abortive));
  close(fd);
}

// Reads from `fd` into `*received` until `enough` says so, EOF, an error,
// or `timeout`. Returns whether `enough` was satisfied.
bool ReadUntil(int fd, std::string* received,
               const std::function<bool(const std::string&)>& enough,
               absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  char buffer[16 * 1024];
  while (!enough(*received)) {
    pollfd p{fd, POLLIN, 0};
    const int rv = poll(&p, 1, PollMillis(deadline));
    if (rv < 0 && errno == EINTR) continue;
    if (rv <= 0) return false;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return false;
    received->append(buffer, static_cast<size_t>(n));
  }
  return true;
}

// True once `bytes` (what a client sent) hold the preface and a HEADERS
// frame.
bool HasClientHeaders(const std::string& bytes) {
  if (bytes.size() < kClientPrefaceSize) return false;
  for (const RawFrame& frame :
       ParseFrames(absl::string_view(bytes).substr(kClientPrefaceSize))) {
    if (frame.type == 0x1) return true;
  }
  return false;
}

// An HTTP/2 frame.
std::string Frame(uint8_t type, uint8_t flags, uint32_t stream_id,
                  absl::string_view payload) {
  std::string f(9, '\0');
  const uint32_t length = static_cast<uint32_t>(payload.size());
  f[0] = static_cast<char>(length >> 16);
  f[1] = static_cast<char>(length >> 8);
  f[2] = static_cast<char>(length);
  f[3] = static_cast<char>(type);
  f[4] = static_cast<char>(flags);
  f[5] = static_cast<char>(stream_id >> 24);
  f[6] = static_cast<char>(stream_id >> 16);
  f[7] = static_cast<char>(stream_id >> 8);
  f[8] = static_cast<char>(stream_id);
  return f + std::string(payload);
}

std::string U32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

// Server preface: an empty SETTINGS frame, and an ACK of the client's.
std::string ServerPreface() {
  return Frame(0x4, 0, 0, "") + Frame(0x4, 0x1, 0, "");
}

// HPACK for ":status: 200" and "content-type: application/grpc" (static
// table index 8; literal without indexing, name index 31).
std::string GrpcResponseHeaderBlock() {
  return std::string("\x88", 1) + std::string("\x0f\x10", 2) + "\x10" +
         "application/grpc";
}

// HPACK for trailers "grpc-status: 0" (literal, new name).
std::string OkTrailerBlock() {
  return std::string("\x00\x0bgrpc-status\x01", 14) + "0";
}

// A whole OK response on `stream_id`: headers, one message, trailers.
std::string OkResponse(uint32_t stream_id, absl::string_view message = "") {
  const std::string framed =
      std::string{'\0', static_cast<char>(message.size() >> 24),
                  static_cast<char>(message.size() >> 16),
                  static_cast<char>(message.size() >> 8),
                  static_cast<char>(message.size())} +
      std::string(message);
  return Frame(0x1, 0x4 /*END_HEADERS*/, stream_id, GrpcResponseHeaderBlock()) +
         Frame(0x0, 0, stream_id, framed) +
         Frame(0x1, 0x4 | 0x1 /*END_STREAM*/, stream_id, OkTrailerBlock());
}

std::string RefuseStream(uint32_t stream_id) {
  return Frame(0x3, 0, stream_id, U32(NGHTTP2_REFUSED_STREAM));
}

// Serves one HTTP/2 connection by script: sends the server preface, then for
// the n-th request HEADERS frame the client sends (n = 0, 1, ...) writes
// `respond(stream_id, n)`. Returns after `max_requests` requests, at EOF, or
// after `idle` without input.
void ServeH2(
    int fd,
    const std::function<std::string(uint32_t stream_id, int n)>& respond,
    int max_requests = 1 << 30, absl::Duration idle = absl::Seconds(10)) {
  WriteAll(fd, ServerPreface());
  std::string received;
  size_t parsed = kClientPrefaceSize;
  int requests = 0;
  while (requests < max_requests) {
    const size_t before = received.size();
    if (!ReadUntil(
            fd, &received,
            [before](const std::string& r) { return r.size() > before; },
            idle)) {
      return;
    }
    if (received.size() < parsed) continue;
    const std::vector<RawFrame> frames =
        ParseFrames(absl::string_view(received).substr(parsed));
    for (const RawFrame& frame : frames) {
      parsed += 9 + frame.payload.size();
      if (frame.type == 0x1 && requests < max_requests) {
        WriteAll(fd, respond(frame.stream_id, requests++));
      }
    }
  }
}

// Forwards TCP connections from its own port to 127.0.0.1:upstream_port,
// until ResetAll() closes every client-side socket with an RST (SO_LINGER
// 0) and the upstream sockets with a FIN.
class ResettingProxy {
 public:
  explicit ResettingProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ListenOnLoopback(0);
    if (listen_fd_ >= 0) port_ = LocalPort(listen_fd_);
    if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { Run(); });
  }
  ~ResettingProxy() {
    Command('q');
    thread_.join();
    for (auto& [client, upstream] : pairs_) {
      close(client);
      close(upstream);
    }
    if (listen_fd_ >= 0) close(listen_fd_);
    close(wake_[0]);
    close(wake_[1]);
  }

  bool ok() const { return listen_fd_ >= 0 && wake_[0] >= 0; }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }

  // Resets every proxied connection now; returns once done.
  void ResetAll() {
    Command('r');
    reset_done_.WaitForNotificationWithTimeout(absl::Seconds(30));
  }

 private:
  void Command(char c) { (void)!write(wake_[1], &c, 1); }

  static int ConnectTo(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) !=
        0) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // Copies what is readable on `from` to `to`; false on EOF or error.
  static bool Pump(int from, int to) {
    char buffer[64 * 1024];
    const ssize_t n = recv(from, buffer, sizeof(buffer), 0);
    if (n <= 0) return false;
    WriteAll(to, absl::string_view(buffer, static_cast<size_t>(n)));
    return true;
  }

  void Run() {
    for (;;) {
      std::vector<pollfd> p = {{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (auto& [client, upstream] : pairs_) {
        p.push_back({client, POLLIN, 0});
        p.push_back({upstream, POLLIN, 0});
      }
      if (poll(p.data(), p.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (p[0].revents != 0) {
        char c = 0;
        if (read(wake_[0], &c, 1) != 1 || c == 'q') return;
        for (auto& [client, upstream] : pairs_) {
          CloseWithReset(client);
          close(upstream);
        }
        pairs_.clear();
        reset_done_.Notify();
        continue;
      }
      if (p[1].revents & POLLIN) {
        const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) {
          const int upstream = ConnectTo(upstream_port_);
          if (upstream < 0) {
            close(client);
          } else {
            pairs_.emplace_back(client, upstream);
          }
        }
        continue;
      }
      for (size_t i = 0; i < pairs_.size(); ++i) {
        const auto [client, upstream] = pairs_[i];
        const bool ok =
            (!(p[2 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) ||
             Pump(client, upstream)) &&
            (!(p[3 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) ||
             Pump(upstream, client));
        if (!ok) {
          close(client);
          close(upstream);
          pairs_.erase(pairs_.begin() + i);
          break;  // the poll set changed
        }
      }
    }
  }

  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::vector<std::pair<int, int>> pairs_;  // proxy thread, then destructor
  Notification reset_done_;
  std::thread thread_;
};

Status Echo(ServerContext*, const SimpleRequest& request,
            SimpleResponse* response) {
  response->mutable_payload()->set_body(
      request.response_size() > 0 ? std::string(request.response_size(), 'r')
                                  : request.payload().body());
  return Status();
}

// A real h2rpc server with an echo method and one that blocks until the
// call is cancelled, on `port` (0: a free one).
struct RealServer {
  explicit RealServer(int port = 0) {
    stub.builder()
        .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo)
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kBlock, [this](ServerContext* context, const SimpleRequest&,
                           SimpleResponse*) {
              started.Notify();
              const absl::Time give_up = absl::Now() + absl::Seconds(60);
              while (!context->IsCancelled() && absl::Now() < give_up) {
                absl::SleepFor(absl::Milliseconds(1));
              }
              if (context->IsCancelled()) saw_cancel.Notify();
              return Status(StatusCode::kAborted, "unblocked");
            });
    start_status = stub.ListenOn(absl::StrCat("127.0.0.1:", port)).Start();
  }
  int port() const { return stub.port(); }
  std::string target() const { return stub.target(); }

  Status start_status;
  Notification started;
  Notification saw_cancel;
  StubServer stub;  // last: destroyed first
};

Status Call(Channel* channel, absl::Duration timeout,
            const SimpleRequest& request = SimpleRequest(),
            SimpleResponse* response = nullptr) {
  SimpleResponse unused;
  ClientContext context;
  context.set_timeout(timeout);
  return channel->UnaryCall(&context, kEcho, request,
                            response != nullptr ? response : &unused);
}

ChannelOptions FastBackoff() {
  ChannelOptions options;
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(100);
  return options;
}

// Calls `channel` until a call succeeds or `timeout` passes; returns the
// last status.
Status CallUntilOk(Channel* channel, absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  Status status;
  while (absl::Now() < give_up) {
    status = Call(channel, absl::Seconds(10));
    if (status.ok()) return status;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return status;
}

// ---------------------------------------------------------------------------
// (a) The server closes the connection.

TEST(ClientFaultTest, ServerClosesAfterFirstBytesIsUnavailableNamingAddress) {
  FakeServer fake([](int fd) {
    std::string received;
    ReadUntil(
        fd, &received, [](const std::string& r) { return !r.empty(); },
        absl::Seconds(10));
    close(fd);
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(fake.target()));
}

TEST(ClientFaultTest, ServerResetsAfterClientHeadersIsUnavailable) {
  FakeServer fake([](int fd) {
    WriteAll(fd, ServerPreface());  // a client sends calls once READY
    std::string received;
    ReadUntil(fd, &received, HasClientHeaders, absl::Seconds(10));
    CloseWithReset(fd);
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(fake.target()));
}

TEST(ClientFaultTest, ServerClosesAtOnceIsUnavailable) {
  FakeServer fake([](int fd) {
    close(fd);
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(fake.target()));
}

TEST(ClientFaultTest, Http1AnswerIsAFailureNotAHang) {
  FakeServer fake([](int fd) {
    std::string received;
    ReadUntil(
        fd, &received, [](const std::string& r) { return !r.empty(); },
        absl::Seconds(10));
    WriteAll(fd,
             "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
             "Connection: close\r\n\r\n");
    close(fd);
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_THAT(status.code(),
              AnyOf(StatusCode::kUnavailable, StatusCode::kInternal))
      << status.ToString();
}

TEST(ClientFaultTest, ResponseHeadersThenCloseIsUnavailable) {
  FakeServer fake([](int fd) {
    WriteAll(fd, ServerPreface());
    std::string received;
    ReadUntil(fd, &received, HasClientHeaders, absl::Seconds(10));
    WriteAll(fd, Frame(0x1, 0x4 /*END_HEADERS*/, 1, GrpcResponseHeaderBlock()) +
                     // Half of a 100-byte message.
                     Frame(0x0, 0, 1, std::string("\0\0\0\0\x64", 5) + "half"));
    // The FIN follows the frames, so the client reads them all before the
    // end of the stream. Then read until the client closes its end: with
    // nothing left unread, close() cannot turn into an RST.
    shutdown(fd, SHUT_WR);
    ReadUntil(
        fd, &received, [](const std::string&) { return false; },
        absl::Seconds(10));
    close(fd);
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(fake.target()));
}

// ---------------------------------------------------------------------------
// Streams ended by the server without a status.

// A fake server that sends the server preface (the channel sends calls
// only once it has it), answers the first request with `frames`, then keeps
// the connection open.
std::unique_ptr<FakeServer> AnswerWith(std::string frames) {
  return std::make_unique<FakeServer>([frames](int fd) {
    WriteAll(fd, ServerPreface());
    std::string received;
    ReadUntil(fd, &received, HasClientHeaders, absl::Seconds(10));
    WriteAll(fd, frames);
    return true;
  });
}

TEST(ClientFaultTest, RefusedEveryTimeIsUnavailableAfterRetries) {
  // REFUSED_STREAM means "not processed": the channel retries transparently,
  // a bounded number of times, then fails with UNAVAILABLE.
  std::atomic<int> requests{0};
  FakeServer fake([&requests](int fd) {
    ServeH2(fd, [&requests](uint32_t stream_id, int) {
      requests.fetch_add(1);
      return RefuseStream(stream_id);
    });
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_GT(requests.load(), 1);
  EXPECT_LT(requests.load(), 10);
}

// A wait_for_ready call waits through refusals (streams the server never
// processed) as it waits through failed connection attempts: it is started
// again, after the first few at once, with the reconnect backoff between
// attempts, until one is served or its deadline passes.
TEST(ClientFaultTest, AWaitForReadyCallOutlastsRefusals) {
  std::atomic<int> requests{0};
  FakeServer fake([&requests](int fd) {
    ServeH2(fd, [&requests](uint32_t stream_id, int n) {
      requests.fetch_add(1);
      return n < 8 ? RefuseStream(stream_id) : OkResponse(stream_id);
    });
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel =
      CreateChannel(fake.target(), FastBackoff());
  ClientContext context;
  context.set_timeout(absl::Seconds(30));
  context.set_wait_for_ready(true);
  SimpleResponse response;
  const Status status =
      channel->UnaryCall(&context, kEcho, SimpleRequest(), &response);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(requests.load(), 9);
}

TEST(ClientFaultTest, AWaitForReadyCallRefusedEveryTimeEndsAtItsDeadline) {
  std::atomic<int> requests{0};
  FakeServer fake([&requests](int fd) {
    ServeH2(fd, [&requests](uint32_t stream_id, int) {
      requests.fetch_add(1);
      return RefuseStream(stream_id);
    });
    return false;
  });
  ASSERT_TRUE(fake.ok());
  // Backoff of 20 ms growing to 100 ms: about 25 attempts in 2 s.
  std::shared_ptr<Channel> channel =
      CreateChannel(fake.target(), FastBackoff());
  ClientContext context;
  context.set_timeout(absl::Seconds(2));
  context.set_wait_for_ready(true);
  SimpleResponse response;
  const Status status =
      channel->UnaryCall(&context, kEcho, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_GT(requests.load(), 5);
  EXPECT_LT(requests.load(), 60);
}

// A wait_for_ready call waiting out the backoff between two refusals ends
// with CANCELLED, its `done` run once, when it is cancelled and when its
// channel is destroyed.
TEST(ClientFaultTest, AWaitForReadyCallBetweenRefusalsEndsOnCancelOrChannel) {
  std::atomic<int> requests{0};
  FakeServer fake([&requests](int fd) {
    ServeH2(fd, [&requests](uint32_t stream_id, int) {
      requests.fetch_add(1);
      return RefuseStream(stream_id);
    });
    return false;
  });
  ASSERT_TRUE(fake.ok());
  ChannelOptions options;
  options.initial_backoff = absl::Seconds(60);
  options.max_backoff = absl::Seconds(60);
  for (const bool cancel : {true, false}) {
    SCOPED_TRACE(cancel ? "cancelled" : "channel destroyed");
    requests.store(0);
    ClientContext context;
    context.set_timeout(absl::Seconds(120));
    context.set_wait_for_ready(true);
    SimpleResponse response;
    Notification done;
    std::atomic<int> done_runs{0};
    Status status;
    std::shared_ptr<Channel> channel = CreateChannel(fake.target(), options);
    channel->AsyncUnaryCall(&context, kEcho, SimpleRequest(), &response,
                            [&](const Status& s) {
                              if (done_runs.fetch_add(1) == 0) status = s;
                              done.Notify();
                            });
    // The first try and 3 at once; the next after 60 s.
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (requests.load() < 4 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_EQ(requests.load(), 4);
    if (cancel) {
      context.TryCancel();
      ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    }
    channel.reset();
    EXPECT_TRUE(done.HasBeenNotified());
    EXPECT_EQ(done_runs.load(), 1);
    EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
    EXPECT_EQ(requests.load(), 4);
  }
}

TEST(ClientFaultTest, RefusedStreamIsRetriedTransparently) {
  FakeServer fake([](int fd) {
    ServeH2(fd, [](uint32_t stream_id, int n) {
      return n == 0 ? RefuseStream(stream_id) : OkResponse(stream_id);
    });
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// A TryCancel() whose cancel task runs while a refused stream's transparent
// retry is on its way (stream detached, restart posted) ends the call
// CANCELLED, and the retry never goes out. The test gets there by cancelling
// call A from call B's completion callback while the same read carries B's
// response and A's RST_STREAM(REFUSED_STREAM).
TEST(ClientFaultTest, CancelDuringTransparentRetryIsNotLost) {
  std::mutex mu;
  uint32_t stream_a = 0;  // guarded by mu
  std::atomic<int> requests{0};
  FakeServer fake([&](int fd) {
    ServeH2(fd, [&](uint32_t stream_id, int n) -> std::string {
      requests.fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      switch (n) {
        case 0:  // warm-up call
          return OkResponse(stream_id);
        case 1:  // call A: hold it
          stream_a = stream_id;
          return "";
        case 2:  // call B: answer it, and refuse A in the same write
          return OkResponse(stream_id) + RefuseStream(stream_a);
        default:  // A's retry, if it happens
          return OkResponse(stream_id);
      }
    });
    return false;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  ASSERT_TRUE(Call(channel.get(), absl::Seconds(30)).ok());

  ClientContext context_a;
  context_a.set_timeout(absl::Seconds(30));
  SimpleResponse response_a;
  Notification done_a;
  Status status_a;
  channel->AsyncUnaryCall(&context_a, kEcho, SimpleRequest(), &response_a,
                          [&](const Status& status) {
                            status_a = status;
                            done_a.Notify();
                          });
  // B starts once the server has seen A.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (requests.load() < 2 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(requests.load(), 2) << "the server never saw call A";
  ClientContext context_b;
  context_b.set_timeout(absl::Seconds(30));
  SimpleResponse response_b;
  Notification done_b;
  channel->AsyncUnaryCall(&context_b, kEcho, SimpleRequest(), &response_b,
                          [&](const Status&) {
                            context_a.TryCancel();
                            done_b.Notify();
                          });
  ASSERT_TRUE(done_b.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(done_a.WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_EQ(status_a.code(), StatusCode::kCancelled)
      << status_a.ToString()
      << " (requests seen by the server: " << requests.load() << ")";
}

TEST(ClientFaultTest, RstStreamNoErrorBeforeStatusIsInternal) {
  auto fake = AnswerWith(Frame(0x3, 0, 1, U32(NGHTTP2_NO_ERROR)));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
}

TEST(ClientFaultTest, GoAwayBeforeTheStreamIsUnavailable) {
  // GOAWAY(last stream 0): stream 1 was never processed.
  auto fake = AnswerWith(Frame(0x7, 0, 0, U32(0) + U32(NGHTTP2_NO_ERROR)));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
}

TEST(ClientFaultTest, DataWithoutTrailersIsInternal) {
  // A whole message, then END_STREAM on DATA: no trailers, no status.
  auto fake = AnswerWith(
      Frame(0x1, 0x4, 1, GrpcResponseHeaderBlock()) +
      Frame(0x0, 0x1 /*END_STREAM*/, 1, std::string("\0\0\0\0\0", 5)));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
}

TEST(ClientFaultTest, MaxConcurrentStreamsZeroHitsTheDeadlineNotAHang) {
  // SETTINGS_MAX_CONCURRENT_STREAMS = 0: no stream may open; calls wait for
  // a slot until their deadline.
  FakeServer fake([](int fd) {
    WriteAll(fd, Frame(0x4, 0, 0, std::string("\0\x03", 2) + U32(0)));
    std::string received;
    ReadUntil(
        fd, &received,
        [](const std::string& r) { return r.size() >= kClientPrefaceSize; },
        absl::Seconds(10));
    WriteAll(fd, Frame(0x4, 0x1, 0, ""));
    return true;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  for (int i = 0; i < 3; ++i) {
    const Status status = Call(channel.get(), absl::Milliseconds(300));
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded)
        << i << ": " << status.ToString();
  }
}

TEST(ClientFaultTest, AfterGoAwayTheNextCallUsesANewConnection) {
  // Each connection answers one call, then says GOAWAY (last stream: that
  // call's) and stays open.
  FakeServer fake([](int fd) {
    ServeH2(
        fd,
        [](uint32_t stream_id, int) {
          return OkResponse(stream_id) +
                 Frame(0x7, 0, 0, U32(stream_id) + U32(NGHTTP2_NO_ERROR));
        },
        /*max_requests=*/1);
    return true;
  });
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel =
      CreateChannel(fake.target(), FastBackoff());
  for (int i = 0; i < 3; ++i) {
    const Status status = Call(channel.get(), absl::Seconds(30));
    EXPECT_TRUE(status.ok()) << i << ": " << status.ToString();
  }
  EXPECT_EQ(fake.accepted(), 3);
}

// HPACK for response headers that decode to far more than the client's
// advertised SETTINGS_MAX_HEADER_LIST_SIZE (16 KiB): ":status 200",
// content-type, one 4000-byte field added to the dynamic table, then
// `refs` one-byte references to it.
std::string AmplifiedResponseHeaderBlock(int refs) {
  std::string block = GrpcResponseHeaderBlock();
  block += std::string("\x40\x05x-amp\x7f\xa1\x1e", 10);  // 4000 = 127+3873
  block += std::string(4000, 'A');
  block += std::string(refs, '\xbe');  // indexed: dynamic entry 62
  return block;
}

// The client bounds the decoded size of a response header block by its
// advertised SETTINGS_MAX_HEADER_LIST_SIZE (16 KiB): a server's single 16 KiB
// HEADERS frame that HPACK-decodes to ~48 MB (a 4000-byte dynamic table entry
// referenced 12000 times) fails the call with RESOURCE_EXHAUSTED without the
// block being buffered.
TEST(ClientFaultTest, HpackAmplifiedResponseHeadersAreRefused) {
  const std::string block = AmplifiedResponseHeaderBlock(12000);
  ASSERT_LE(block.size(), 16384u);
  auto fake = AnswerWith(Frame(0x1, 0x4 /*END_HEADERS*/, 1, block));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  ::h2rpc::testing::ResetPeakLiveHeapBytes();
  const int64_t live_before = ::h2rpc::testing::LiveHeapBytes();
  ClientContext context;
  context.set_timeout(absl::Seconds(2));
  SimpleResponse response;
  const Status status =
      channel->UnaryCall(&context, kEcho, SimpleRequest(), &response);
  const int64_t peak_growth =
      ::h2rpc::testing::PeakLiveHeapBytes() - live_before;
  EXPECT_THAT(status.code(),
              AnyOf(StatusCode::kResourceExhausted, StatusCode::kInternal))
      << status.ToString();
  EXPECT_LT(peak_growth, 4 << 20);
  EXPECT_LT(context.GetServerInitialMetadata().byte_size(), 16384u);
}

// ---------------------------------------------------------------------------
// (b) The server never answers.

TEST(ClientFaultTest, SilentServerHitsTheDeadline) {
  FakeServer fake([](int fd) { return true; });  // accept, never read
  ASSERT_TRUE(fake.ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake.target());
  const absl::Time start = absl::Now();
  const Status status = Call(channel.get(), absl::Milliseconds(300));
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
}

TEST(ClientFaultTest, Http2ServerThatNeverRespondsHitsTheDeadline) {
  auto fake = AnswerWith("");  // SETTINGS, then nothing for the stream
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  const Status status = Call(channel.get(), absl::Milliseconds(300));
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  // The channel still works for the next call (same outcome, no hang).
  EXPECT_EQ(Call(channel.get(), absl::Milliseconds(300)).code(),
            StatusCode::kDeadlineExceeded);
}

TEST(ClientFaultTest, DestroyingTheChannelEndsACallToASilentServer) {
  Notification headers_seen;
  FakeServer fake([&headers_seen](int fd) {
    WriteAll(fd, ServerPreface());
    std::string received;
    if (ReadUntil(fd, &received, HasClientHeaders, absl::Seconds(10))) {
      headers_seen.Notify();
    }
    return true;  // and never answers
  });
  ASSERT_TRUE(fake.ok());
  auto channel = CreateChannel(fake.target());
  ClientContext context;  // no deadline
  SimpleResponse response;
  Notification done;
  Status result;
  channel->AsyncUnaryCall(&context, kEcho, SimpleRequest(), &response,
                          [&](const Status& status) {
                            result = status;
                            done.Notify();
                          });
  // The call is on the wire: its stream is open when the channel goes.
  ASSERT_TRUE(headers_seen.WaitForNotificationWithTimeout(absl::Seconds(30)));
  channel.reset();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(result.code(), StatusCode::kCancelled) << result.ToString();
}

// ---------------------------------------------------------------------------
// (c) A real server goes away mid-call.

TEST(ClientFaultTest, ServerShutdownNowDuringACall) {
  RealServer real;
  ASSERT_TRUE(real.start_status.ok()) << real.start_status.ToString();
  std::shared_ptr<Channel> channel = CreateChannel(real.target());
  ClientContext context;
  context.set_timeout(absl::Seconds(60));
  SimpleResponse response;
  Notification done;
  Status result;
  channel->AsyncUnaryCall(&context, kBlock, SimpleRequest(), &response,
                          [&](const Status& status) {
                            result = status;
                            done.Notify();
                          });
  ASSERT_TRUE(real.started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // Cancels the handler, closes the sockets.
  real.stub.server().Shutdown(absl::Now());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_THAT(result.code(),
              AnyOf(StatusCode::kUnavailable, StatusCode::kCancelled))
      << result.ToString();
  EXPECT_TRUE(real.saw_cancel.HasBeenNotified());
}

TEST(ClientFaultTest, ConnectionResetDuringACall) {
  RealServer real;
  ASSERT_TRUE(real.start_status.ok()) << real.start_status.ToString();
  ResettingProxy proxy(real.port());
  ASSERT_TRUE(proxy.ok());
  std::shared_ptr<Channel> channel = CreateChannel(proxy.target());
  ClientContext context;
  context.set_timeout(absl::Seconds(60));
  SimpleResponse response;
  Notification done;
  Status result;
  channel->AsyncUnaryCall(&context, kBlock, SimpleRequest(), &response,
                          [&](const Status& status) {
                            result = status;
                            done.Notify();
                          });
  ASSERT_TRUE(real.started.WaitForNotificationWithTimeout(absl::Seconds(30)));
  proxy.ResetAll();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_THAT(result.code(),
              AnyOf(StatusCode::kUnavailable, StatusCode::kCancelled))
      << result.ToString();
  EXPECT_THAT(result.message(), HasSubstr(proxy.target()));
  // The server notices the lost connection too.
  EXPECT_TRUE(
      real.saw_cancel.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

// ---------------------------------------------------------------------------
// (d) Reconnecting.

TEST(ClientFaultTest, ReconnectsToAServerBackOnTheSamePort) {
  auto first = std::make_unique<RealServer>();
  ASSERT_TRUE(first->start_status.ok()) << first->start_status.ToString();
  const int port = first->port();
  std::shared_ptr<Channel> channel =
      CreateChannel(first->target(), FastBackoff());
  ASSERT_TRUE(Call(channel.get(), absl::Seconds(30)).ok());

  first.reset();
  // Nobody listens now: calls fail, quickly.
  const Status down = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(down.code(), StatusCode::kUnavailable) << down.ToString();

  RealServer second(port);
  ASSERT_TRUE(second.start_status.ok()) << second.start_status.ToString();
  ASSERT_EQ(second.port(), port);
  const Status up = CallUntilOk(channel.get(), absl::Seconds(30));
  EXPECT_TRUE(up.ok()) << up.ToString();
}

TEST(ClientFaultTest, ReconnectsAfterAFakeServerFailure) {
  auto fake = std::make_unique<FakeServer>([](int fd) {
    close(fd);
    return false;
  });
  ASSERT_TRUE(fake->ok());
  const int port = fake->port();
  std::shared_ptr<Channel> channel =
      CreateChannel(fake->target(), FastBackoff());
  const Status failed = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed.ToString();
  fake.reset();

  RealServer real(port);
  ASSERT_TRUE(real.start_status.ok()) << real.start_status.ToString();
  const Status up = CallUntilOk(channel.get(), absl::Seconds(30));
  EXPECT_TRUE(up.ok()) << up.ToString();
}

TEST(ClientFaultTest, ReconnectsAfterConnectionRefused) {
  // A port with nothing behind it.
  int port = 0;
  {
    RealServer probe;
    ASSERT_TRUE(probe.start_status.ok());
    port = probe.port();
  }
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("127.0.0.1:", port), FastBackoff());
  const Status refused = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
  RealServer real(port);
  ASSERT_TRUE(real.start_status.ok()) << real.start_status.ToString();
  const Status up = CallUntilOk(channel.get(), absl::Seconds(30));
  EXPECT_TRUE(up.ok()) << up.ToString();
}

// ---------------------------------------------------------------------------
// (e) Response size limit.

TEST(ClientFaultTest, ResponseOverReceiveLimitIsResourceExhausted) {
  RealServer real;
  ASSERT_TRUE(real.start_status.ok()) << real.start_status.ToString();
  ChannelOptions options;
  options.connection.max_receive_message_size = 1024;
  std::shared_ptr<Channel> channel = CreateChannel(real.target(), options);
  SimpleRequest request;
  request.set_response_size(4096);
  const Status status = Call(channel.get(), absl::Seconds(30), request);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("1024"));
  // Small responses still get through on the same channel.
  request.set_response_size(100);
  SimpleResponse response;
  const Status small =
      Call(channel.get(), absl::Seconds(30), request, &response);
  EXPECT_TRUE(small.ok()) << small.ToString();
  EXPECT_EQ(response.payload().body().size(), 100u);
}

// ---------------------------------------------------------------------------
// (f) Compressed responses.

// HPACK for "grpc-encoding: <value>" (literal without indexing, new name).
std::string GrpcEncodingField(absl::string_view value) {
  return std::string("\x00\x0dgrpc-encoding", 15) +
         static_cast<char>(value.size()) + std::string(value);
}

// A response on stream 1: headers plus `extra_headers` (HPACK), one message
// flagged `flag` in DATA frames of at most 16 KiB, then OK trailers.
std::string ResponseWith(absl::string_view extra_headers, uint8_t flag,
                         absl::string_view message) {
  const std::string framed = GrpcFrame(message, flag);
  std::string out =
      Frame(0x1, 0x4 /*END_HEADERS*/, 1,
            GrpcResponseHeaderBlock() + std::string(extra_headers));
  for (size_t i = 0; i < framed.size(); i += 16384) {
    out += Frame(0x0, 0, 1, absl::string_view(framed).substr(i, 16384));
  }
  return out + Frame(0x1, 0x4 | 0x1 /*END_STREAM*/, 1, OkTrailerBlock());
}

std::string SerializedResponse(absl::string_view body) {
  SimpleResponse response;
  response.mutable_payload()->set_body(std::string(body));
  return response.SerializeAsString();
}

TEST(ClientFaultTest, GzipResponseFromAnotherPeerIsInflated) {
  auto fake = AnswerWith(
      ResponseWith(GrpcEncodingField("gzip"), 1,
                   ZlibCompress(SerializedResponse(std::string(50000, 'z')),
                                /*gzip=*/true)));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  ClientContext context;
  context.set_timeout(absl::Seconds(30));
  SimpleResponse response;
  const Status status =
      channel->UnaryCall(&context, kEcho, SimpleRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.payload().body(), std::string(50000, 'z'));
  EXPECT_TRUE(context.last_message_compressed());
}

TEST(ClientFaultTest, ResponseInAnEncodingTheClientDoesNotAcceptIsInternal) {
  auto fake = AnswerWith(ResponseWith(GrpcEncodingField("br"), 1, "??"));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("'br'"));
}

TEST(ClientFaultTest, GzipResponseToAClientThatRefusesGzipIsInternal) {
  auto fake = AnswerWith(ResponseWith(GrpcEncodingField("gzip"), 1,
                                      ZlibCompress("abc", /*gzip=*/true)));
  ASSERT_TRUE(fake->ok());
  ChannelOptions options;
  options.connection.accepted_compression.Remove(CompressionAlgorithm::kGzip);
  std::shared_ptr<Channel> channel = CreateChannel(fake->target(), options);
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("'gzip'"));
}

TEST(ClientFaultTest, CompressedFlagWithoutEncodingIsInternal) {
  auto fake = AnswerWith(ResponseWith("", 1, ZlibCompress("abc", true)));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  const Status status = Call(channel.get(), absl::Seconds(30));
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
}

TEST(ClientFaultTest, ResponseBombStopsAtTheReceiveLimit) {
  // 64 MiB of zeros in about 64 KiB; the client's limit is 4 MiB.
  const std::string bomb = ZlibCompressZeros(64 << 20, /*gzip=*/true);
  auto fake = AnswerWith(ResponseWith(GrpcEncodingField("gzip"), 1, bomb));
  ASSERT_TRUE(fake->ok());
  std::shared_ptr<Channel> channel = CreateChannel(fake->target());
  const int64_t before = AllocationsByRole(ThreadRole::kClient).bytes;
  const Status status = Call(channel.get(), absl::Seconds(30));
  const int64_t allocated =
      AllocationsByRole(ThreadRole::kClient).bytes - before;
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("4194304"));
  // The limit, plus the connection's own setup and buffers; inflating the
  // whole bomb would take 64 MiB.
  EXPECT_LE(allocated, int64_t{5} << 20);
}

}  // namespace
}  // namespace h2rpc
