#ifndef H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CALL_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CALL_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "rpc/client_context.h"
#include "rpc/interceptor.h"
#include "rpc/internal/client/call_credentials_fetch.h"
#include "rpc/internal/client/channel_call_host.h"
#include "rpc/internal/client/client_call_metrics.h"
#include "rpc/internal/client/client_call_tracing.h"
#include "rpc/internal/client/method_path_copy.h"
#include "rpc/internal/client/retry.h"
#include "rpc/load_balancing.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// What every call on a Channel shares, unary or streaming: its transport
// stream, the wait for a connection, the start on the loop, and
// cancellation from any thread through its ClientContext.
//
// Reference-counted: one reference for the call itself (dropped by the
// derived class when its result has been consumed), one per queued cancel
// task. The last reference calls OnLastUnref().
class ChannelCall : public CancellableClientCall {
 public:
  // Loop thread: ends the call before it reached a stream.
  virtual void FailBeforeStream(const Status& status) = 0;
  // Loop thread: the call waits for a connection (with its deadline) on
  // the intrusive list at `*list_head`.
  void WaitForConnection(ChannelCall** list_head);
  void LeavePending();
  // Loop thread: moves a waiting call to the list at `*list_head`, its
  // deadline still running.
  void MovePending(ChannelCall** list_head);
  // Loop thread: takes a call waiting to retry (ChannelCallHost's retrying
  // list) out of its wait, for the channel to fail it.
  void StopRetryWait();
  ChannelCall* next_pending() const { return next_pending_; }
  // ClientContext::wait_for_ready() of the call.
  bool wait_for_ready() const { return wait_for_ready_; }
  // Loop thread: true the first time only; the channel then counts the call
  // as in progress until its result is known (ChannelCallHost::OnCallEnded).
  bool CountInProgress() {
    if (counted_) return false;
    counted_ = true;
    return true;
  }

  transport::http2::ClientStream& stream() { return stream_; }
  // Loop thread: the attempt about to start goes to `subchannel`, whose
  // call observer (if any) is told how it ends.
  void set_picked(LbSubchannel* subchannel) { picked_ = subchannel; }

  // Any thread (ClientContext::TryCancel or the cancellation of the server
  // call the context was made from, under the context's mutex): the call
  // ends with CancelStatus(cause) in the loop's next iteration. The first
  // request wins until that has run.
  void RequestCancel(CancelCause cause) override;

  // Loop thread: an attempt of the call starts (CallMetrics, tracing).
  void StartAttempt() {
    metrics_.StartAttempt(stream_.description.method_path);
    tracing_.StartAttempt(&stream_.description,
                          stream_.description.previous_attempts);
  }
  // The call's result, once: OnFinish of every interceptor whose OnStart
  // ran, innermost first, and the end of the call (and of its attempt
  // under way) in CallMetrics. Loop thread.
  void ReportResult(const Status& status, const Metadata& trailing);
  // The same for a call that failed before it reached the loop, on the
  // thread that started it.
  void ReportUnstartedResult(const Status& status);
  // Loop thread: counts the call as started in channelz, once (when it
  // first reaches the loop, or at its result if it never did).
  void CountChannelzStart();

  // Any thread: hands the call to the loop (again, for a transparent retry).
  void Start() { loop()->Post(&start_task_); }

 protected:
  explicit ChannelCall(ChannelCallHost* core) : core_(core) {}
  virtual ~ChannelCall() = default;

