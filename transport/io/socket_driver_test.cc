// A SocketDriver between one end of a socketpair and a scripted
// ByteSession; the test plays the peer on the other end.
#include "transport/io/socket_driver.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "base/mutex.h"
#include "gtest/gtest.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"
#include "transport/io/event_loop.h"

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

// A driver on one end of a socketpair, with `session`; `input` is written
// by the peer before the driver starts. `peer_send_buffer` (bytes; 0: the
// default) asks for the peer's send buffer, which bounds the bytes in
// flight, with SO_SNDBUF: the kernel caps it at net.core.wmem_max and
// doubles it (see peer_send_buffer()).
class DriverOnSocketPair {
 public:
  DriverOnSocketPair(EventLoop* loop, ByteSession* session,
                     absl::string_view input, int peer_send_buffer = 0)
      : loop_(loop) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    peer_ = fds[1];
    if (peer_send_buffer > 0) {
      EXPECT_EQ(setsockopt(peer_, SOL_SOCKET, SO_SNDBUF, &peer_send_buffer,
                           sizeof(peer_send_buffer)),
                0);
    }
    EXPECT_EQ(write(peer_, input.data(), input.size()),
              static_cast<ssize_t>(input.size()));
    Notification started;
    loop_->Post([this, fd = fds[0], session, &started] {
      driver_ =
          std::make_unique<SocketDriver>(loop_, FileDescriptor(fd), session);
      driver_->Start();
      started.Notify();
    });
    started.WaitForNotification();
  }
  ~DriverOnSocketPair() {
    Notification gone;
    loop_->Post([this, &gone] {
      driver_.reset();
      gone.Notify();
    });
    gone.WaitForNotification();
    close(peer_);
  }
  int peer() const { return peer_; }
  // The peer's send buffer as the kernel sized it (bytes).
  int peer_send_buffer() const {
    int size = 0;
    socklen_t length = sizeof(size);
    EXPECT_EQ(getsockopt(peer_, SOL_SOCKET, SO_SNDBUF, &size, &length), 0);
    return size;
  }

 private:
  EventLoop* const loop_;
  std::unique_ptr<SocketDriver> driver_;
  int peer_ = -1;
};

class SocketDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(loop_.Start("driver-test").ok());
    pair_ = std::make_unique<DriverOnSocketPair>(&loop_, &session_, "");
    peer_ = pair_->peer();
  }
  void TearDown() override {
    pair_.reset();
    loop_.Stop();
    EXPECT_TRUE(session_.error().ok()) << session_.error().ToString();
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
  std::unique_ptr<DriverOnSocketPair> pair_;
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

// Answers every Feed() with 4 MiB of output, far more than a socketpair
// buffers, and records how much of its output was still unwritten when it
// was fed. It asks the driver to pause input while its output waits. Loop
// thread, except the getters.
class FloodingSession final : public ByteSession {
 public:
  void Start(Wire* wire) override { wire_ = wire; }
  void Feed(absl::string_view bytes) override {
    unwritten_at_last_feed_.store(output_.size());
    fed_.fetch_add(bytes.size());
    output_.append(4 << 20, 'o');
    wire_->RequestFlush();
  }
  void OnPeerClosed() override {}
  void OnWireError(const Status& why) override { wire_->CloseWire(false); }
  absl::string_view PendingOutput() override { return output_; }
  void ConsumeOutput(size_t n) override { output_.erase(0, n); }
  bool PausesInputWhileOutputBlocked() const override { return true; }

  size_t fed() const { return fed_.load(); }
  size_t unwritten_at_last_feed() const {
    return unwritten_at_last_feed_.load();
  }

 private:
  Wire* wire_ = nullptr;
  std::string output_;
  std::atomic<size_t> fed_{0};
  std::atomic<size_t> unwritten_at_last_feed_{0};
};

// The peer writes one byte, which makes the session's output fill the
// socket, then a second byte while it reads none of that output; then it
// reads all of it. Returns the bytes of output still unwritten when the
// second byte was fed.
size_t UnwrittenWhenFedDuringAFlood() {
  EventLoop loop;
  EXPECT_TRUE(loop.Start("flood-test").ok());
  FloodingSession session;
  size_t unwritten = 0;
  {
    DriverOnSocketPair pair(&loop, &session, "a");
    EXPECT_TRUE(testing::WaitFor([&] { return session.fed() == 1; }));
    EXPECT_EQ(write(pair.peer(), "b", 1), 1);
    size_t read_bytes = 0;
    char buffer[64 << 10];
    while (read_bytes < (8u << 20)) {
      pollfd p = {pair.peer(), POLLIN, 0};
      if (poll(&p, 1, kHangTimeoutMs) != 1) break;
      const ssize_t n = read(pair.peer(), buffer, sizeof(buffer));
      if (n <= 0) break;
      read_bytes += static_cast<size_t>(n);
    }
    EXPECT_EQ(read_bytes, 8u << 20);
    EXPECT_EQ(session.fed(), 2u);
    unwritten = session.unwritten_at_last_feed();
  }
  loop.Stop();
  return unwritten;
}

TEST(SocketDriverInputTest, ASessionThatAsksReadsNothingWhileItsOutputWaits) {
  // The second byte waited until every byte of output had left.
  EXPECT_EQ(UnwrittenWhenFedDuringAFlood(), 0u);
}

// Offers `output` in pieces of alternating sizes (as a session with lent
// DATA payloads does) and counts what it is fed; when first fed, posts a
// task and asks the loop to yield. Loop thread.
class PiecesSession final : public ByteSession {
 public:
  PiecesSession(EventLoop* loop, std::string output)
      : loop_(loop), output_(std::move(output)) {}

  void Start(Wire* wire) override {
    wire_ = wire;
    wire_->RequestFlush();
  }
  void Feed(absl::string_view bytes) override {
    ++feeds_;
    fed_ += bytes.size();
    if (feeds_ == 1) {
      loop_->Post([this] {
        feeds_when_posted_task_ran_ = feeds_;
        posted_task_ran_.Notify();
      });
      loop_->RequestYield();
    }
  }
  void OnPeerClosed() override {}
  void OnWireError(const Status& why) override { wire_->CloseWire(false); }
  absl::string_view PendingOutput() override {
    iovec piece;
    return PendingOutputPieces(&piece, 1) == 0
               ? absl::string_view()
               : absl::string_view(static_cast<char*>(piece.iov_base),
                                   piece.iov_len);
  }
  size_t PendingOutputPieces(iovec* pieces, size_t max) override {
    size_t count = 0;
    size_t at = written_;
    while (at < output_.size() && count < max) {
      // Pieces end at multiples of 16393 and 16393 + 9, as DATA frames'
      // payloads and headers do.
      const size_t in_frame = at % 16393;
      const size_t end =
          std::min(output_.size(), at - in_frame + (in_frame < 9 ? 9 : 16393));
      pieces[count].iov_base = &output_[at];
      pieces[count].iov_len = end - at;
      ++count;
      at = end;
    }
    return count;
  }
  void ConsumeOutput(size_t n) override { written_ += n; }

  int feeds() const { return feeds_; }
  Notification posted_task_ran_;
  int feeds_when_posted_task_ran_ = 0;

 private:
  EventLoop* const loop_;
  Wire* wire_ = nullptr;
  std::string output_;
  size_t written_ = 0;
  int feeds_ = 0;
  size_t fed_ = 0;
};

std::string Pattern(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i % 251);
  return bytes;
}

