// A SocketDriver between one end of a socketpair and a scripted
// ByteSession; the test plays the peer on the other end.
#include "transport/io/socket_driver.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "test/util/notification.h"
#include "transport/io/event_loop.h"
#include "transport/io/mutex.h"

namespace h2rpc::transport::io {
namespace {

using ::h2rpc::testing::Notification;

constexpr int kHangTimeoutMs = 30000;

// Echoes what it is fed, upper-cased, and records what the driver told it.
// Loop thread, except the getters.
class EchoSession final : public ByteSession {
 public:
  void Start(Wire* wire) override {
    wire_ = wire;
    output_ = "hello";
    wire_->RequestFlush();
  }
  void Feed(absl::string_view bytes) override {
    for (char c : bytes) {
      if (c == '!') {
        // Everything written so far, then FIN.
        shut_after_output_ = true;
      } else if (c == '#') {
        output_ += "bye";
        wire_->CloseWire(/*flush_first=*/true);
        closed_.Notify();
        return;
      } else {
        output_ += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
      }
    }
    wire_->RequestFlush();
  }
  void OnPeerClosed() override { peer_closed_.Notify(); }
  void OnWireError(const Status& why) override {
    {
      MutexLock lock(&mu_);
      error_ = why;
    }
    wire_->CloseWire(false);
    closed_.Notify();
  }
  absl::string_view PendingOutput() override {
    if (output_.empty() && shut_after_output_) {
      shut_after_output_ = false;
      wire_->ShutdownWrite();
    }
    return output_;
  }
  void ConsumeOutput(size_t n) override { output_.erase(0, n); }

  Notification peer_closed_;
  Notification closed_;
  Status error() {
    MutexLock lock(&mu_);
    return error_;
  }

 private:
  Wire* wire_ = nullptr;
  std::string output_;
  bool shut_after_output_ = false;
  Mutex mu_;
  Status error_ ABSL_GUARDED_BY(mu_);
};

class SocketDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    peer_ = fds[1];
    ASSERT_TRUE(loop_.Start("driver-test").ok());
    Notification started;
    loop_.Post([this, fd = fds[0], &started] {
      driver_ =
          std::make_unique<SocketDriver>(&loop_, FileDescriptor(fd), &session_);
      driver_->Start();
      started.Notify();
    });
    started.WaitForNotification();
  }
  void TearDown() override {
    Notification gone;
    loop_.Post([this, &gone] {
      driver_.reset();
      gone.Notify();
    });
    gone.WaitForNotification();
    loop_.Stop();
    EXPECT_TRUE(session_.error().ok()) << session_.error().ToString();
    close(peer_);
  }

  // Reads from the peer's end until `n` bytes arrived or EOF.
  std::string Read(size_t n, bool* eof = nullptr) {
    std::string got;
    while (got.size() < n) {
      pollfd p = {peer_, POLLIN, 0};
      if (poll(&p, 1, kHangTimeoutMs) != 1) break;
      char buffer[256];
      const ssize_t r = read(peer_, buffer, sizeof(buffer));
      if (r == 0) {
        if (eof != nullptr) *eof = true;
        break;
      }
      if (r < 0) continue;
      got.append(buffer, static_cast<size_t>(r));
    }
    return got;
  }
  void Write(absl::string_view bytes) {
    ASSERT_EQ(write(peer_, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }

  EventLoop loop_;
  EchoSession session_;
  std::unique_ptr<SocketDriver> driver_;
  int peer_ = -1;
};

TEST_F(SocketDriverTest, TheSessionsFirstOutputAndItsAnswersReachThePeer) {
  EXPECT_EQ(Read(5), "hello");
  Write("abc");
  EXPECT_EQ(Read(3), "ABC");
}

TEST_F(SocketDriverTest, ShutdownWriteSendsFinAndKeepsReading) {
  EXPECT_EQ(Read(5), "hello");
  Write("xy!");
  bool eof = false;
  EXPECT_EQ(Read(100, &eof), "XY");
  EXPECT_TRUE(eof);
  // Input still reaches the session after the FIN; the peer's own close
  // is reported.
  shutdown(peer_, SHUT_WR);
  EXPECT_TRUE(
      session_.peer_closed_.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST_F(SocketDriverTest, CloseWireCanFlushOnceFirst) {
  EXPECT_EQ(Read(5), "hello");
  Write("q#");
  bool eof = false;
  EXPECT_EQ(Read(100, &eof), "Qbye");
  EXPECT_TRUE(eof);
}

}  // namespace
}  // namespace h2rpc::transport::io
