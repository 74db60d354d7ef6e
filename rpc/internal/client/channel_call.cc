#include "rpc/internal/client/channel_call.h"

#include <algorithm>
#include <string>
#include <utility>

#include "rpc/internal/call_credentials_access.h"
#include "rpc/internal/client/client_context_access.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

transport::io::EventLoop* ChannelCall::loop() const { return &core_->loop(); }

Status ChannelCall::Describe(ClientContext* context, absl::string_view method,
                             bool generic) {
  const ChannelCallSettings& settings = core_->call_settings();
  metrics_.StartCall(settings.metric_shard, generic);
  transport::CallDescription& call = stream_.description;
  call.method_path = method_path_.Set(method);
  call.traceparent = call.tracestate = absl::string_view();
  tracing_.StartCall(settings.tracer, *context, call.method_path);
  context_ = context;
  if (!core_->interceptors().empty()) {
    Status status = StartInterceptors(context);
    if (!status.ok()) return status;
  }
  transport::io::MonotonicTime deadline =
      ClientContextAccess::Deadline(*context);
  const transport::io::MonotonicTime now = transport::io::MonotonicTime::Now();
  if (deadline <= now) {
    return Status(StatusCode::kDeadlineExceeded,
                  "deadline exceeded before the call started");
  }
  // The service config's settings for the method, if it has any.
  const ServiceConfig& service_config = core_->service_config();
  const MethodConfig* config = service_config.method_configs().empty()
                                   ? nullptr
                                   : service_config.FindMethodConfig(method);
  wait_for_ready_ = context->wait_for_ready();
  max_send_size_ = settings.max_send_message_size;
  stream_.max_receive_message_size = 0;  // the connection's
  stream_.description.previous_attempts = 0;
  retry_policy_ = nullptr;
  retryable_codes_ = StatusCodeSet();
  retry_state_ = RetryState();
  committed_ = false;
  if (config != nullptr) {
    if (config->retry_policy.has_value()) {
      retryable_codes_ = config->retry_policy->retryable_status_codes;
      if (core_->retries_enabled()) retry_policy_ = &*config->retry_policy;
    }
    // As gRPC: the earlier of the two deadlines; a zero timeout sets none.
    if (config->timeout.has_value() &&
        *config->timeout > absl::ZeroDuration()) {
      deadline = std::min(deadline, now + *config->timeout);
    }
    if (config->wait_for_ready.has_value() &&
        !ClientContextAccess::WaitForReadySet(*context)) {
      wait_for_ready_ = *config->wait_for_ready;
    }
    if (config->max_request_message_bytes.has_value()) {
      max_send_size_ =
          std::min<size_t>(max_send_size_, *config->max_request_message_bytes);
    }
    if (config->max_response_message_bytes.has_value()) {
      stream_.max_receive_message_size = *config->max_response_message_bytes;
    }
  }
  call.authority = context->authority().empty() ? core_->default_authority()
                                                : context->authority();
  call.scheme = core_->scheme();
  call.user_agent = settings.user_agent;
  call.deadline = deadline;
  send_compression_ =
      context->compression_algorithm().value_or(settings.default_compression);
  call.send_encoding = CompressionAlgorithmName(send_compression_);
  call.metadata = &context->send_metadata();
  call.credential_metadata[0] = call.credential_metadata[1] = nullptr;
  fetch_credentials_ = false;
  if (settings.call_credentials != nullptr ||
      context->credentials() != nullptr) {
    return DescribeCredentials(settings.call_credentials.get(), context);
  }
  return Status();
}

