#include "rpc/internal/client/client_stream_call.h"

#include <utility>

#include "rpc/internal/common/serialize_framed.h"

namespace h2rpc::internal {

ClientStreamCall::ClientStreamCall(ChannelCallHost* core)
    : ChannelCall(core),
      StreamOps(&core->loop(), core->call_settings().stream_write_buffer,
                core->call_settings().max_send_message_size) {}

void ClientStreamCall::Prepare(ClientStreamReactor* reactor,
                               ClientContext* context, absl::string_view method,
                               ConstMessageRef request, MessageRef response,
                               bool generic) {
  reactor_ = reactor;
  stream_.observer = this;
  start_error_ = core_->loop_status();
  if (start_error_.ok()) start_error_ = Describe(context, method, generic);
  if (start_error_.ok() && core_->call_settings().connect_unary) {
    start_error_ = Status(StatusCode::kUnimplemented,
                          "streaming calls on a channel speaking the Connect "
                          "protocol (ChannelOptions::connect_unary): only "
                          "unary calls are carried");
  }
  set_max_send_message_size(max_send_size_);
  // A retryable call keeps what it writes until it is committed.
  stream_.outgoing().set_retain_written(retryable());
  single_response_ = response;
  if (request && start_error_.ok()) {
    start_error_ = SerializeFramed(request, send_compression_, max_send_size_,
                                   &stream_.outgoing().buffer());
    if (start_error_.ok()) {
      stream_.outgoing().CountMessage(stream_.outgoing().size());
    }
    stream_.outgoing().set_end_of_data();
    ChargeRetryBuffer();
  }
  // Last: once bound, TryCancel (any thread) may reach the call, and its
  // task writes start_error_ on the loop.
  Status bound = BindContext(context);
  if (!bound.ok()) start_error_ = std::move(bound);
}

void ClientStreamCall::StartCall() {
  if (!core_->loop_status().ok()) {
    // No loop will ever run the call: end it here.
    reactor_->OnDone(core_->loop_status());
    Unref();
    return;
  }
  Start();
}

void ClientStreamCall::StartWritesDone() {
  if (writes_done_started_.exchange(true, std::memory_order_acq_rel)) {
    ReportOpMisuse("StartWritesDone called twice");
    return;
  }
  BeginOp();
  loop_->Post(&writes_done_task_);
}

void ClientStreamCall::RunWritesDone() {
  CloseWrites();
  if (!closed_) {
    stream_.outgoing().set_end_of_data();
    stream_.ResumeSend();
  }
  EndOp([&] { reactor_->OnWritesDoneDone(!closed_); });
}

void ClientStreamCall::DiscardUnread() {
  if (discard_requested_.exchange(true)) return;  // once is enough
  // May come after OnDone (from the blocking wrapper): the reference keeps
  // the call until the task has run.
  Ref();
  BeginOp();
  loop_->Post(&discard_task_);
}

void ClientStreamCall::RunDiscard() {
  discard_unread_ = true;
  if (closed_) EndReadsAndWrites();
  EndOp([] {});
  Unref();
}

void ClientStreamCall::OnInitialMetadata(Metadata& metadata) {
  CommitRetries();
  ClientContextAccess::SetServerCompression(context_,
                                            stream_.receive_encoding());
  InterceptInitialMetadata(metadata);
  using std::swap;
  swap(ClientContextAccess::InitialMetadata(context_), metadata);
  initial_metadata_reported_ = true;
  reactor_->OnReadInitialMetadataDone(true);
}

Status ClientStreamCall::OnMessage(absl::string_view message, bool compressed) {
  if (!single_response_) {
    return OnMessageReceived(message, compressed);
  }
  if (got_single_response_) {
    return Status(
        StatusCode::kInternal,
        "received a second response message for a client-streaming call");
  }
  got_single_response_ = true;
  ClientContextAccess::SetLastMessageCompressed(context_, compressed);
  if (!single_response_.Read(message)) {
    return Status(StatusCode::kInternal,
                  "failed to parse the response message");
  }
  return Status();
}

void ClientStreamCall::OnClose(const Status& status, Metadata& trailing) {
  EndAttempt(status);
  if (RetryOrCommit(status, trailing)) return;
  using std::swap;
  swap(ClientContextAccess::TrailingMetadata(context_), trailing);
  if (status.ok() && single_response_ && !got_single_response_) {
    Close(Status(StatusCode::kInternal,
                 "the server sent no response message for a client-streaming "
                 "call"));
    return;
  }
  Close(status);
}

void ClientStreamCall::Close(const Status& status) {
  status_ = status;
  closed_ = true;
  ReportResult(status, ClientContextAccess::TrailingMetadata(context_));
  UnbindContext();
  if (!initial_metadata_reported_) {
    initial_metadata_reported_ = true;
    reactor_->OnReadInitialMetadataDone(false);
  }
  // Messages the server sent before its status stay readable, whatever the
  // status; a cancelled or timed-out call (or a blocking Finish) drops them.
  if (discard_unread_ || status.code() == StatusCode::kCancelled ||
      status.code() == StatusCode::kDeadlineExceeded) {
    EndReadsAndWrites();
  } else {
    EndReads();
    EndWrites();
  }
  MaybeDone();
}

void ClientStreamCall::RemoveHold() {
  // The hold's operation stays counted until the task ends it, so the call
  // outlives the task.
  if (holds_to_remove_.fetch_add(1, std::memory_order_acq_rel) == 0) {
    loop_->Post(&remove_holds_task_);
  }
}

void ClientStreamCall::RunRemoveHolds() {
  // A RemoveHold after the exchange posts the task again. OnDone runs from a
  // task of its own, so no EndOp frees the call here.
  for (int n = holds_to_remove_.exchange(0, std::memory_order_acq_rel); n > 0;
       --n) {
    EndOp([] {});
  }
}

void ClientStreamCall::MaybeDone() {
  if (!closed_ || done_posted_ || ops_outstanding() || has_unread_messages()) {
    return;
  }
  done_posted_ = true;
  loop_->Post(&done_task_);
}

void ClientStreamCall::ResetForReuse() {
  ResetChannelCall();
  ResetStreamOps();
  reactor_ = nullptr;
  single_response_ = MessageRef();
  got_single_response_ = false;
  discard_requested_.store(false, std::memory_order_relaxed);
  writes_done_started_.store(false, std::memory_order_relaxed);
  holds_to_remove_.store(0, std::memory_order_relaxed);
  initial_metadata_reported_ = false;
  closed_ = false;
  discard_unread_ = false;
  done_posted_ = false;
  status_ = Status();
}

void ClientStreamCall::RunDone() {
  // An operation started after this task was posted (a misuse report from
  // another thread): its completion calls MaybeDone() again.
  if (ops_outstanding()) {
    done_posted_ = false;
    return;
  }
  reactor_->OnDone(status_);
  Unref();
}

}  // namespace h2rpc::internal
