#include "rpc/server_stream.h"

#include "rpc/internal/server_stream_call.h"

namespace h2rpc {

ServerStreamReactor::ServerStreamReactor()
    : call_(internal::ServerStreamCall::BindingCall()) {}

void ServerStreamReactor::StartSendInitialMetadata() {
  call_->StartSendInitialMetadata();
}

void ServerStreamReactor::Finish(const Status& status) {
  call_->Finish(status);
}

void ServerStreamReactor::StartReadMessage(
    google::protobuf::MessageLite* message) {
  call_->StartRead(message);
}

void ServerStreamReactor::StartWriteMessage(
    const google::protobuf::MessageLite* message) {
  call_->StartWrite(message);
}

namespace internal {

bool BlockingServerStream::Read(google::protobuf::MessageLite* message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    read_done_ = false;
  }
  StartReadMessage(message);
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return read_done_; });
  return read_ok_;
}

bool BlockingServerStream::Write(const google::protobuf::MessageLite& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    write_done_ = false;
  }
  StartWriteMessage(&message);
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return write_done_; });
  return write_ok_;
}

void BlockingServerStream::SendInitialMetadata() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    metadata_done_ = false;
  }
  StartSendInitialMetadata();
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return metadata_done_; });
}

void BlockingServerStream::OnSendInitialMetadataDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  metadata_done_ = true;
  changed_.notify_all();
}

void BlockingServerStream::OnReadDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  read_done_ = true;
  read_ok_ = ok;
  changed_.notify_all();
}

void BlockingServerStream::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  write_done_ = true;
  write_ok_ = ok;
  changed_.notify_all();
}

}  // namespace internal
}  // namespace h2rpc
