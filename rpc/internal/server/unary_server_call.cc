#include "rpc/internal/server/unary_server_call.h"

#include <utility>

#include "rpc/internal/common/serialize_framed.h"

namespace h2rpc {

namespace internal {

void UnaryServerCall::Begin(ServerCallHost* server, const Method* method,
                            absl::string_view method_name,
                            transport::http2::ServerStream* stream,
                            ServerMethodStats* metrics) {
  metrics_.Start(metrics);
  server_ = server;
  method_ = method;
  method_name_ = method_name;
  request_ = method->NewRequest(&arena_);
  response_ = method->NewResponse(&arena_);
  stream_ = stream;
  stream->observer = this;
  ServerContextAccess::Bind(&context_, *stream, this);
  tracing_.Start(server->call_settings().tracer, *stream, method_name,
                 &context_);
  cancel_gate_.Open();
  got_request_ = false;
  handler_running_ = false;
}

Status UnaryServerCall::OnMessage(absl::string_view message, bool compressed) {
  if (got_request_) {
    return Status(StatusCode::kInternal,
                  "received a second request message for a unary method");
  }
  got_request_ = true;
  request_bytes_ = message.size();
  ServerContextAccess::SetLastMessageCompressed(&context_, compressed);
  if (!request_->ParseFromArray(message.data(),
                                static_cast<int>(message.size()))) {
    return Status(StatusCode::kInternal, "failed to parse the request message");
  }
  return Status();
}

void UnaryServerCall::OnHalfClose() {
  if (!got_request_) {
    const Status status(StatusCode::kInternal,
                        "the client sent no request message for a unary "
                        "method");
    stream_->Finish(status, nullptr);
    End(status);
    return;
  }
  if (server_->call_settings().auth_processor != nullptr) {
    handler_running_ = true;
    auth_.Start(server_->call_settings(), &context_, loop_,
                stream_->connection_id());
    return;
  }
  StartHandler();
}

void UnaryServerCall::OnAuthDecided(const Status& status) {
  if (auth_.running()) {
    // Past its time: the client has its answer now; the call ends when the
    // processor returns.
    auth_status_ = status;
    if (!stream_->cancelled()) {
      stream_->Finish(status,
                      &ServerContextAccess::TrailingMetadata(&context_));
    }
    return;
  }
  handler_running_ = false;
  if (stream_->cancelled()) {
    EndCancelled();
    return;
  }
  if (!status.ok()) {
    stream_->Finish(status, &ServerContextAccess::TrailingMetadata(&context_));
    interception_.Finish(status);
    End(status);
    return;
  }
  StartHandler();
}

void UnaryServerCall::OnAuthReturned() {
  handler_running_ = false;
  interception_.Finish(auth_status_);
  End(auth_status_);
}

void UnaryServerCall::StartHandler() {
  const Status intercepted = interception_.Start(
      server_->call_settings().interceptors, method_name_, &context_);
  if (!intercepted.ok()) {
    stream_->Finish(intercepted,
                    &ServerContextAccess::TrailingMetadata(&context_));
    interception_.Finish(intercepted);
    End(intercepted);
    return;
  }
  interception_.Receive(request_bytes_);
  tracing_.OnReceive(request_bytes_);
  RunHandler();
}

void UnaryServerCall::RunHandler() {
  handler_running_ = true;
  if (!method_->sync()) {
    method_->RunCallback(&context_, request_, response_,
                         UnaryDone(*this, method_name_));
    return;
  }
  const Status status = loop_->SubmitToWorkers(
      &handler_task_, stream_->connection_id(), &sync_tasks_);
  // No thread for the handler: the call ends here, on the loop thread.
  if (!status.ok()) HandlerDone(status);
}

void UnaryServerCall::HandlerTask::Run() {
  call_->handler_status_ = call_->method_->RunSync(
      &call_->context_, *call_->request_, call_->response_);
}

void UnaryServerCall::HandlerTask::Done() {
  SyncTaskDone(&call_->sync_tasks_);
  call_->loop_->loop().Post(static_cast<transport::io::Task*>(call_));
}

void UnaryServerCall::HandlerDone(const Status& status) {
  handler_status_ = status;
  if (loop_->loop().InLoopThread()) {
    Run();
  } else {
    loop_->loop().Post(static_cast<transport::io::Task*>(this));
  }
}

void UnaryServerCall::RequestCancel() {
  if (!cancel_gate_.RequestCancel()) return;
  // Accepted while the call runs: the object stays this call's until the
  // task has run.
  ServerContextAccess::MarkCancelled(&context_);
  loop_->loop().Post(&cancel_task_);
}

void UnaryServerCall::RunCancel() {
  // stream_ is this call's while it runs (the gate kept the object from
  // being reused), null if it ended meanwhile.
  if (stream_ != nullptr) stream_->ResetWithCancel();
  if (cancel_gate_.CancelTaskDone()) Recycle();
}

void UnaryServerCall::OnCancel() {
  ServerContextAccess::MarkCancelled(&context_);
  // While the handler runs, its completion cleans up.
  if (handler_running_) return;
  EndCancelled();
}

void UnaryServerCall::EndCancelled() {
  const Status cancelled(StatusCode::kCancelled, "the call was cancelled");
  interception_.Finish(cancelled);
  End(cancelled);
}

void UnaryServerCall::Run() {
  handler_running_ = false;
  if (stream_->cancelled()) {
    EndCancelled();
    return;
  }
  Status status = std::move(handler_status_);
  Metadata& initial_metadata = ServerContextAccess::InitialMetadata(&context_);
  if (status.ok()) {
    stream_->set_send_encoding(ServerContextAccess::ResponseCompression(
        context_, server_->call_settings().default_compression));
    status = SerializeFramed(*response_, stream_->send_encoding(),
                             server_->call_settings().max_send_message_size,
                             &stream_->outgoing().buffer());
    // A response the memory quota cannot hold fails the call instead.
    if (status.ok()) status = stream_->outgoing().ChargeAppended();
    if (status.ok()) {
      stream_->outgoing().CountMessage(stream_->outgoing().size());
      interception_.Send(response_->GetCachedSize());
      tracing_.OnSend(response_->GetCachedSize());
      stream_->SendInitialMetadata(&initial_metadata);
      stream_->ResumeSend();
    }
  }
  if (!status.ok() && !initial_metadata.empty()) {
    stream_->SendInitialMetadata(&initial_metadata);
  }
  stream_->Finish(status, &ServerContextAccess::TrailingMetadata(&context_));
  interception_.Finish(status);
  End(status);
}

void UnaryServerCall::End(const Status& status) {
  transport::http2::ServerStream* stream = stream_;
  stream_ = nullptr;
  metrics_.End(*stream);
  tracing_.End(*stream, status);
  ServerContextAccess::Reset(&context_);
  // Frees the messages (and whatever outgrew the first block) now rather
  // than when the pooled call is next used; keeps the first block.
  request_ = nullptr;
  response_ = nullptr;
  arena_.Reset();
  stream->Release();
  if (cancel_gate_.Close()) Recycle();
}

void UnaryServerCall::Recycle() {
  ServerCallHost* server = server_;
  const Method* method = method_;
  loop_->ReturnCall(this);
  server->CallEnded(method);  // last: Shutdown() may be waiting for it
}

}  // namespace internal
}  // namespace h2rpc
