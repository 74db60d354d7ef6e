#ifndef H2RPC_TEST_UTIL_FAKE_TCP_SERVER_H_
#define H2RPC_TEST_UTIL_FAKE_TCP_SERVER_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace h2rpc::testing {

// A TCP server on 127.0.0.1 whose connections are handled by `handler` on
// the server's own thread, one at a time: a test plays the server by hand.
// The handler may keep the socket (return true: it is closed when the
// server is destroyed) or close it (return false).
class FakeServer {
 public:
  using Handler = std::function<bool(int fd)>;

  // Listens on 127.0.0.1:port (0: any) and starts the thread. Check ok().
  explicit FakeServer(Handler handler, int port = 0);
  // Stops the thread, then closes the kept sockets and the listener.
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  bool ok() const { return listen_fd_ >= 0 && wake_[0] >= 0; }
  int port() const { return port_; }
  std::string target() const;
  // Connections accepted so far. Any thread.
  int accepted() const { return accepted_.load(); }

 private:
  void Run();

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<int> accepted_{0};
  std::vector<int> kept_;  // server thread, then the destructor
  std::thread thread_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_FAKE_TCP_SERVER_H_
