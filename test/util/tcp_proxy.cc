#include "test/util/tcp_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

namespace h2rpc::testing {
namespace {

constexpr absl::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr uint8_t kPingType = 0x6;
constexpr uint8_t kGoAwayType = 0x7;
constexpr uint8_t kAckFlag = 0x1;
constexpr size_t kFrameHeaderSize = 9;
// The most of a GOAWAY's debug data kept.
constexpr size_t kMaxDebugData = 1024;
// Bytes read from a socket at a time, and held per direction.
constexpr size_t kChunk = 64 << 10;

uint32_t ReadUint32(absl::string_view bytes) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(bytes[0])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(bytes[1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(bytes[2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[3]));
}

// Splits one direction's bytes into HTTP/2 frames and counts them in a Flow.
class FrameCounter {
 public:
  // `expect_preface`: the bytes start with the client's connection preface.
  explicit FrameCounter(bool expect_preface)
      : state_(expect_preface ? State::kPreface : State::kHeader) {}

  // Stops counting for good (not HTTP/2).
  void Disable() { state_ = State::kOff; }
  bool disabled() const { return state_ == State::kOff; }

  // `bytes` were forwarded on connection `connection`.
  void Feed(absl::string_view bytes, int connection, TcpProxy::Flow* flow) {
    while (!bytes.empty() && state_ != State::kOff) {
      switch (state_) {
        case State::kPreface: {
          const size_t n =
              std::min(bytes.size(), kClientPreface.size() - preface_seen_);
          if (bytes.substr(0, n) != kClientPreface.substr(preface_seen_, n)) {
            state_ = State::kOff;
            return;
          }
          preface_seen_ += n;
          bytes.remove_prefix(n);
          if (preface_seen_ == kClientPreface.size()) state_ = State::kHeader;
          break;
        }
        case State::kHeader: {
          const size_t n =
              std::min(bytes.size(), kFrameHeaderSize - header_.size());
          header_.append(bytes.data(), n);
          bytes.remove_prefix(n);
          if (header_.size() == kFrameHeaderSize) StartFrame(connection, flow);
          break;
        }
        case State::kPayload: {
          const size_t n = std::min<size_t>(bytes.size(), payload_left_);
          if (type_ == kGoAwayType) {
            payload_.append(
                bytes.data(),
                std::min(n, 8 + kMaxDebugData -
                                std::min(payload_.size(), 8 + kMaxDebugData)));
          }
          payload_left_ -= n;
          bytes.remove_prefix(n);
          if (payload_left_ == 0) EndFrame(connection, flow);
          break;
        }
        case State::kOff:
          return;
      }
    }
  }

 private:
  enum class State { kPreface, kHeader, kPayload, kOff };

  void StartFrame(int connection, TcpProxy::Flow* flow) {
    payload_left_ =
        (static_cast<uint32_t>(static_cast<uint8_t>(header_[0])) << 16) |
        (static_cast<uint32_t>(static_cast<uint8_t>(header_[1])) << 8) |
        static_cast<uint32_t>(static_cast<uint8_t>(header_[2]));
    type_ = static_cast<uint8_t>(header_[3]);
    const uint8_t flags = static_cast<uint8_t>(header_[4]);
    header_.clear();
    payload_.clear();
    ++flow->frames;
    if (type_ == kPingType) {
      if (flags & kAckFlag) {
        ++flow->ping_acks;
      } else {
        ++flow->pings;
      }
    }
    state_ = State::kPayload;
    if (payload_left_ == 0) EndFrame(connection, flow);
  }

  void EndFrame(int connection, TcpProxy::Flow* flow) {
    if (type_ == kGoAwayType && payload_.size() >= 8) {
      TcpProxy::GoAway goaway;
      goaway.connection = connection;
      goaway.last_stream_id = ReadUint32(payload_) & 0x7fffffffu;
      goaway.error_code = ReadUint32(absl::string_view(payload_).substr(4));
      goaway.debug_data = payload_.substr(8);
      flow->goaways.push_back(std::move(goaway));
    }
    payload_.clear();
    state_ = State::kHeader;
  }

  State state_;
  size_t preface_seen_ = 0;
  std::string header_;
  uint32_t payload_left_ = 0;
  uint8_t type_ = 0;
  std::string payload_;  // a GOAWAY's, up to kMaxDebugData of debug data
};

void SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A blocking connect to 127.0.0.1:port; -1 on failure.
int ConnectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const sockaddr_in addr = Loopback(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// One direction of a connection: `from` is read into `buffer`, which is
// written to `to`; nothing more is read until it has all been written.
struct Pipe {
  Pipe(int from_fd, int to_fd, bool expect_preface)
      : from(from_fd), to(to_fd), counter(expect_preface) {}

  bool has_output() const { return offset < buffer.size(); }
  bool wants_input() const { return !has_output() && !eof; }
  bool done() const { return shut; }

  int from;
  int to;
  std::string buffer;
  size_t offset = 0;  // buffer[offset..] is still to be written
  bool eof = false;   // `from` reached its end
  bool shut = false;  // `to` was shut down for writing after the end
  FrameCounter counter;
};

}  // namespace

struct TcpProxy::Connection {
  Connection(int index_, int client_fd_, int upstream_fd_)
      : index(index_),
        client_fd(client_fd_),
        upstream_fd(upstream_fd_),
        to_server(client_fd_, upstream_fd_, /*expect_preface=*/true),
        to_client(upstream_fd_, client_fd_, /*expect_preface=*/false) {}
  ~Connection() {
    close(client_fd);
    close(upstream_fd);
  }
  // Makes the closes of the destructor send an RST instead of a FIN.
  void AbortOnClose() {
    const linger abort = {1, 0};
    setsockopt(client_fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
    setsockopt(upstream_fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
  }

  const int index;
  const int client_fd;
  const int upstream_fd;
  Pipe to_server;
  Pipe to_client;
};

namespace {

// Moves what `pipe`'s sockets allow, counting it in `flow`; false on a
// socket error (the connection is over). `other` is the connection's other
// direction.
bool Pump(Pipe& pipe, Pipe& other, int connection, TcpProxy::Flow* flow) {
  // Bounded, so that one busy connection does not starve the others.
  for (int round = 0; round < 16; ++round) {
    if (pipe.has_output()) {
      const ssize_t n =
          send(pipe.to, pipe.buffer.data() + pipe.offset,
               pipe.buffer.size() - pipe.offset, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
          return true;
        }
        return false;
      }
      const absl::string_view written(pipe.buffer.data() + pipe.offset,
                                      static_cast<size_t>(n));
      pipe.offset += static_cast<size_t>(n);
      flow->bytes += static_cast<uint64_t>(n);
      flow->last_forwarded = absl::Now();
      pipe.counter.Feed(written, connection, flow);
      // A client that does not speak HTTP/2 makes both directions opaque.
      if (pipe.counter.disabled()) other.counter.Disable();
      if (pipe.has_output()) continue;
      pipe.buffer.clear();
      pipe.offset = 0;
    }
    if (pipe.eof) {
      if (!pipe.shut) {
        shutdown(pipe.to, SHUT_WR);
        pipe.shut = true;
      }
      return true;
    }
    pipe.buffer.resize(kChunk);
    const ssize_t n = recv(pipe.from, pipe.buffer.data(), kChunk, MSG_DONTWAIT);
    if (n < 0) {
      pipe.buffer.clear();
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return true;
      }
      return false;
    }
    pipe.buffer.resize(static_cast<size_t>(n));
    if (n == 0) pipe.eof = true;
  }
  return true;
}

}  // namespace

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    error_ = absl::StrCat("socket: ", strerror(errno));
    return;
  }
  const sockaddr_in addr = Loopback(0);
  if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr),
           sizeof(addr)) != 0 ||
      listen(listen_fd_, 128) != 0) {
    error_ = absl::StrCat("bind/listen: ", strerror(errno));
    return;
  }
  sockaddr_in bound{};
  socklen_t length = sizeof(bound);
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length) !=
      0) {
    error_ = absl::StrCat("getsockname: ", strerror(errno));
    return;
  }
  port_ = ntohs(bound.sin_port);
  SetNonBlocking(listen_fd_);
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    wake_[0] = wake_[1] = -1;
    error_ = absl::StrCat("pipe2: ", strerror(errno));
    return;
  }
  thread_ = std::thread([this] { Run(); });
}

