#ifndef H2RPC_TEST_UTIL_TCP_PROXY_H_
#define H2RPC_TEST_UTIL_TCP_PROXY_H_

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace h2rpc::testing {

// A loopback TCP proxy for tests: listens on 127.0.0.1 (a free port) and
// forwards every connection it accepts to 127.0.0.1:target_port, both ways,
// half-closes included, on one poll-based thread of its own. It can freeze
// every connection (a black hole: see Freeze) or reset them all (see
// ResetConnections), and it counts what it
// forwarded: connections, bytes, and, for cleartext HTTP/2, the frames that
// tests wait on (PINGs, their ACKs, GOAWAYs).
//
// Construction starts the thread; destruction stops it and closes every
// socket (the peers see a FIN). Thread-safe: any thread may call any
// method.
class TcpProxy {
 public:
  // A GOAWAY frame the proxy forwarded.
  struct GoAway {
    int connection = 0;  // the connection's index, 0 for the first accepted
    uint32_t last_stream_id = 0;
    uint32_t error_code = 0;
    std::string debug_data;
  };

  // What went one way (client to server, or server to client) over all
  // connections together, counted as it is written to the destination.
  struct Flow {
    uint64_t bytes = 0;
    // When the last byte was written; InfinitePast before the first.
    absl::Time last_forwarded = absl::InfinitePast();
    // HTTP/2 frames, parsed from the bytes after the client's connection
    // preface (to the server) and from the first byte (to the client).
    // Nothing is counted on a connection whose client does not start with
    // the HTTP/2 preface (TLS, another protocol).
    int64_t frames = 0;
    int64_t pings = 0;      // PING frames without the ACK flag
    int64_t ping_acks = 0;  // PING frames with it
    std::vector<GoAway> goaways;
  };

  struct Counters {
    // Connections accepted from clients, and those of them still open.
    int accepted = 0;
    int open = 0;
    // Accepted connections closed at once because the connect to the
    // target failed.
    int upstream_failures = 0;
    // Connections ended by ResetConnections.
    int reset = 0;
    Flow to_server;
    Flow to_client;

    // All of the above on one line, for test failure messages.
    std::string ToString() const;
  };

  // Starts listening and forwarding to 127.0.0.1:target_port. Check ok().
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  // False if the proxy could not start (error() says why).
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // The port clients connect to, and "127.0.0.1:<port>".
  int port() const { return port_; }
  std::string target() const;

  // Stops forwarding on every connection, open or accepted later, until
  // Thaw(): neither socket is read or written any more, nor closed, so
  // whatever either peer sends stays in kernel buffers (once they are full
  // the sender's writes block) and nothing is answered, as on a network
  // path that silently drops everything. Returns once no byte will be
  // forwarded any more. Idempotent.
  void Freeze();
  // Forwards again, starting with what waited in the buffers.
  void Thaw();

  // Ends every open connection abruptly, as a failing network path does:
  // both of its sockets are closed with an RST (SO_LINGER 0), whatever
  // waited in the proxy's buffers is dropped. Frozen connections too.
  // Returns once they are closed; connections accepted afterwards are
  // forwarded as usual.
  void ResetConnections();

  // A snapshot of the counters.
  Counters counters() const;
  // Blocks until `condition` holds for the counters (true) or `timeout`
  // passes (false). `condition` runs under the proxy's lock, on this
  // thread, at every change: it must not call the proxy.
  bool WaitUntil(absl::FunctionRef<bool(const Counters&)> condition,
                 absl::Duration timeout) const;

 private:
  struct Connection;

  // The proxy thread.
  void Run();
  void Accept();
  // Forwards what each connection's sockets allow; false once the
  // connection is over.
  bool Service(Connection& connection) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resets every connection if a ResetConnections call asks for it.
  void ResetIfAsked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Wake();

  const int target_port_;
  std::string error_;  // set by the constructor only
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};  // a pipe: Freeze, Thaw and ~TcpProxy wake Run
  // The proxy thread's, then the destructor's (after the join).
  std::vector<Connection*> connections_;

  mutable Mutex mu_;
  mutable CondVar changed_;  // counters_ changed
  bool frozen_ ABSL_GUARDED_BY(mu_) = false;
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  // ResetConnections calls made, and those the proxy thread has carried out.
  int64_t resets_asked_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t resets_done_ ABSL_GUARDED_BY(mu_) = 0;
  Counters counters_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_TCP_PROXY_H_
