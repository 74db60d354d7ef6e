#include "transport/io/socket_driver.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace h2rpc::transport::io {
namespace {

// Reads, and bytes, per readiness event before yielding to other
// connections.
constexpr int kMaxReadsPerEvent = 16;
constexpr size_t kMaxBytesPerEvent = 512 * 1024;
// Pieces of output per gathering write: a 256 KiB round of the session's
// output in 16 KiB DATA frames is about 32 (a frame header and a payload
// each).
constexpr size_t kMaxPiecesPerWrite = 128;

// Writes `count` pieces with one sendmsg(); the result is send()'s.
ssize_t SendPieces(int fd, iovec* pieces, size_t count, int flags) {
  msghdr message = {};
  message.msg_iov = pieces;
  message.msg_iovlen = count;
  return sendmsg(fd, &message, flags | MSG_NOSIGNAL);
}

Status SocketError(const char* operation, int error) {
  return Status(StatusCode::kUnavailable,
                absl::StrCat(operation, " failed: ", strerror(error)));
}

}  // namespace

SocketDriver::SocketDriver(EventLoop* loop, FileDescriptor socket,
                           ByteSession* session)
    : loop_(loop), socket_(std::move(socket)), session_(session) {}

SocketDriver::~SocketDriver() {
  if (flush_requested_) loop_->CancelEndOfIteration(&flush_task_);
  if (started_ && !closed_) loop_->RemoveFd(socket_.get());
}

void SocketDriver::Start() {
  session_->Start(this);
  if (closed_) return;
  interest_ = EPOLLIN | EPOLLRDHUP;
  const Status watched = loop_->AddFd(socket_.get(), interest_, this);
  if (!watched.ok()) {
    session_->OnWireError(watched);
    return;
  }
  started_ = true;
}

void SocketDriver::RequestFlush() {
  if (flush_requested_ || closed_) return;
  flush_requested_ = true;
  loop_->RunAtEndOfIteration(&flush_task_);
}

void SocketDriver::ShutdownWrite() {
  if (closed_ || write_shut_) return;
  write_shut_ = true;
  output_blocked_ = false;
  // FIN after the last bytes. Input is still read (and given to the
  // session): unread input would make close() send a reset that can
  // destroy those bytes before the peer reads them.
  shutdown(socket_.get(), SHUT_WR);
  UpdateInterest();
}

void SocketDriver::CloseWire(bool flush_first) {
  if (closed_) return;
  if (flush_first && !write_shut_) {
    // One attempt, whatever the socket takes now.
    iovec pieces[kMaxPiecesPerWrite];
    const size_t count =
        session_->PendingOutputPieces(pieces, kMaxPiecesPerWrite);
    if (count > 0) {
      // Best effort: the wire closes whatever this writes.
      const ssize_t written =
          SendPieces(socket_.get(), pieces, count, MSG_DONTWAIT);
      static_cast<void>(written);
    }
  }
  closed_ = true;
  if (flush_requested_) {
    // The owner may destroy us before the end of this iteration.
    loop_->CancelEndOfIteration(&flush_task_);
    flush_requested_ = false;
  }
  if (started_) loop_->RemoveFd(socket_.get());
  socket_.reset();
}

void SocketDriver::OnFdReady(uint32_t events) {
  if (closed_) return;
  if (!read_closed_ && !input_paused() &&
      (events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))) {
    ReadAvailable();
    if (closed_) return;
  }
  if (events & EPOLLOUT) {
    Flush();
  } else {
    RequestFlush();
  }
}

void SocketDriver::ReadAvailable() {
  size_t bytes_read = 0;
  for (int i = 0;
       i < kMaxReadsPerEvent && bytes_read < kMaxBytesPerEvent && !closed_;
       ++i) {
    // The rest of a large message is read in large chunks into the loop's
    // shared buffer: fewer reads, and fewer rounds of feeding and flushing.
    const bool large = session_->ExpectsLargeInput();
    char* const buffer =
        large ? loop_->large_read_buffer() : loop_->read_buffer();
    const size_t capacity =
        large ? EventLoop::kLargeReadBufferSize : EventLoop::kReadBufferSize;
    const ssize_t n = recv(socket_.get(), buffer, capacity, 0);
    if (n == 0) {
      read_closed_ = true;
      UpdateInterest();
      if (!closed_) session_->OnPeerClosed();
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      error_number_ = errno;
      session_->OnWireError(SocketError("read", error_number_));
      return;
    }
    bytes_read += static_cast<size_t>(n);
    session_->Feed(absl::string_view(buffer, static_cast<size_t>(n)));
    if (closed_) return;
    // Sends what this chunk produced (responses, window updates) now rather
    // than at the end of the iteration, so the peer starts on them while
    // this side works through the next chunk. With one send per iteration,
    // the calls in flight would move between the two sides as one batch,
    // each side idle while the other works.
    if (flush_requested_) {
      loop_->CancelEndOfIteration(&flush_task_);
      Flush();
      if (closed_) return;
    }
    if (input_paused()) {
      UpdateInterest();
      return;
    }
    if (static_cast<size_t>(n) < capacity) return;
    // Work this chunk handed to other threads goes first (see
    // EventLoop::RequestYield); the socket stays readable for the next
    // iteration.
    if (loop_->yield_requested()) return;
  }
}

void SocketDriver::Flush() {
  flush_requested_ = false;
  if (closed_ || write_shut_) return;
  iovec pieces[kMaxPiecesPerWrite];
  for (;;) {
    const size_t count =
        session_->PendingOutputPieces(pieces, kMaxPiecesPerWrite);
    if (closed_ || write_shut_) return;
    if (count == 0) break;
    size_t size = 0;
    for (size_t i = 0; i < count; ++i) size += pieces[i].iov_len;
    const ssize_t n = SendPieces(socket_.get(), pieces, count, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        output_blocked_ = true;
        UpdateInterest();
        return;
      }
      error_number_ = errno;
      session_->OnWireError(SocketError("write", error_number_));
      return;
    }
    session_->ConsumeOutput(static_cast<size_t>(n));
    if (closed_) return;
    if (static_cast<size_t>(n) < size) {
      output_blocked_ = true;
      UpdateInterest();
      return;
    }
  }
  output_blocked_ = false;
  UpdateInterest();
}

void SocketDriver::UpdateInterest() {
  if (closed_ || !started_) return;
  uint32_t interest = 0;
  if (!read_closed_ && !input_paused()) interest |= EPOLLIN | EPOLLRDHUP;
  if (output_blocked_ && !write_shut_) interest |= EPOLLOUT;
  if (interest == interest_) return;
  interest_ = interest;
  const Status status = loop_->ModifyFd(socket_.get(), interest, this);
  if (!status.ok()) session_->OnWireError(status);
}

}  // namespace h2rpc::transport::io