Status ChannelCall::DescribeCredentials(
    const CallCredentials* channel_credentials, ClientContext* context) {
  if (!core_->call_settings().call_credentials_allowed) {
    return Status(StatusCode::kUnauthenticated,
                  "the call has call credentials, and they are sent only "
                  "over a secure connection: this channel's connections "
                  "are plaintext (use SslCredentials, or LocalCredentials "
                  "over a unix socket)");
  }
  const CallCredentials* const call_credentials = context->credentials().get();
  bool plugins = false;
  for (const CallCredentials* credentials :
       {channel_credentials, call_credentials}) {
    if (credentials == nullptr) continue;
    Status usable = CallCredentialsAccess::Usable(*credentials);
    if (!usable.ok()) return usable;
    fetch_credentials_ =
        fetch_credentials_ || CallCredentialsAccess::Blocking(*credentials);
    plugins = plugins || CallCredentialsAccess::HasPlugins(*credentials);
  }
  transport::CallDescription& call = stream_.description;
  if (!plugins) {
    int i = 0;
    for (const CallCredentials* credentials :
         {channel_credentials, call_credentials}) {
      if (credentials != nullptr) {
        call.credential_metadata[i++] =
            &CallCredentialsAccess::FixedMetadata(*credentials);
      }
    }
    return Status();
  }
  if (fetch_credentials_) return Status();
  credential_metadata_.Clear();
  Status status = AddCallCredentialsMetadata(
      channel_credentials, call_credentials, call.method_path, call.authority,
      transport::io::WallFromMonotonic(call.deadline), &service_url_,
      &credential_metadata_);
  if (!status.ok()) return status;
  call.credential_metadata[0] = &credential_metadata_;
  return Status();
}

void ChannelCall::FetchCredentials() {
  transport::CallDescription& call = stream_.description;
  CredentialsRequest request;
  request.channel_credentials = core_->call_settings().call_credentials;
  request.call_credentials = context_->credentials();
  request.method_path = std::string(call.method_path);
  request.authority = std::string(call.authority);
  request.deadline = transport::io::WallFromMonotonic(call.deadline);
  // Waits like a call between attempts: its deadline runs, and the
  // channel's end fails it.
  WaitForConnection(core_->retrying_list());
  fetch_ = std::make_shared<CredentialsFetch>(
      std::move(request), core_->loop_gate(),
      [this](const Status& status, Metadata& metadata) {
        OnCredentials(status, metadata);
      });
  // Start() may report a failure at once, which detaches the fetch (drops
  // fetch_) while it runs.
  std::shared_ptr<CredentialsFetch> fetch = fetch_;
  fetch->Start();
}

void ChannelCall::OnCredentials(const Status& status, Metadata& metadata) {
  LeavePending();
  if (!status.ok()) {
    FailBeforeStream(status);
    return;
  }
  using std::swap;
  swap(credential_metadata_, metadata);
  stream_.description.credential_metadata[0] = &credential_metadata_;
  core_->StartOnLoop(this);
}

Status ChannelCall::BindContext(ClientContext* context) {
  context_ = context;
  refs_.store(1, std::memory_order_relaxed);
  return ClientContextAccess::Bind(context, this);
}

void ChannelCall::UnbindContext() {
  CommitRetries();
  finished_ = true;
  ClientContextAccess::Unbind(context_);
  if (counted_) {
    counted_ = false;
    core_->OnCallEnded();
  }
}

void ChannelCall::StartTask::Run() {
  call_->CountChannelzStart();
  if (!call_->start_error_.ok()) {
    call_->FailBeforeStream(call_->start_error_);
    return;
  }
  if (call_->fetch_credentials_) {
    call_->fetch_credentials_ = false;
    call_->FetchCredentials();
    return;
  }
  call_->core_->StartOnLoop(call_);
}

void ChannelCall::CancelOnLoop(const Status& status) {
  if (finished_) return;
  // Ended here, never retried: the attempt's close (or the failed start)
  // is the call's result.
  CommitRetries();
  if (stream_.active()) {
    stream_.Cancel(status);
  } else if (pending_list_ != nullptr) {
    // Waiting for a connection, or for its next attempt.
    StopRetryWait();
    FailBeforeStream(status);
  } else {
    start_error_ = status;
  }
}

bool ChannelCall::RetryOrCommit(const Status& status,
                                const Metadata& trailing) {
  if (picked_ != nullptr) {
    if (LbCallObserver* const observer = picked_->call_observer()) {
      observer->OnCallEnded(picked_, status, trailing);
    }
    picked_ = nullptr;
  }
  RetryThrottle* const throttle = core_->retry_throttle();
  // A channel shutting down takes no new attempt: its calls end with the
  // status its connections closed with.
  if (retry_policy_ == nullptr || committed_ || finished_ ||
      core_->shutting_down()) {
    CountOutcome(status, retryable_codes_, throttle);
    CommitRetries();
    return false;
  }
  const absl::optional<absl::Duration> delay =
      NextRetryDelay(*retry_policy_, status, trailing, throttle,
                     core_->RetryJitter(), &retry_state_);
  if (!delay.has_value() || !stream_.PrepareRetry()) {
    CommitRetries();
    return false;
  }
  stream_.description.previous_attempts = retry_state_.attempts - 1;
  metrics_.Retrying(/*transparent=*/false);
  // A deadline that comes first ends the call then (RetryTimer). On the
  // channel's list meanwhile, so that its destruction ends the call too.
  loop()->Schedule(&retry_timer_, std::min(loop()->Now() + *delay,
                                           stream_.description.deadline));
  Link(core_->retrying_list());
  return true;
}