TEST(SocketDriverPiecesTest, PiecesReachThePeerInOrderThroughFullSockets) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("driver-test").ok());
  // More than a socketpair holds: writes stop part-way through a piece and
  // resume on EPOLLOUT.
  const std::string output = Pattern(4 << 20);
  PiecesSession session(&loop, output);
  {
    DriverOnSocketPair pair(&loop, &session, "");
    std::string got;
    while (got.size() < output.size()) {
      pollfd p = {pair.peer(), POLLIN, 0};
      ASSERT_EQ(poll(&p, 1, kHangTimeoutMs), 1) << "after " << got.size();
      char buffer[65536];
      const ssize_t r = read(pair.peer(), buffer, sizeof(buffer));
      ASSERT_GT(r, 0);
      got.append(buffer, static_cast<size_t>(r));
    }
    EXPECT_TRUE(got == output);
  }
  loop.Stop();
}

TEST(SocketDriverPiecesTest, AReadAfterWhichTheLoopMustYieldReadsNoMore) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("driver-test").ok());
  PiecesSession session(&loop, "");
  {
    // Several reads' worth, all readable at once: the first read posts
    // work and asks the loop to yield; the work runs before the second
    // read.
    DriverOnSocketPair pair(&loop, &session, Pattern(160 << 10));
    ASSERT_TRUE(session.posted_task_ran_.WaitForNotificationWithTimeout(
        absl::Seconds(30)));
    EXPECT_EQ(session.feeds_when_posted_task_ran_, 1);
  }
  loop.Stop();
}

// Records what it is fed; expects large input or not as told. Loop thread,
// except the getters after `all_fed_`.
class LargeInputSession final : public ByteSession {
 public:
  LargeInputSession(bool expects_large_input, size_t expected_bytes)
      : expects_large_input_(expects_large_input),
        expected_bytes_(expected_bytes) {}

  void Start(Wire* wire) override { wire_ = wire; }
  void Feed(absl::string_view bytes) override {
    fed_.append(bytes.data(), bytes.size());
    largest_feed_ = std::max(largest_feed_, bytes.size());
    if (fed_.size() == expected_bytes_) all_fed_.Notify();
  }
  void OnPeerClosed() override {}
  void OnWireError(const Status& why) override { wire_->CloseWire(false); }
  absl::string_view PendingOutput() override { return {}; }
  void ConsumeOutput(size_t n) override {}
  bool ExpectsLargeInput() const override { return expects_large_input_; }

  Notification all_fed_;
  const std::string& fed() const { return fed_; }
  size_t largest_feed() const { return largest_feed_; }

 private:
  const bool expects_large_input_;
  const size_t expected_bytes_;
  Wire* wire_ = nullptr;
  std::string fed_;
  size_t largest_feed_ = 0;
};

TEST(SocketDriverLargeInputTest, LargeInputIsReadInLargerChunks) {
  EventLoop loop;
  ASSERT_TRUE(loop.Start("driver-test").ok());
  const std::string input = Pattern(160 << 10);
  for (bool large : {false, true}) {
    LargeInputSession session(large, input.size());
    {
      DriverOnSocketPair pair(&loop, &session, input);
      ASSERT_TRUE(
          session.all_fed_.WaitForNotificationWithTimeout(absl::Seconds(30)));
    }
    EXPECT_TRUE(session.fed() == input) << large;
    if (large) {
      // Everything was readable at once: more than one small read's worth.
      EXPECT_GT(session.largest_feed(), 32u << 10);
      EXPECT_LE(session.largest_feed(), EventLoop::kLargeReadBufferSize);
    } else {
      EXPECT_LE(session.largest_feed(), 32u << 10);
    }
  }
  loop.Stop();
}

// Keeps the socket as full as it was while the first readiness event
// reads: each Feed() until that event's iteration ends writes as many bytes
// into the peer's end as it was fed, so every read of the event fills its
// buffer and only the driver's per-event caps end the event. Counts the
// reads and bytes of that event. Loop thread, except set_peer() (before
// any input) and the getters (after `first_event_done_`).
class RefillingSession final : public ByteSession {
 public:
  RefillingSession(EventLoop* loop, bool expects_large_input)
      : loop_(loop), expects_large_input_(expects_large_input) {}

