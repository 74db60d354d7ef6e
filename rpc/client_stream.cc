#include "rpc/client_stream.h"

namespace h2rpc {

void ClientStreamReactor::StartCall() { call_->StartCall(); }

void ClientStreamReactor::StartReadMessage(internal::MessageRef message) {
  call_->StartRead(message);
}

void ClientStreamReactor::StartWriteMessage(internal::ConstMessageRef message,
                                            WriteOptions options) {
  call_->StartWrite(message, options);
}

void ClientStreamReactor::StartWritesDone() { call_->StartWritesDone(); }

void ClientStreamReactor::AddHold() { call_->AddHold(); }

void ClientStreamReactor::RemoveHold() { call_->RemoveHold(); }

namespace internal {

BlockingClientStream::~BlockingClientStream() {
  if (!done()) {
    // The call stays allocated until ReleaseKeepAlive (see
    // ChannelCore::StartBlockingStream), and it cannot be done before the
    // discard has run, so the tasks these post run before it goes.
    call_->RequestCancel();
    call_->DiscardUnread();
    MutexLock lock(&mu_);
    while (!done_) changed_.Wait(&mu_);
  }
  call_->ReleaseKeepAlive();
}

bool BlockingClientStream::done() {
  MutexLock lock(&mu_);
  return done_;
}

bool BlockingClientStream::Read(MessageRef message) {
  if (done()) return false;
  read_.Arm();
  StartReadMessage(message);
  return read_.Wait();
}

bool BlockingClientStream::Write(ConstMessageRef message,
                                 WriteOptions options) {
  if (done() || writes_done_called_) return false;
  write_.Arm();
  StartWriteMessage(message, options);
  return write_.Wait();
}

bool BlockingClientStream::WritesDone() {
  if (done() || writes_done_called_.exchange(true)) return false;
  StartWritesDone();
  writes_done_.Wait();
  return true;
}

void BlockingClientStream::WaitForInitialMetadata() {
  initial_metadata_.Wait();
}

Status BlockingClientStream::Finish() {
  call_->DiscardUnread();
  MutexLock lock(&mu_);
  while (!done_) changed_.Wait(&mu_);
  return status_;
}

void BlockingClientStream::OnReadInitialMetadataDone(bool ok) {
  initial_metadata_.Complete(ok);
}

void BlockingClientStream::OnReadDone(bool ok) { read_.Complete(ok); }

void BlockingClientStream::OnWriteDone(bool ok) { write_.Complete(ok); }

void BlockingClientStream::OnWritesDoneDone(bool ok) {
  writes_done_.Complete(ok);
}

void BlockingClientStream::OnDone(const Status& status) {
  // Signalled under the lock: a waiter may destroy this object as soon as
  // it sees done_.
  MutexLock lock(&mu_);
  status_ = status;
  done_ = true;
  changed_.SignalAll();
}

}  // namespace internal
}  // namespace h2rpc
