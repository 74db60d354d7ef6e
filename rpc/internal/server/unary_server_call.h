#ifndef H2RPC_RPC_INTERNAL_SERVER_UNARY_SERVER_CALL_H_
#define H2RPC_RPC_INTERNAL_SERVER_UNARY_SERVER_CALL_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/message_lite.h"
#include "rpc/arena_options.h"
#include "rpc/internal/common/cancel_gate.h"
#include "rpc/internal/common/member_task.h"
#include "rpc/internal/common/method.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/internal/server/server_call_auth.h"
#include "rpc/internal/server/server_call_host.h"
#include "rpc/internal/server/server_call_metrics.h"
#include "rpc/internal/server/server_call_tracing.h"
#include "rpc/internal/server/server_context_access.h"
#include "rpc/internal/server/server_interception.h"
#include "rpc/internal/server/sync_task_count.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "transport/http2/server_session.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// One unary call on the server, from dispatch to its last byte. Pooled per
// loop. Its request and response live on the call's protobuf arena, whose
// first block is part of the call: each call creates them there and resets
// the arena when it ends, so their sub-messages and string objects cost no heap
// allocation (protobuf frees a heap message's sub-messages in Clear(), so
// reusing heap messages would allocate them again for every call). Only
// string contents beyond the SSO size, and messages outgrowing the block,
// still reach the allocator.
//
// Flow: the transport feeds the request (OnMessage, OnHalfClose), the
// handler runs (on a worker thread or inline on the loop), then Run() runs
// on the loop: it sends the response and the status and releases the
// stream. A synchronous handler that gets no worker thread (all
// ServerOptions::max_sync_threads busy) never runs: the call ends at once
// with RESOURCE_EXHAUSTED. A cancel (OnCancel) during the handler only marks
// the call; the handler's completion then just cleans up.
//
// Lifetime: the call is handed to the handler once and completes once
// (UnaryDone is move-only and once-only; a worker completes its task once),
// so the completion task can never find the call reused. A cancel from
// another thread (TryCancel) goes through a CancelGate: accepted only while
// the call runs, and an accepted one keeps the object out of the pool until
// its task has run. Recycle(), which returns the object to the pool and
// ends the server's count of the call, runs exactly once per call.
class UnaryServerCall final : public transport::http2::ServerStream::Observer,
                              public CancellableServerCall,
                              public UnaryCompletion,
                              private ServerCallAuth::Owner,
                              private transport::io::Task {
 public:
  explicit UnaryServerCall(ServerCallLoop* loop) : loop_(loop) {}

  // Loop thread: binds the call to a new stream. `method_name` (the
  // server's copy of the path) names the call in misuse reports; the call
  // records itself in `metrics` (null: CallMetrics are off).
  void Begin(ServerCallHost* server, const Method* method,
             absl::string_view method_name,
             transport::http2::ServerStream* stream,
             ServerMethodStats* metrics);
  // Any thread, once per call: a callback handler finished (UnaryDone).
  // Loop thread: a synchronous handler could not start (`status` says why).
  void HandlerDone(const Status& status) override;
  // Any thread, while the handler runs (ServerContext::TryCancel).
  void RequestCancel() override;

 private:
  // A synchronous handler on a worker thread: Run() runs it, Done() posts
  // its completion.
  class HandlerTask final : public WorkerTask {
   public:
    explicit HandlerTask(UnaryServerCall* call) : call_(call) {}
    void Run() override;
    void Done() override;

   private:
    UnaryServerCall* call_;
  };

  // ServerStream::Observer.
  Status OnMessage(absl::string_view message, bool compressed) override;
  void OnHalfClose() override;
  void OnCancel() override;

  // io::Task: the handler's completion, on the loop thread.
  void Run() override;

  // ServerCallAuth::Owner: the server's auth metadata processor decided
  // (the handler starts, or the call ends), or returned after its time.
  void OnAuthDecided(const Status& status) override;
  void OnAuthReturned() override;
  // Loop thread, once the request is in (and the processor, if any,
  // accepted the call): the interceptors, then the handler.
  void StartHandler();
  void RunHandler();
  void RunCancel();
  // The call is over, with `status` (what its interceptors and span see):
  // releases the stream; recycles the object unless a cancel task still
  // holds it.
  void End(const Status& status);
  // End() for a call the client cancelled.
  void EndCancelled();
  // Back to the loop's pool; the server's count of live calls drops.
  void Recycle();

  // Room for a typical unary request and response with their sub-messages,
  // after the arena's own header and allocation policy.
  static constexpr size_t kInlineArenaBlockSize = 2048;

  ServerCallLoop* const loop_;
  ServerCallHost* server_ = nullptr;
  const Method* method_ = nullptr;
  absl::string_view method_name_;
  // The call's stream while it runs; null once End() released it.
  transport::http2::ServerStream* stream_ = nullptr;
  ServerContext context_ = ServerContextAccess::Make();
  // The arena's first block, declared first so that it outlives the arena.
  alignas(8) char arena_block_[kInlineArenaBlockSize];
  google::protobuf::Arena arena_{
      RecyclingArenaOptions(arena_block_, kInlineArenaBlockSize)};
  google::protobuf::MessageLite* request_ = nullptr;   // on arena_
  google::protobuf::MessageLite* response_ = nullptr;  // on arena_
  bool got_request_ = false;
  // The handler, or the auth metadata processor, runs: a cancel waits for
  // it to finish.
  bool handler_running_ = false;
  ServerCallAuth auth_{this};
  // The status sent when the processor ran past its time, for End() once
  // it returns.
  Status auth_status_;
  // Counts the synchronous handler's task against its connection's share
  // from SubmitToWorkers until the task's Done() (ServerLoop).
  SyncTaskCount sync_tasks_;
  size_t request_bytes_ = 0;  // the request message's, serialized
  ServerInterception interception_;
  ServerCallTracing tracing_;
  ServerCallMetrics metrics_;
  Status handler_status_;
  HandlerTask handler_task_{this};
  CancelGate cancel_gate_;
  MemberTask<UnaryServerCall, &UnaryServerCall::RunCancel> cancel_task_{this};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_UNARY_SERVER_CALL_H_
