// delay_relay: a TCP relay on loopback that plays a wide-area path between a
// benchmark client and server. Every connection accepted on
// 127.0.0.1:--port is relayed to 127.0.0.1:--target_port through two
// DelayLines (one per direction): each byte leaves --delay after it arrived
// (plus up to --jitter, never reordered), after a link of --rate_mbit has
// carried it (0: no cap). Without a cap the relay reads whatever arrives,
// so only the endpoints' flow control limits a stream; with a cap it holds at
// most the path's bandwidth-delay product plus 10 ms of queue per direction
// and then stops reading, as a router with a short buffer does.
//
// Prints "delay_relay: listening on 127.0.0.1:P" once it accepts, then runs
// until killed. One thread, poll()-driven; traffic goes only to 127.0.0.1.
//
//   delay_relay --target_port=5000 --delay=25ms [--rate_mbit=100]

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <memory>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/delay_line.h"
#include "benchmark/frame_tracer.h"
#include "test/util/loopback_socket.h"

ABSL_FLAG(int, port, 0, "Port to listen on, on 127.0.0.1 (0: any).");
ABSL_FLAG(int, target_port, 0, "Port of the server on 127.0.0.1.");
ABSL_FLAG(absl::Duration, delay, absl::ZeroDuration(),
          "One-way delay, applied in each direction.");
ABSL_FLAG(absl::Duration, jitter, absl::ZeroDuration(),
          "Extra one-way delay per piece, uniform in [0, jitter].");
ABSL_FLAG(double, rate_mbit, 0,
          "Link rate in each direction, in megabits per second (0: no cap).");
ABSL_FLAG(bool, trace_frames, false,
          "Prints every HTTP/2 frame header the relay reads to stderr: "
          "milliseconds since start, connection, direction, frame.");

namespace h2rpc::benchmark {
namespace {

constexpr size_t kReadSize = 256 << 10;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "delay_relay: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void SetNonBlockingNoDelay(int fd) {
  const int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
    Die("socket options");
  }
}

// One direction of a relayed connection.
struct Pipe {
  Pipe(int from, int to, const DelayLine::Options& options, bool up)
      : from(from), to(to), line(options), tracer(up), up(up) {}

  int from;
  int to;
  DelayLine line;
  FrameTracer tracer;        // with --trace_frames
  const bool up;             // client to server
  bool read_ended = false;   // `from` gave EOF; the end is in `line`
  bool write_ended = false;  // the end left: `to` is shut for writing
  bool write_blocked = false;
};

struct Connection {
  Connection(int client, int server, const DelayLine::Options& options,
             int number)
      : up(client, server, options, true),
        down(server, client, options, false),
        number(number) {}
  ~Connection() {
    close(up.from);
    close(up.to);
  }

  Pipe up;
  Pipe down;
  const int number;  // in accept order, from 1
  bool failed = false;
};

class Relay {
 public:
  Relay(int target_port, const DelayLine::Options& options, bool trace)
      : target_port_(target_port), options_(options), trace_(trace) {
    const double delay_seconds = absl::ToDoubleSeconds(options.delay);
    max_queued_ = options.bytes_per_second > 0
                      ? static_cast<size_t>(options.bytes_per_second *
                                            (delay_seconds + 0.010)) +
                            kReadSize
                      : size_t{1} << 30;
  }

  int Listen(int port) {
    listener_ = testing::ListenOnLoopback(port);
    if (listener_ < 0 || fcntl(listener_, F_SETFL,
                               fcntl(listener_, F_GETFL) | O_NONBLOCK) != 0) {
      Die("listen");
    }
    return testing::LocalPort(listener_);
  }

