#include "rpc/internal/client_call.h"

#include <cstring>
#include <utility>

#include "absl/time/clock.h"
#include "rpc/channel.h"
#include "transport/message_framer.h"

namespace h2rpc::internal {

using transport::EncodeMessagePrefix;
using transport::kMessagePrefixSize;

Status ClientCall::Prepare(ClientContext* context, absl::string_view method,
                           const google::protobuf::MessageLite* request,
                           absl::string_view request_bytes) {
  if (context->deadline() <= absl::Now()) {
    return Status(StatusCode::kDeadlineExceeded,
                  "deadline exceeded before the call started");
  }
  const size_t size =
      request != nullptr ? request->ByteSizeLong() : request_bytes.size();
  Status status = transport::CheckSendMessageSize(
      size, channel_->options_.connection.max_send_message_size);
  if (!status.ok()) return status;

  std::string& frame = stream_.outgoing().buffer();
  frame.resize(kMessagePrefixSize + size);
  EncodeMessagePrefix(/*compressed=*/false, static_cast<uint32_t>(size),
                      frame.data());
  if (request != nullptr) {
    request->SerializeWithCachedSizesToArray(
        reinterpret_cast<uint8_t*>(frame.data() + kMessagePrefixSize));
  } else if (size > 0) {
    std::memcpy(frame.data() + kMessagePrefixSize, request_bytes.data(), size);
  }
  stream_.outgoing().set_end_of_data();

  transport::CallDescription& call = stream_.description;
  call.method_path = method;
  call.authority =
      context->authority().empty() ? channel_->target() : context->authority();
  call.user_agent = channel_->options_.user_agent;
  call.deadline = context->deadline();
  call.metadata = &context->send_metadata();
  stream_.observer = this;

  context_ = context;
  refs_.store(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(context->mu_);
  if (context->cancelled_) {
    return Status(StatusCode::kCancelled, "the call was cancelled");
  }
  context->call_ = this;
  return Status();
}

void ClientCall::Start() { channel_->loop_.Post(&start_task_); }

void ClientCall::StartTask::Run() {
  if (call_->cancel_requested_) {
    // Cancelled while a transparent retry was on its way.
    call_->FailBeforeStream(
        Status(StatusCode::kCancelled, "the call was cancelled"));
    return;
  }
  call_->channel_->StartOnLoop(call_);
}

Status ClientCall::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  completed_cv_.wait(lock, [this] { return completed_; });
  return status_;
}

void ClientCall::RequestCancel() {
  if (cancel_posted_.exchange(true)) return;
  refs_.fetch_add(1, std::memory_order_relaxed);
  channel_->loop_.Post(&cancel_task_);
}

void ClientCall::CancelTask::Run() {
  ClientCall* call = call_;
  call->cancel_posted_.store(false);
  const Status cancelled(StatusCode::kCancelled, "the call was cancelled");
  call->cancel_requested_ = true;
  if (!call->finished_) {
    if (call->stream_.active()) {
      call->stream_.Cancel(cancelled);
    } else if (call->pending_list_ != nullptr) {
      call->LeavePending();
      call->FailBeforeStream(cancelled);
    }
  }
  call->Unref();
}

void ClientCall::WaitForConnection(ClientCall** list_head) {
  pending_list_ = list_head;
  prev_pending_ = nullptr;
  next_pending_ = *list_head;
  if (next_pending_ != nullptr) next_pending_->prev_pending_ = this;
  *list_head = this;
  if (stream_.description.deadline != absl::InfiniteFuture()) {
    channel_->loop_.Schedule(&pending_deadline_, stream_.description.deadline);
  }
}

void ClientCall::LeavePending() {
  if (pending_list_ == nullptr) return;
  if (prev_pending_ != nullptr) prev_pending_->next_pending_ = next_pending_;
  if (next_pending_ != nullptr) next_pending_->prev_pending_ = prev_pending_;
  if (*pending_list_ == this) *pending_list_ = next_pending_;
  pending_list_ = nullptr;
  next_pending_ = prev_pending_ = nullptr;
  channel_->loop_.Cancel(&pending_deadline_);
}

void ClientCall::PendingDeadline::OnTimer() {
  call_->LeavePending();
  call_->FailBeforeStream(Status(
      StatusCode::kDeadlineExceeded,
      "deadline exceeded while connecting to " + call_->channel_->target()));
}

void ClientCall::FailBeforeStream(const Status& status) { Complete(status); }

void ClientCall::OnInitialMetadata(Metadata& metadata) {
  using std::swap;
  swap(context_->initial_metadata_, metadata);
}

Status ClientCall::OnMessage(absl::string_view message) {
  if (got_message_) {
    return Status(StatusCode::kInternal,
                  "received a second response message for a unary call");
  }
  got_message_ = true;
  if (response != nullptr) {
    if (!response->ParseFromArray(message.data(),
                                  static_cast<int>(message.size()))) {
      return Status(StatusCode::kInternal,
                    "failed to parse the response message");
    }
  } else {
    response_bytes->assign(message.data(), message.size());
  }
  return Status();
}

bool ClientCall::OnRefused() {
  // The server did not process the request: start it again (on a new
  // connection if this one is going away), a bounded number of times.
  constexpr int kMaxTransparentRetries = 3;
  if (transparent_retries_ >= kMaxTransparentRetries) return false;
  ++transparent_retries_;
  channel_->loop_.Post(&start_task_);
  return true;
}

void ClientCall::OnClose(const Status& status, Metadata& trailing) {
  using std::swap;
  swap(context_->trailing_metadata_, trailing);
  if (status.ok() && !got_message_) {
    Complete(Status(StatusCode::kInternal,
                    "the server sent no response message for a unary call"));
    return;
  }
  Complete(status);
}

void ClientCall::Complete(const Status& status) {
  finished_ = true;
  {
    std::lock_guard<std::mutex> lock(context_->mu_);
    context_->call_ = nullptr;
  }
  if (done) {
    // Move the callback out: it may start another call from this pool.
    absl::AnyInvocable<void(const Status&)> callback = std::move(done);
    done = nullptr;
    callback(status);
    Unref();
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  status_ = status;
  completed_ = true;
  completed_cv_.notify_one();
}

void ClientCall::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    channel_->ReturnCall(this);
  }
}

void ClientCall::ResetForReuse() {
  stream_.Reset();
  response = nullptr;
  response_bytes = nullptr;
  done = nullptr;
  context_ = nullptr;
  got_message_ = false;
  finished_ = false;
  transparent_retries_ = 0;
  cancel_requested_ = false;
  pending_list_ = nullptr;
  next_pending_ = prev_pending_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  completed_ = false;
  status_ = Status();
}

}  // namespace h2rpc::internal