void ChannelCall::StopRetryWait() {
  loop()->Cancel(&retry_timer_);
  LeavePending();
}

void ChannelCall::RetryTimer::OnTimer() {
  ChannelCall* const call = call_;
  call->LeavePending();
  if (call->finished_) return;
  if (call->loop()->Now() >= call->stream_.description.deadline) {
    call->CommitRetries();
    call->FailBeforeStream(Status(StatusCode::kDeadlineExceeded,
                                  "deadline exceeded while waiting to retry"));
    return;
  }
  call->core_->StartOnLoop(call);
}

Status ChannelCall::StartInterceptors(ClientContext* context) {
  intercept_start_ = transport::io::MonotonicTime::Now();
  const ClientCallInfo info{stream_.description.method_path, context};
  for (ClientInterceptor* interceptor : core_->interceptors()) {
    ++started_interceptors_;
    Status status = interceptor->OnStart(info);
    if (!status.ok()) return status;
  }
  return Status();
}

void ChannelCall::InterceptSend(size_t bytes) {
  tracing_.OnSend(bytes);
  for (ClientInterceptor* interceptor : core_->interceptors()) {
    interceptor->OnSendMessage(CallInfo(), bytes);
  }
}

void ChannelCall::InterceptInitialMetadata(const Metadata& metadata) {
  for (ClientInterceptor* interceptor : core_->interceptors()) {
    interceptor->OnReceiveInitialMetadata(CallInfo(), metadata);
  }
}

void ChannelCall::InterceptReceive(size_t bytes) {
  tracing_.OnReceive(bytes);
  for (ClientInterceptor* interceptor : core_->interceptors()) {
    interceptor->OnReceiveMessage(CallInfo(), bytes);
  }
}

void ChannelCall::ReportResult(const Status& status, const Metadata& trailing) {
  FinishInterceptors(status, trailing);
  EndAttempt(status);
  metrics_.EndCall(status.code(), stream_.description.method_path);
  tracing_.EndCall(status);
  if (transport::http2::CallCounts* calls =
          core_->call_settings().channelz_calls) {
    CountChannelzStart();
    channelz_started_ = false;
    (status.ok() ? calls->succeeded : calls->failed).Add(1);
  }
}

void ChannelCall::CountChannelzStart() {
  transport::http2::CallCounts* calls = core_->call_settings().channelz_calls;
  if (calls == nullptr || channelz_started_) return;
  channelz_started_ = true;
  calls->started.Add(1);
  calls->last_started.Set(core_->loop().Now());
}

void ChannelCall::EndRefusedAttempt() {
  picked_ = nullptr;  // never processed: not an outcome of the subchannel
  EndAttempt(Status(StatusCode::kUnavailable, "the server refused the stream"));
}

void ChannelCall::ReportUnstartedResult(const Status& status) {
  FinishInterceptors(status, Metadata());
  tracing_.EndCall(status);
  if (metrics_.on() || core_->call_settings().channelz_calls != nullptr) {
    core_->RecordUnstartedCall(&metrics_, stream_.description.method_path,
                               status.code());
  }
}

void ChannelCall::FinishInterceptors(const Status& status,
                                     const Metadata& trailing) {
  if (started_interceptors_ == 0) return;
  const absl::Duration elapsed =
      transport::io::MonotonicTime::Now() - intercept_start_;
  const std::vector<ClientInterceptor*>& all = core_->interceptors();
  for (int i = started_interceptors_; i-- > 0;) {
    all[i]->OnFinish(CallInfo(), status, trailing, elapsed);
  }
  started_interceptors_ = 0;
}

void ChannelCall::ChargeRetryBuffer() {
  if (retry_policy_ == nullptr || committed_) return;
  const size_t bytes = stream_.outgoing().size();
  if (bytes > core_->call_settings().per_rpc_retry_buffer_size ||
      !core_->ChargeRetryBuffer(bytes - retry_buffer_charged_)) {
    CommitRetries();
    return;
  }
  retry_buffer_charged_ = bytes;
}