  [[noreturn]] void Run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({listener_, POLLIN, 0});
      absl::Time wake = absl::InfiniteFuture();
      for (const auto& connection : connections_) {
        for (const Pipe* pipe : {&connection->up, &connection->down}) {
          const short read_events = WantsInput(*pipe) ? POLLIN : 0;
          const short write_events = pipe->write_blocked ? POLLOUT : 0;
          fds.push_back({pipe->from, read_events, 0});
          fds.push_back({pipe->to, write_events, 0});
          if (!pipe->write_blocked)
            wake = std::min(wake, pipe->line.NextRelease());
        }
      }
      timespec timeout{};
      timespec* timeout_pointer = nullptr;
      if (wake != absl::InfiniteFuture()) {
        timeout = absl::ToTimespec(
            std::max(wake - absl::Now(), absl::ZeroDuration()));
        timeout_pointer = &timeout;
      }
      if (ppoll(fds.data(), fds.size(), timeout_pointer, nullptr) < 0 &&
          errno != EINTR) {
        Die("ppoll");
      }
      if (fds[0].revents & POLLIN) Accept();
      for (auto it = connections_.begin(); it != connections_.end();) {
        Connection& connection = **it;
        Serve(connection.up, connection);
        Serve(connection.down, connection);
        const bool done = connection.failed || (connection.up.write_ended &&
                                                connection.down.write_ended);
        it = done ? connections_.erase(it) : std::next(it);
      }
    }
  }

 private:
  bool WantsInput(const Pipe& pipe) const {
    return !pipe.read_ended && pipe.line.queued_bytes() < max_queued_;
  }

  void Accept() {
    for (;;) {
      const int client = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK);
      if (client < 0) return;
      const int server = testing::ConnectToLoopback(target_port_);
      if (server < 0) {
        std::fprintf(stderr, "delay_relay: connect to port %d: %s\n",
                     target_port_, std::strerror(errno));
        close(client);
        continue;
      }
      SetNonBlockingNoDelay(client);
      SetNonBlockingNoDelay(server);
      connections_.push_back(
          std::make_unique<Connection>(client, server, options_, ++accepted_));
    }
  }

  // Reads what `pipe.from` has (within the queue bound) and writes what is
  // due to `pipe.to`.
  void Serve(Pipe& pipe, Connection& connection) {
    while (!connection.failed && WantsInput(pipe)) {
      const ssize_t n = recv(pipe.from, buffer_, kReadSize, 0);
      if (n > 0) {
        const absl::string_view bytes(buffer_, n);
        if (trace_) Trace(pipe, connection.number, bytes);
        pipe.line.Push(absl::Now(), bytes);
      } else if (n == 0) {
        pipe.read_ended = true;
        pipe.line.PushEnd(absl::Now());
      } else if (errno == EAGAIN || errno == EINTR) {
        break;
      } else {
        connection.failed = true;
      }
    }
    pipe.write_blocked = false;
    const absl::Time now = absl::Now();
    while (!connection.failed && !pipe.write_ended) {
      const absl::string_view ready = pipe.line.Ready(now);
      if (ready.empty()) {
        if (pipe.line.ended(now)) {
          shutdown(pipe.to, SHUT_WR);
          pipe.write_ended = true;
        }
        return;
      }
      const ssize_t n = send(pipe.to, ready.data(), ready.size(), MSG_NOSIGNAL);
      if (n > 0) {
        pipe.line.Consume(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pipe.write_blocked = true;
        return;
      } else {
        connection.failed = true;
      }
    }
  }

  void Trace(Pipe& pipe, int connection, absl::string_view bytes) {
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start_);
    for (const std::string& frame : pipe.tracer.Feed(bytes)) {
      std::fprintf(stderr, "%10.3f %d %s %s\n", ms, connection,
                   pipe.up ? "c>s" : "s>c", frame.c_str());
    }
  }

  const int target_port_;
  const DelayLine::Options options_;
  const bool trace_;
  const absl::Time start_ = absl::Now();
  int accepted_ = 0;
  size_t max_queued_;
  int listener_ = -1;
  std::list<std::unique_ptr<Connection>> connections_;
  char buffer_[kReadSize];
};

int Main() {
  const int target_port = absl::GetFlag(FLAGS_target_port);
  if (target_port <= 0 || target_port > 65535) {
    std::fprintf(stderr, "delay_relay: --target_port is required\n");
    return 2;
  }
  DelayLine::Options options;
  options.delay = absl::GetFlag(FLAGS_delay);
  options.jitter = absl::GetFlag(FLAGS_jitter);
  options.bytes_per_second = absl::GetFlag(FLAGS_rate_mbit) * 1e6 / 8;
  auto relay = std::make_unique<Relay>(target_port, options,
                                       absl::GetFlag(FLAGS_trace_frames));
  const int port = relay->Listen(absl::GetFlag(FLAGS_port));
  std::printf("delay_relay: listening on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  relay->Run();
}

}  // namespace
}  // namespace h2rpc::benchmark

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::benchmark::Main();
}