  // Fills the stream's description (method, authority, user agent,
  // deadline, encoding, metadata from `context`, call credentials' metadata)
  // and takes the context's wait_for_ready; the description's method path
  // is the call's own copy of `method`. Call credentials on a channel that
  // may not carry them fail the call (UNAUTHENTICATED); fixed ones are
  // pointed at, non-blocking plugins run here, blocking ones once the call
  // reaches the loop (FetchCredentials). The service config's methodConfig for
  // `method` shortens the deadline (timeout), sets wait_for_ready unless the
  // context did, and lowers the message size limits (max_send_size_, the
  // stream's max_receive_message_size). Returns DEADLINE_EXCEEDED for a
  // deadline already past. The call starts here for CallMetrics; `generic`: a
  // call of the generic API.
  Status Describe(ClientContext* context, absl::string_view method,
                  bool generic);
  // Links the call to `context` for TryCancel; CANCELLED if the context was
  // cancelled already. Takes the call's own reference.
  Status BindContext(ClientContext* context);
  // Loop thread: the call's result is known; TryCancel no longer reaches it
  // and the channel no longer counts it in progress.
  void UnbindContext();
  // Loop thread: ends the call with `status` wherever it is: resets its
  // stream, takes it out of the wait for a connection or for its next
  // attempt, or (not started yet) makes its start fail. Commits the call
  // first, so it is never retried: it ends with `status`, or with the
  // status its attempt already had (trailers in, the close not yet
  // reported).
  void CancelOnLoop(const Status& status);
  // Loop thread, from ClientStream::Observer::OnRefused (a stream the
  // server refused unprocessed, or beyond a GOAWAY's last stream id):
  // starts the call again, at once for the first
  // kImmediateTransparentRetries; after them only a wait_for_ready call
  // goes on, each time after the channel's reconnect backoff
  // (ChannelCallHost::TransparentRetryBackoff), until its deadline. False when
  // out of retries: the call then fails with UNAVAILABLE.
  [[nodiscard]] bool RetryTransparently();
  static constexpr int kImmediateTransparentRetries = 3;

  // Retries (gRPC's A6), for a call whose method has a retryPolicy. The call
  // keeps the request bytes it sends, counted against the channel's retry
  // buffers, until it is committed: response headers arrived, the bytes
  // outgrew ChannelOptions::per_rpc_retry_buffer_size or the channel's
  // retry_buffer_size, or the call ended.
  //
  // Loop thread, from OnClose: starts the next attempt after its backoff
  // (true; the call goes on as if the attempt had not happened) or commits
  // the call (false: `status` is its result): always once the channel is
  // shutting down. Counts the outcome in the channel's retry throttle
  // either way.
  bool RetryOrCommit(const Status& status, const Metadata& trailing);
  // Any thread before the call starts, then the loop thread: counts the
  // request bytes kept for a retry, committing the call when over a limit.
  void ChargeRetryBuffer();
  // No retry from here on; the kept request bytes are released.
  void CommitRetries();
  // The call may still be retried.
  bool retryable() const { return retry_policy_ != nullptr && !committed_; }

  // The channel's interceptors at each hook (rpc/interceptor.h); each is a
  // branch and nothing more without any. Describe() runs their OnStart.
  void InterceptSend(size_t bytes);
  void InterceptInitialMetadata(const Metadata& metadata);
  void InterceptReceive(size_t bytes);
  // Loop thread: the attempt under way, if any, ended with `status`
  // (CallMetrics, tracing).
  void EndAttempt(const Status& status) {
    metrics_.EndAttempt(status.code(), stream_.outgoing().message_bytes(),
                        stream_.received_message_bytes());
    tracing_.EndAttempt(status);
  }
  // The same for an attempt the server refused (REFUSED_STREAM, or past
  // its GOAWAY): UNAVAILABLE.
  void EndRefusedAttempt();

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref();
  virtual void OnLastUnref() = 0;

  // Clears the shared state for reuse; gives back what is still charged to
  // the channel's retry buffer.
  void ResetChannelCall();

  transport::io::EventLoop* loop() const;

  ChannelCallHost* const core_;
  transport::http2::ClientStream stream_;
  // The copy of the method path the stream's description points into: the
  // loop reads it on every (re)start, long after the caller's string may
  // have gone. Kept across reuse with its capacity.
  MethodPathCopy method_path_;
  // Set by Describe(): how the call's messages are compressed, and the
  // largest it may send (serialized, uncompressed). Bytes.
  CompressionAlgorithm send_compression_ = CompressionAlgorithm::kIdentity;
  size_t max_send_size_ = 0;
  ClientContext* context_ = nullptr;
  bool finished_ = false;  // loop thread: the result is known
  // Loop thread. Set before the call reaches the loop, or by a cancel that
  // finds it between streams: the next start fails with it.
  Status start_error_;

