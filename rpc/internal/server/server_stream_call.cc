#include "rpc/internal/server/server_stream_call.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/internal/common/serialize_framed.h"

namespace h2rpc::internal {
namespace {

constexpr char kFinishTwice[] = "Finish called twice";

}  // namespace

ServerStreamCall::ServerStreamCall(ServerCallLoop* loop, ServerCallHost* server)
    : StreamOps(&loop->loop(), server->call_settings().stream_write_buffer,
                server->call_settings().max_send_message_size),
      loop_(loop),
      server_(server) {}

void ServerStreamCall::Begin(const Method* method,
                             absl::string_view method_name,
                             transport::http2::ServerStream* stream,
                             ServerMethodStats* metrics) {
  metrics_.Start(metrics);
  method_ = method;
  method_name_ = method_name;
  stream_ = stream;
  stream->observer = this;
  ServerContextAccess::Bind(&context_, *stream, this);
  tracing_.Start(server_->call_settings().tracer, *stream, method_name,
                 &context_);
  cancel_gate_.Open();
  if (method->kind() == MethodKind::kServerStreaming) {
    request_.reset(method->NewRequest(nullptr));
  } else if (method->kind() == MethodKind::kClientStreaming) {
    response_.reset(method->NewResponse(nullptr));
  }
  // A server-streaming handler waits for its request (OnMessage).
  if (request_ == nullptr) StartHandler();
}

void ServerStreamCall::StartHandler() {
  if (server_->call_settings().auth_processor == nullptr) {
    StartInterceptorsAndHandler();
    return;
  }
  authorizing_ = true;
  auth_.Start(server_->call_settings(), &context_, loop_,
              stream_->connection_id());
}

void ServerStreamCall::OnAuthDecided(const Status& status) {
  if (!auth_.running()) authorizing_ = false;
  if (finished_) {  // cancelled meanwhile
    MaybeDone();
    return;
  }
  if (!status.ok() || auth_.running()) {
    // Refused, or past its time (the call then ends once the processor
    // returns: MaybeDone waits for it).
    rejected_ = true;
    final_status_ = status;
    stream_->Finish(status, &ServerContextAccess::TrailingMetadata(&context_));
    finished_ = true;
    MaybeDone();
    return;
  }
  StartInterceptorsAndHandler();
}

void ServerStreamCall::OnAuthReturned() {
  authorizing_ = false;
  MaybeDone();
}

void ServerStreamCall::StartInterceptorsAndHandler() {
  const Status intercepted = interception_.Start(
      server_->call_settings().interceptors, method_name_, &context_);
  if (!intercepted.ok()) {
    rejected_ = true;
    final_status_ = intercepted;
    stream_->Finish(intercepted,
                    &ServerContextAccess::TrailingMetadata(&context_));
    finished_ = true;
    MaybeDone();
    return;
  }
  if (request_ != nullptr) {
    interception_.Receive(request_bytes_);
    tracing_.OnReceive(request_bytes_);
  }
  handler_started_ = true;
  if (method_->sync()) {
    reactor_ = &blocking_;
    const Status status = loop_->SubmitToWorkers(
        &handler_task_, stream_->connection_id(), &sync_tasks_);
    // No thread for the handler: finish the call on its behalf.
    if (!status.ok()) Finish(status);
    return;
  }
  SetBindingServerStream(this);
  reactor_ = method_->CreateReactor(&context_, request_.get(), response_.get());
  SetBindingServerStream(nullptr);
  if (reactor_ == nullptr) {
    reactor_ = &blocking_;  // receives the remaining events
    // Unless a reactor the factory dropped has finished the call already.
    if (!finish_called_.load(std::memory_order_acquire)) {
      Finish(Status(StatusCode::kInternal, "the handler created no reactor"));
    }
  }
}

void ServerStreamCall::HandlerTask::Run() {
  call_->handler_status_ = call_->method_->RunSyncStream(
      &call_->context_, &call_->blocking_, call_->request_.get(),
      call_->response_.get());
}

void ServerStreamCall::HandlerTask::Done() {
  SyncTaskDone(&call_->sync_tasks_);
  call_->Finish(call_->handler_status_);
}

// ---------------------------------------------------------------------------
// Transport events, loop thread.

Status ServerStreamCall::OnMessage(absl::string_view message, bool compressed) {
  if (request_ == nullptr) return OnMessageReceived(message, compressed);
  if (handler_started_ || rejected_ || authorizing_) {
    return Status(
        StatusCode::kInternal,
        "received a second request message for a server-streaming method");
  }
  if (!request_->ParseFromArray(message.data(),
                                static_cast<int>(message.size()))) {
    return Status(StatusCode::kInternal, "failed to parse the request message");
  }
  ServerContextAccess::SetLastMessageCompressed(&context_, compressed);
  request_bytes_ = message.size();
  StartHandler();
  return Status();
}

void ServerStreamCall::OnHalfClose() {
  if (rejected_) return;
  if (request_ != nullptr && !handler_started_ && !authorizing_) {
    final_status_ = Status(StatusCode::kInternal,
                           "the client sent no request message for a "
                           "server-streaming method");
    stream_->Finish(final_status_, nullptr);
    finished_ = true;
    MaybeDone();
    return;
  }
  EndReads();
}

void ServerStreamCall::OnCancel() {
  ServerContextAccess::MarkCancelled(&context_);
  EndReadsAndWrites();
  if (!handler_started_) {
    finished_ = true;  // no handler will ever call Finish
  } else {
    reactor_->OnCancel();
  }
  MaybeDone();
}

// ---------------------------------------------------------------------------
// Operations.

CompressionAlgorithm ServerStreamCall::SendCompression() {
  // Once the headers are out, the stream keeps the encoding they named.
  stream_->set_send_encoding(ServerContextAccess::ResponseCompression(
      context_, server_->call_settings().default_compression));
  return stream_->send_encoding();
}

void ServerStreamCall::ResumeSend() {
  stream_->SendInitialMetadata(
      &ServerContextAccess::InitialMetadata(&context_));
  stream_->ResumeSend();
}

void ServerStreamCall::StartSendInitialMetadata() {
  if (metadata_outstanding_.exchange(true, std::memory_order_acq_rel)) {
    ReportOpMisuse("StartSendInitialMetadata while one is outstanding");
    return;
  }
  BeginOp();
  loop_->loop().Post(&metadata_task_);
}

void ServerStreamCall::RunSendInitialMetadata() {
  const bool ok = !stream_->cancelled() && !stream_->finished();
  SendCompression();  // the headers name the encoding
  stream_->SendInitialMetadata(
      &ServerContextAccess::InitialMetadata(&context_));
  metadata_outstanding_.store(false, std::memory_order_release);
  EndOp([&] { reactor_->OnSendInitialMetadataDone(ok); });
}

void ServerStreamCall::Finish(const Status& status) {
  if (finish_called_.exchange(true, std::memory_order_acq_rel)) {
    // Seen by RunFinish if it has not run yet: the call then fails with
    // INTERNAL instead of sending the first status.
    finished_twice_.store(true, std::memory_order_release);
    ReportOpMisuse(kFinishTwice);
    return;
  }
  finish_status_ = status;
  BeginOp();
  loop_->loop().Post(&finish_task_);
}

void ServerStreamCall::RunFinish() {
  Status status = std::move(finish_status_);
  if (finished_twice_.load(std::memory_order_acquire)) {
    // As StreamOps::ReportOpMisuse words it.
    status = Status(StatusCode::kInternal,
                    absl::StrCat("API misuse: ", kFinishTwice, " on a call of ",
                                 method_name_, "; the call fails"));
  }
  // A write still waiting for the send buffer completes as it drains; the
  // trailers follow every byte written.
  CloseWrites();
  if (!stream_->cancelled() && !stream_->finished()) {
    if (status.ok() && response_ != nullptr) {
      transport::http2::OutgoingData& out = stream_->outgoing();
      const size_t before = out.buffer().size();
      status = SerializeFramed(*response_, SendCompression(),
                               server_->call_settings().max_send_message_size,
                               &out.buffer());
      if (status.ok()) status = out.ChargeAppended();
      if (status.ok()) {
        out.CountMessage(out.buffer().size() - before);
        interception_.Send(response_->GetCachedSize());
        tracing_.OnSend(response_->GetCachedSize());
        ResumeSend();
      }
    }
    Metadata& initial_metadata =
        ServerContextAccess::InitialMetadata(&context_);
    if (!initial_metadata.empty()) {
      stream_->SendInitialMetadata(&initial_metadata);
    }
    stream_->Finish(status, &ServerContextAccess::TrailingMetadata(&context_));
    final_status_ = status;
  }
  // The transport delivers nothing more once finished (and a stream it
  // closes normally is not cancelled), so a read waiting for a message
  // completes with false now; otherwise it would never complete, nor the
  // call end.
  EndReads();
  finished_ = true;
  EndOp([] {});
}

void ServerStreamCall::RequestCancel() {
  if (!cancel_gate_.RequestCancel()) return;
  // Accepted while the call runs: the object stays until the task has run.
  ServerContextAccess::MarkCancelled(&context_);
  loop_->loop().Post(&cancel_task_);
}

void ServerStreamCall::RunCancel() {
  // Null once the call is done (the gate kept the object alive).
  if (stream_ != nullptr) stream_->ResetWithCancel();
  if (cancel_gate_.CancelTaskDone()) Recycle();
}

void ServerStreamCall::MaybeDone() {
  if (!finished_ || done_posted_ || ops_outstanding() || auth_.running()) {
    return;
  }
  done_posted_ = true;
  loop_->loop().Post(&done_task_);
}

void ServerStreamCall::RunDone() {
  // An operation started after this task was posted (a misuse report from
  // another thread): its completion calls MaybeDone() again.
  if (ops_outstanding()) {
    done_posted_ = false;
    return;
  }
  if (handler_started_) reactor_->OnDone();
  const Status status = stream_->cancelled() ? Status(StatusCode::kCancelled,
                                                      "the call was cancelled")
                                             : final_status_;
  interception_.Finish(status);
  transport::http2::ServerStream* stream = stream_;
  stream_ = nullptr;
  metrics_.End(*stream);
  tracing_.End(*stream, status);
  ServerContextAccess::Reset(&context_);
  stream->Release();
  if (cancel_gate_.Close()) Recycle();
}

void ServerStreamCall::Recycle() {
  ServerCallHost* server = server_;
  const Method* method = method_;
  ResetStreamOps();
  method_ = nullptr;
  method_name_ = absl::string_view();
  request_ = nullptr;
  response_ = nullptr;
  reactor_ = nullptr;
  handler_started_ = false;
  rejected_ = false;
  authorizing_ = false;
  finished_ = false;
  request_bytes_ = 0;
  final_status_ = Status();
  done_posted_ = false;
  finish_status_ = Status();
  finish_called_.store(false, std::memory_order_relaxed);
  finished_twice_.store(false, std::memory_order_relaxed);
  metadata_outstanding_.store(false, std::memory_order_relaxed);
  handler_status_ = Status();
  sync_tasks_ = nullptr;
  loop_->ReturnCall(this);
  server->CallEnded(method);  // last: Shutdown() may be waiting for it
}

}  // namespace h2rpc::internal