void ChannelCall::CommitRetries() {
  if (committed_) return;
  committed_ = true;
  stream_.outgoing().set_retain_written(false);
  core_->ReleaseRetryBuffer(retry_buffer_charged_);
  retry_buffer_charged_ = 0;
}

bool ChannelCall::RetryTransparently() {
  // The server did not process the request: start it again (on a new
  // connection if this one is going away).
  tracing_.SetNextAttemptTransparent();
  if (transparent_retries_ < kImmediateTransparentRetries) {
    ++transparent_retries_;
    metrics_.Retrying(/*transparent=*/true);
    Start();
    return true;
  }
  if (!wait_for_ready_ || core_->shutting_down()) return false;
  metrics_.Retrying(/*transparent=*/true);
  // A wait_for_ready call waits through refusals as through failed
  // connection attempts: again after the reconnect backoff, until its
  // deadline (RetryTimer), on the retrying list meanwhile.
  const absl::Duration delay = core_->TransparentRetryBackoff(
      transparent_retries_ - kImmediateTransparentRetries);
  ++transparent_retries_;
  loop()->Schedule(&retry_timer_, std::min(loop()->Now() + delay,
                                           stream_.description.deadline));
  Link(core_->retrying_list());
  return true;
}

void ChannelCall::RequestCancel(CancelCause cause) {
  if (cancel_posted_.exchange(true)) return;
  cancel_cause_ = cause;
  Ref();
  loop()->Post(&cancel_task_);
}

void ChannelCall::CancelTask::Run() {
  ChannelCall* call = call_;
  const CancelCause cause = call->cancel_cause_;
  call->cancel_posted_.store(false);
  call->CancelOnLoop(CancelStatus(cause));
  call->Unref();
}

void ChannelCall::WaitForConnection(ChannelCall** list_head) {
  Link(list_head);
  if (!stream_.description.deadline.is_infinite_future()) {
    loop()->Schedule(&pending_deadline_, stream_.description.deadline);
  }
}

void ChannelCall::LeavePending() {
  if (pending_list_ == nullptr) return;
  Unlink();
  loop()->Cancel(&pending_deadline_);
  if (fetch_ != nullptr) {
    fetch_->Detach();
    fetch_.reset();
  }
}

void ChannelCall::MovePending(ChannelCall** list_head) {
  if (pending_list_ == nullptr) return;
  Unlink();
  Link(list_head);
}

void ChannelCall::Link(ChannelCall** list_head) {
  pending_list_ = list_head;
  prev_pending_ = nullptr;
  next_pending_ = *list_head;
  if (next_pending_ != nullptr) next_pending_->prev_pending_ = this;
  *list_head = this;
}

void ChannelCall::Unlink() {
  if (prev_pending_ != nullptr) prev_pending_->next_pending_ = next_pending_;
  if (next_pending_ != nullptr) next_pending_->prev_pending_ = prev_pending_;
  if (*pending_list_ == this) *pending_list_ = next_pending_;
  pending_list_ = nullptr;
  next_pending_ = prev_pending_ = nullptr;
}

void ChannelCall::PendingDeadline::OnTimer() {
  const bool fetching = call_->fetch_ != nullptr;
  call_->LeavePending();
  call_->FailBeforeStream(
      fetching ? Status(StatusCode::kDeadlineExceeded,
                        "deadline exceeded while the call credentials' "
                        "plugins ran")
               : call_->core_->PendingDeadlineStatus());
}

void ChannelCall::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) OnLastUnref();
}

void ChannelCall::ResetChannelCall() {
  // A call that failed before it started (a cancelled context) still holds
  // its charge.
  core_->ReleaseRetryBuffer(retry_buffer_charged_);
  stream_.Reset();
  context_ = nullptr;
  finished_ = false;
  start_error_ = Status();
  fetch_credentials_ = false;
  credential_metadata_.Clear();
  transparent_retries_ = 0;
  started_interceptors_ = 0;
  wait_for_ready_ = false;
  retry_policy_ = nullptr;
  retryable_codes_ = StatusCodeSet();
  retry_state_ = RetryState();
  committed_ = false;
  picked_ = nullptr;
  retry_buffer_charged_ = 0;
  counted_ = false;
  channelz_started_ = false;
  pending_list_ = nullptr;
  next_pending_ = prev_pending_ = nullptr;
}

}  // namespace h2rpc::internal