TcpProxy::~TcpProxy() {
  if (thread_.joinable()) {
    {
      MutexLock lock(&mu_);
      quit_ = true;
    }
    Wake();
    thread_.join();
  }
  for (Connection* connection : connections_) delete connection;
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_[0] >= 0) close(wake_[0]);
  if (wake_[1] >= 0) close(wake_[1]);
}

namespace {

std::string FlowString(const TcpProxy::Flow& flow) {
  std::string out =
      absl::StrCat(flow.bytes, " bytes, ", flow.frames, " frames, ", flow.pings,
                   " PINGs, ", flow.ping_acks, " PING ACKs, GOAWAYs [");
  for (const TcpProxy::GoAway& goaway : flow.goaways) {
    absl::StrAppend(&out, "{connection ", goaway.connection, ", last stream ",
                    goaway.last_stream_id, ", error ", goaway.error_code,
                    ", \"", absl::CHexEscape(goaway.debug_data), "\"}");
  }
  return absl::StrCat(out, "]");
}

}  // namespace

std::string TcpProxy::Counters::ToString() const {
  return absl::StrCat(accepted, " connections accepted, ", open, " open, ",
                      upstream_failures, " upstream failures, ", reset,
                      " reset; to the server: ", FlowString(to_server),
                      "; to the client: ", FlowString(to_client));
}

