#include "rpc/client_stream.h"

#include "rpc/internal/client_stream_call.h"

namespace h2rpc {

void ClientStreamReactor::StartCall() { call_->StartCall(); }

void ClientStreamReactor::StartReadMessage(
    google::protobuf::MessageLite* message) {
  call_->StartRead(message);
}

void ClientStreamReactor::StartWriteMessage(
    const google::protobuf::MessageLite* message) {
  call_->StartWrite(message);
}

void ClientStreamReactor::StartWritesDone() { call_->StartWritesDone(); }

namespace internal {

BlockingClientStream::~BlockingClientStream() {
  bool done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done = done_;
  }
  if (!done) {
    // The call stays allocated until ReleaseKeepAlive (see
    // Channel::StartBlockingStream), and it cannot be done before the
    // discard has run, so the tasks these post run before it goes.
    call_->RequestCancel();
    call_->DiscardUnread();
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [this] { return done_; });
  }
  call_->ReleaseKeepAlive();
}

bool BlockingClientStream::Read(google::protobuf::MessageLite* message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return false;
    read_done_ = false;
  }
  StartReadMessage(message);
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return read_done_; });
  return read_ok_;
}

bool BlockingClientStream::Write(const google::protobuf::MessageLite& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ || writes_done_called_) return false;
    write_done_ = false;
  }
  StartWriteMessage(&message);
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return write_done_; });
  return write_ok_;
}

bool BlockingClientStream::WritesDone() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ || writes_done_called_) return false;
    writes_done_called_ = true;
  }
  StartWritesDone();
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return writes_done_done_; });
  return true;
}

void BlockingClientStream::WaitForInitialMetadata() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return initial_metadata_done_; });
}

Status BlockingClientStream::Finish() {
  call_->DiscardUnread();
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return done_; });
  return status_;
}

void BlockingClientStream::OnReadInitialMetadataDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  initial_metadata_done_ = true;
  changed_.notify_all();
}

void BlockingClientStream::OnReadDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  read_done_ = true;
  read_ok_ = ok;
  changed_.notify_all();
}

void BlockingClientStream::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  write_done_ = true;
  write_ok_ = ok;
  changed_.notify_all();
}

void BlockingClientStream::OnWritesDoneDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  writes_done_done_ = true;
  changed_.notify_all();
}

void BlockingClientStream::OnDone(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  status_ = status;
  done_ = true;
  changed_.notify_all();
}

}  // namespace internal
}  // namespace h2rpc