  void set_peer(int fd) { peer_.store(fd); }

  void Start(Wire* wire) override { wire_ = wire; }
  void Feed(absl::string_view bytes) override {
    if (!refilling_) return;
    if (reads_in_first_event_ == 0) {
      loop_->Post([this] {
        refilling_ = false;
        first_event_done_.Notify();
      });
    }
    ++reads_in_first_event_;
    bytes_in_first_event_ += bytes.size();
    EXPECT_EQ(write(peer_.load(), bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
  void OnPeerClosed() override {}
  void OnWireError(const Status& why) override { wire_->CloseWire(false); }
  absl::string_view PendingOutput() override { return {}; }
  void ConsumeOutput(size_t n) override {}
  bool ExpectsLargeInput() const override { return expects_large_input_; }

  Notification first_event_done_;
  int reads_in_first_event() const { return reads_in_first_event_; }
  size_t bytes_in_first_event() const { return bytes_in_first_event_; }

 private:
  EventLoop* const loop_;
  const bool expects_large_input_;
  std::atomic<int> peer_{-1};
  Wire* wire_ = nullptr;
  bool refilling_ = true;
  int reads_in_first_event_ = 0;
  size_t bytes_in_first_event_ = 0;
};

// One readiness event on a socket that never runs dry, in reads of
// `read_size` (a full buffer each): the driver's caps alone end it.
struct FirstEvent {
  int reads;
  size_t bytes;
};
FirstEvent FirstEventOnASocketThatStaysFull(bool large_reads,
                                            size_t read_size) {
  EventLoop loop;
  EXPECT_TRUE(loop.Start("driver-test").ok());
  RefillingSession session(&loop, large_reads);
  {
    // A read's worth and more, within what SO_SNDBUF gives without
    // privileges (net.core.wmem_max is 208 KiB by default: 416 KiB).
    const size_t held = read_size + (64 << 10);
    DriverOnSocketPair pair(&loop, &session, "", 4 << 20);
    EXPECT_GE(static_cast<size_t>(pair.peer_send_buffer()), held + (64 << 10))
        << "net.core.wmem_max is too small for this test";
    session.set_peer(pair.peer());
    // The loop waits while the peer's end fills, so its first readiness
    // event finds all of it.
    Notification loop_held;
    Notification filled;
    loop.Post([&] {
      loop_held.Notify();
      filled.WaitForNotification();
    });
    loop_held.WaitForNotification();
    const std::string input = Pattern(held);
    EXPECT_EQ(write(pair.peer(), input.data(), input.size()),
              static_cast<ssize_t>(input.size()));
    filled.Notify();
    EXPECT_TRUE(session.first_event_done_.WaitForNotificationWithTimeout(
        absl::Seconds(30)));
  }
  loop.Stop();
  return {session.reads_in_first_event(), session.bytes_in_first_event()};
}

TEST(SocketDriverLargeInputTest, AReadinessEventTakesAtMost16Reads) {
  // 32 KiB reads: the 16th read reaches both caps.
  const FirstEvent event = FirstEventOnASocketThatStaysFull(false, 32 << 10);
  EXPECT_EQ(event.reads, 16);
  EXPECT_EQ(event.bytes, 512u << 10);
}

TEST(SocketDriverLargeInputTest, AReadinessEventReadsAtMost512KiB) {
  // Large reads of the loop's shared buffer: the second reaches 512 KiB.
  const FirstEvent event =
      FirstEventOnASocketThatStaysFull(true, EventLoop::kLargeReadBufferSize);
  EXPECT_EQ(event.reads, 2);
  EXPECT_EQ(event.bytes, 512u << 10);
}

}  // namespace
}  // namespace h2rpc::transport::io
