#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_STREAM_CALL_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_STREAM_CALL_H_

#include <atomic>
#include <memory>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "rpc/internal/common/cancel_gate.h"
#include "rpc/internal/common/method.h"
#include "rpc/internal/common/stream_ops.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/internal/server/server_call_auth.h"
#include "rpc/internal/server/server_call_host.h"
#include "rpc/internal/server/server_call_metrics.h"
#include "rpc/internal/server/server_call_tracing.h"
#include "rpc/internal/server/server_context_access.h"
#include "rpc/internal/server/server_interception.h"
#include "rpc/internal/server/sync_task_count.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"
#include "transport/http2/server_session.h"

namespace h2rpc::internal {

// One streaming call on the server (client, server or bidi streaming),
// driving the method's reactor: one the application's factory created, or
// the BlockingServerStream of a synchronous handler running on a worker.
// Pooled by its loop: taken at dispatch, returned after OnDone (and after
// an accepted cancel's task), its message queue keeping its capacity.
//
// A server-streaming handler starts once the request message has arrived;
// the others start at once. A synchronous handler that gets no worker thread
// (all ServerOptions::max_sync_threads busy) never runs: the call finishes
// at once with RESOURCE_EXHAUSTED. The call is done when Finish has run (or
// the call was cancelled and Finish was still called) and every operation
// has completed.
//
// Lifetime: every task posted from another thread is counted as an
// operation (StreamOps), so the call outlives it, except the cancel, which
// goes through a CancelGate (accepted only while the call runs; an accepted
// one keeps the object until its task has run). Misuse (a second Finish, a
// second read, write or initial metadata while one is outstanding) is
// reported and fails the call with INTERNAL instead of counting an
// operation that would never complete; a second Finish that comes before
// the first has taken effect (its task has run) makes that task send the
// INTERNAL status instead of the first one. Recycle(), which returns the
// object to its loop's pool and ends the server's count of the call, runs
// exactly once per call.
class ServerStreamCall final : public StreamOps,
                               public ServerStreamOperations,
                               public transport::http2::ServerStream::Observer,
                               public CancellableServerCall,
                               private ServerCallAuth::Owner {
 public:
  ServerStreamCall(ServerCallLoop* loop, ServerCallHost* server);

  // Loop thread: serves `stream` with `method` (the object is new or back
  // from its pool) and starts the handler (or waits for the request of a
  // server-streaming call). `method_name` (the server's copy of the path)
  // names the call in misuse reports; the call records itself in `metrics`
  // (null: CallMetrics are off).
  void Begin(const Method* method, absl::string_view method_name,
             transport::http2::ServerStream* stream,
             ServerMethodStats* metrics);

  // ServerStreamOperations: any thread, until OnDone. Finish once; initial
  // metadata once at a time.
  void StartSendInitialMetadata() override;
  void Finish(const Status& status) override;
  void StartRead(MessageRef message) override { StreamOps::StartRead(message); }
  void StartWrite(ConstMessageRef message, WriteOptions options) override {
    StreamOps::StartWrite(message, options);
  }

  void RequestCancel() override;

 private:
  // StreamOps.
  transport::http2::OutgoingData& outgoing() override {
    return stream_->outgoing();
  }
  void ResumeSend() override;
  size_t HoldMessage() override { return stream_->HoldMessage(); }
  CompressionAlgorithm SendCompression() override;
  void ReleaseMessage(size_t held_bytes) override {
    stream_->ReleaseMessage(held_bytes);
  }
  void FailCall(const Status& status) override { stream_->Abort(status); }
  absl::string_view MethodName() const override { return method_name_; }
  void ReadDone(bool ok) override {
    if (ok) {
      ServerContextAccess::SetLastMessageCompressed(&context_,
                                                    last_read_compressed());
    }
    reactor_->OnReadDone(ok);
  }
  void WriteDone(bool ok) override { reactor_->OnWriteDone(ok); }
  void OpCompleted() override { MaybeDone(); }
  void OnWriteAppended(size_t bytes) override {
    interception_.Send(bytes);
    tracing_.OnSend(bytes);
  }
  void OnMessageRead(size_t bytes) override {
    interception_.Receive(bytes);
    tracing_.OnReceive(bytes);
  }

  // ServerStream::Observer.
  Status OnMessage(absl::string_view message, bool compressed) override;
  // Messages a read does not take at once are queued compressed.
  bool DefersDecompression() const override {
    return request_ == nullptr && QueuesNextMessage();
  }
  Status OnCompressedMessage(absl::string_view wire,
                             CompressionAlgorithm encoding,
                             size_t max_size) override {
    return OnCompressedMessageReceived(wire, encoding, max_size);
  }
  void OnHalfClose() override;
  void OnCancel() override;

  // A synchronous handler on a worker thread: Run() runs it, Done() hands
  // its status to Finish().
  class HandlerTask final : public WorkerTask {
   public:
    explicit HandlerTask(ServerStreamCall* call) : call_(call) {}
    void Run() override;
    void Done() override;

   private:
    ServerStreamCall* call_;
  };

  // The auth metadata processor (if the server has one) decides first,
  // then the interceptors run (StartInterceptorsAndHandler), then the
  // handler.
  void StartHandler();
  void StartInterceptorsAndHandler();
  // ServerCallAuth::Owner.
  void OnAuthDecided(const Status& status) override;
  void OnAuthReturned() override;
  void RunSendInitialMetadata();
  void RunFinish();
  void RunCancel();
  void MaybeDone();
  void RunDone();
  // Returns the call to its loop's pool; the server's count of live calls
  // drops.
  void Recycle();

  ServerCallLoop* const loop_;
  ServerCallHost* const server_;
  const Method* method_ = nullptr;
  absl::string_view method_name_;
  // Null once RunDone() released it.
  transport::http2::ServerStream* stream_ = nullptr;
  ServerContext context_ = ServerContextAccess::Make();
  std::unique_ptr<google::protobuf::MessageLite> request_;   // server streaming
  std::unique_ptr<google::protobuf::MessageLite> response_;  // client streaming
  BlockingServerStream blocking_{this};
  ServerStreamReactor* reactor_ = nullptr;
  // Loop thread.
  bool handler_started_ = false;
  // An interceptor's OnStart or the auth metadata processor ended the
  // call: the handler never runs.
  bool rejected_ = false;
  // The auth metadata processor is deciding.
  bool authorizing_ = false;
  ServerCallAuth auth_{this};
  bool finished_ = false;
  size_t request_bytes_ = 0;  // server streaming: the request's, serialized
  Status final_status_;       // what the client was sent
  ServerInterception interception_;
  ServerCallTracing tracing_;
  ServerCallMetrics metrics_;
  bool done_posted_ = false;
  Status finish_status_;  // set by Finish before its task runs
  // Set by the first Finish / StartSendInitialMetadata (any thread); the
  // latter cleared again when its task runs.
  std::atomic<bool> finish_called_{false};
  // Set by a second Finish (any thread).
  std::atomic<bool> finished_twice_{false};
  std::atomic<bool> metadata_outstanding_{false};
  CancelGate cancel_gate_;

  Status handler_status_;  // written by handler_task_'s Run()
  // Counts the synchronous handler's task against its connection's share
  // from SubmitToWorkers until the task's Done() (ServerLoop).
  SyncTaskCount sync_tasks_;
  HandlerTask handler_task_{this};
  MemberTask<ServerStreamCall, &ServerStreamCall::RunSendInitialMetadata>
      metadata_task_{this};
  MemberTask<ServerStreamCall, &ServerStreamCall::RunFinish> finish_task_{this};
  MemberTask<ServerStreamCall, &ServerStreamCall::RunCancel> cancel_task_{this};
  MemberTask<ServerStreamCall, &ServerStreamCall::RunDone> done_task_{this};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_STREAM_CALL_H_