 private:
  class StartTask : public transport::io::Task {
   public:
    explicit StartTask(ChannelCall* call) : call_(call) {}
    void Run() override;

   private:
    ChannelCall* call_;
  };
  class CancelTask : public transport::io::Task {
   public:
    explicit CancelTask(ChannelCall* call) : call_(call) {}
    void Run() override;

   private:
    ChannelCall* call_;
  };
  class PendingDeadline : public transport::io::Timer {
   public:
    explicit PendingDeadline(ChannelCall* call) : call_(call) {}
    void OnTimer() override;

   private:
    ChannelCall* call_;
  };
  // The backoff before a retry (or the call's deadline, if sooner).
  class RetryTimer : public transport::io::Timer {
   public:
    explicit RetryTimer(ChannelCall* call) : call_(call) {}
    void OnTimer() override;

   private:
    ChannelCall* call_;
  };

  // The pending-list links.
  void Link(ChannelCall** list_head);
  void Unlink();

  // Runs the interceptors' OnStart; the first failure is the call's.
  Status StartInterceptors(ClientContext* context);
  // Describe()'s part for call credentials: `channel_credentials` (the
  // channel's) and `context`'s, at least one not null.
  Status DescribeCredentials(const CallCredentials* channel_credentials,
                             ClientContext* context);
  // Loop thread: runs the call's blocking plugins on a plugin thread, the
  // call waiting meanwhile on the channel's retrying list (with its
  // deadline); then starts it with their metadata, or fails it.
  void FetchCredentials();
  void OnCredentials(const Status& status, Metadata& metadata);
  ClientCallInfo CallInfo() {
    return ClientCallInfo{stream_.description.method_path, context_};
  }

  // OnFinish of every interceptor whose OnStart ran, innermost first.
  void FinishInterceptors(const Status& status, const Metadata& trailing);

  ClientCallMetrics metrics_;
  ClientCallTracing tracing_;
  // Set by Describe(): the call's blocking plugins are still to run.
  bool fetch_credentials_ = false;
  // Loop thread: the fetch under way (the call waits for it).
  std::shared_ptr<CredentialsFetch> fetch_;
  // The call's credential metadata when plugins gave it, and scratch for
  // their service URL; kept across reuse with their capacity.
  Metadata credential_metadata_;
  std::string service_url_;
  int transparent_retries_ = 0;
  int started_interceptors_ = 0;  // whose OnStart ran
  transport::io::MonotonicTime intercept_start_;
  bool wait_for_ready_ = false;
  bool counted_ = false;  // loop thread: see CountInProgress()
  // Loop thread: counted as started in channelz (CountChannelzStart), not
  // yet as ended.
  bool channelz_started_ = false;
  ChannelCall** pending_list_ = nullptr;
  ChannelCall* next_pending_ = nullptr;
  ChannelCall* prev_pending_ = nullptr;
  StartTask start_task_{this};
  CancelTask cancel_task_{this};
  PendingDeadline pending_deadline_{this};
  // Set by Describe() when the method has a retryPolicy (and retries are
  // on); points into the channel's service config.
  const RetryPolicy* retry_policy_ = nullptr;
  // The retryPolicy's retryableStatusCodes (empty without one), for the
  // throttle.
  StatusCodeSet retryable_codes_;
  RetryState retry_state_;
  bool committed_ = false;
  // The subchannel of the attempt under way, until it ends; alive until
  // then (its connection carries the attempt).
  LbSubchannel* picked_ = nullptr;
  size_t retry_buffer_charged_ = 0;  // bytes counted in the channel's total
  RetryTimer retry_timer_{this};
  std::atomic<bool> cancel_posted_{false};
  // Written by the RequestCancel that set cancel_posted_, read by the task
  // it posted.
  CancelCause cancel_cause_ = CancelCause::kTryCancel;
  std::atomic<int> refs_{0};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CHANNEL_CALL_H_