std::string TcpProxy::target() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void TcpProxy::Freeze() {
  {
    MutexLock lock(&mu_);
    frozen_ = true;
  }
  // Every byte moves under mu_ after a look at frozen_, so none moves from
  // here on; the wake only takes the sockets out of the poll set.
  Wake();
}

void TcpProxy::Thaw() {
  {
    MutexLock lock(&mu_);
    frozen_ = false;
  }
  Wake();
}

void TcpProxy::ResetConnections() {
  MutexLock lock(&mu_);
  const int64_t ticket = ++resets_asked_;
  Wake();
  while (resets_done_ < ticket && !quit_) changed_.Wait(&mu_);
}

void TcpProxy::ResetIfAsked() {
  if (resets_done_ == resets_asked_) return;
  for (Connection* connection : connections_) {
    connection->AbortOnClose();
    delete connection;
  }
  counters_.reset += static_cast<int>(connections_.size());
  counters_.open -= static_cast<int>(connections_.size());
  connections_.clear();
  resets_done_ = resets_asked_;
  changed_.SignalAll();
}

TcpProxy::Counters TcpProxy::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

bool TcpProxy::WaitUntil(absl::FunctionRef<bool(const Counters&)> condition,
                         absl::Duration timeout) const {
  const absl::Time give_up = absl::Now() + timeout;
  MutexLock lock(&mu_);
  while (!condition(counters_)) {
    const absl::Duration left = give_up - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    changed_.WaitWithTimeout(&mu_, left);
  }
  return true;
}

void TcpProxy::Wake() {
  const char c = 'w';
  // A full pipe already holds a wake-up.
  (void)!write(wake_[1], &c, 1);
}

void TcpProxy::Accept() {
  for (;;) {
    const int client =
        accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) return;  // EAGAIN, or an error the next poll retries
    const int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const int upstream = ConnectTo(target_port_);
    MutexLock lock(&mu_);
    const int index = counters_.accepted++;
    if (upstream < 0) {
      ++counters_.upstream_failures;
      close(client);
    } else {
      SetNonBlocking(upstream);
      connections_.push_back(new Connection(index, client, upstream));
      ++counters_.open;
    }
    changed_.SignalAll();
  }
}

bool TcpProxy::Service(Connection& connection) {
  const bool ok = Pump(connection.to_server, connection.to_client,
                       connection.index, &counters_.to_server) &&
                  Pump(connection.to_client, connection.to_server,
                       connection.index, &counters_.to_client);
  return ok && !(connection.to_server.done() && connection.to_client.done());
}

void TcpProxy::Run() {
  std::vector<pollfd> fds;
  for (;;) {
    bool frozen;
    {
      MutexLock lock(&mu_);
      if (quit_) return;
      frozen = frozen_;
    }
    fds.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    if (!frozen) {
      for (const Connection* c : connections_) {
        // Only sockets with something to do: a socket polled for nothing
        // may still report POLLHUP at every call.
        const short client_events =
            static_cast<short>((c->to_server.wants_input() ? POLLIN : 0) |
                               (c->to_client.has_output() ? POLLOUT : 0));
        const short upstream_events =
            static_cast<short>((c->to_client.wants_input() ? POLLIN : 0) |
                               (c->to_server.has_output() ? POLLOUT : 0));
        if (client_events != 0) fds.push_back({c->client_fd, client_events, 0});
        if (upstream_events != 0) {
          fds.push_back({c->upstream_fd, upstream_events, 0});
        }
      }
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      char drain[64];
      while (read(wake_[0], drain, sizeof(drain)) > 0) {
      }
    }
    if (fds[1].revents != 0) Accept();
    MutexLock lock(&mu_);
    ResetIfAsked();
    if (frozen_ || frozen) continue;
    // Every connection gets a turn: reads and writes that are not ready
    // return EAGAIN at no cost.
    bool changed = false;
    for (size_t i = 0; i < connections_.size();) {
      Connection* connection = connections_[i];
      const uint64_t before =
          counters_.to_server.bytes + counters_.to_client.bytes;
      if (Service(*connection)) {
        changed |=
            counters_.to_server.bytes + counters_.to_client.bytes != before;
        ++i;
        continue;
      }
      delete connection;
      connections_.erase(connections_.begin() + static_cast<long>(i));
      --counters_.open;
      changed = true;
    }
    if (changed) changed_.SignalAll();
  }
}

}  // namespace h2rpc::testing
