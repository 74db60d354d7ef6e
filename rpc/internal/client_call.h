#ifndef H2RPC_RPC_INTERNAL_CLIENT_CALL_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CALL_H_

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include "absl/functional/any_invocable.h"
#include "google/protobuf/message_lite.h"
#include "rpc/client_context.h"
#include "rpc/status.h"
#include "transport/http2/client_connection.h"
#include "transport/io/event_loop.h"

namespace h2rpc {
class Channel;

namespace internal {

// One unary call on a Channel. Pooled by the channel: the stream's buffers
// (request frame, header list, metadata) keep their capacity across calls,
// so a warm call allocates (close to) nothing.
//
// Reference-counted: one reference for the call itself (dropped by whoever
// consumes the result: the blocking caller or the loop after `done`), one per
// queued cancel task. The last reference returns it to the pool.
class ClientCall final : public transport::http2::ClientStream::Observer {
 public:
  explicit ClientCall(Channel* channel) : channel_(channel) {}

  // User thread: sets the call up. Returns non-OK (and the call is not
  // started) for a past deadline, a cancelled context or an oversized
  // request.
  Status Prepare(ClientContext* context, absl::string_view method,
                 const google::protobuf::MessageLite* request,
                 absl::string_view request_bytes);
  // User thread: hands the call to the loop.
  void Start();
  // User thread: blocks until the call is over; returns its status.
  Status Wait();

  // Any thread (ClientContext::TryCancel, under the context's mutex).
  void RequestCancel();

  // Loop thread: ends the call before it reached a stream.
  void FailBeforeStream(const Status& status);
  // Loop thread: the call waits for a connection.
  void WaitForConnection(ClientCall** list_head);
  void LeavePending();

  void Unref();
  void ResetForReuse();

  transport::http2::ClientStream& stream() { return stream_; }
  ClientCall* next_pending() const { return next_pending_; }

  // Where the response goes: a message, or bytes.
  google::protobuf::MessageLite* response = nullptr;
  std::string* response_bytes = nullptr;
  // Set for asynchronous calls; runs on the loop thread.
  absl::AnyInvocable<void(const Status&)> done;

 private:
  class StartTask : public transport::io::Task {
   public:
    explicit StartTask(ClientCall* call) : call_(call) {}
    void Run() override;

   private:
    ClientCall* call_;
  };
  class CancelTask : public transport::io::Task {
   public:
    explicit CancelTask(ClientCall* call) : call_(call) {}
    void Run() override;

   private:
    ClientCall* call_;
  };
  class PendingDeadline : public transport::io::Timer {
   public:
    explicit PendingDeadline(ClientCall* call) : call_(call) {}
    void OnTimer() override;

   private:
    ClientCall* call_;
  };

  // ClientStream::Observer, loop thread.
  void OnInitialMetadata(Metadata& metadata) override;
  Status OnMessage(absl::string_view message) override;
  bool OnRefused() override;
  void OnClose(const Status& status, Metadata& trailing) override;

  void Complete(const Status& status);

  Channel* const channel_;
  transport::http2::ClientStream stream_;
  ClientContext* context_ = nullptr;
  bool got_message_ = false;
  bool finished_ = false;  // loop thread
  int transparent_retries_ = 0;
  bool cancel_requested_ = false;  // loop thread
  ClientCall** pending_list_ = nullptr;
  ClientCall* next_pending_ = nullptr;
  ClientCall* prev_pending_ = nullptr;

  StartTask start_task_{this};
  CancelTask cancel_task_{this};
  PendingDeadline pending_deadline_{this};
  std::atomic<bool> cancel_posted_{false};
  std::atomic<int> refs_{0};

  std::mutex mu_;
  std::condition_variable completed_cv_;
  bool completed_ = false;  // guarded by mu_
  Status status_;           // guarded by mu_
};

}  // namespace internal
}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CALL_H_
