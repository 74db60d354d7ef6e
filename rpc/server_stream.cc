#include "rpc/server_stream.h"

namespace h2rpc {
namespace internal {
namespace {

thread_local ServerStreamOperations* binding_server_stream = nullptr;

}  // namespace

ServerStreamOperations* BindingServerStream() { return binding_server_stream; }

void SetBindingServerStream(ServerStreamOperations* call) {
  binding_server_stream = call;
}

}  // namespace internal

ServerStreamReactor::ServerStreamReactor()
    : call_(internal::BindingServerStream()) {}

void ServerStreamReactor::StartSendInitialMetadata() {
  call_->StartSendInitialMetadata();
}

void ServerStreamReactor::Finish(const Status& status) {
  call_->Finish(status);
}

void ServerStreamReactor::StartReadMessage(internal::MessageRef message) {
  call_->StartRead(message);
}

void ServerStreamReactor::StartWriteMessage(internal::ConstMessageRef message,
                                            WriteOptions options) {
  call_->StartWrite(message, options);
}

namespace internal {

bool BlockingServerStream::Read(MessageRef message) {
  read_.Arm();
  StartReadMessage(message);
  return read_.Wait();
}

bool BlockingServerStream::Write(ConstMessageRef message,
                                 WriteOptions options) {
  write_.Arm();
  StartWriteMessage(message, options);
  return write_.Wait();
}

void BlockingServerStream::SendInitialMetadata() {
  metadata_.Arm();
  StartSendInitialMetadata();
  metadata_.Wait();
}

void BlockingServerStream::OnSendInitialMetadataDone(bool ok) {
  metadata_.Complete(ok);
}

void BlockingServerStream::OnReadDone(bool ok) { read_.Complete(ok); }

void BlockingServerStream::OnWriteDone(bool ok) { write_.Complete(ok); }

}  // namespace internal
}  // namespace h2rpc
