#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_AUTH_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_AUTH_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "rpc/auth_context.h"
#include "rpc/internal/common/member_task.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/internal/server/server_call_host.h"
#include "rpc/internal/server/sync_task_count.h"
#include "rpc/metadata.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// The server's AuthMetadataProcessor deciding on one call, before the call
// runs its interceptors and handler: inline on the loop for a processor
// that does not block, else on a synchronous handler thread with
// ServerOptions::auth_processor_timeout as its bound. Embedded in the call
// object (UnaryServerCall, ServerStreamCall); reused by its next call.
class ServerCallAuth final : public WorkerTask {
 public:
  // What the call does with the decision. Loop thread.
  class Owner {
   public:
    // Once per Start(): the processor's status (its response metadata is in
    // the context's initial metadata when OK, its trailing metadata
    // otherwise); RESOURCE_EXHAUSTED when no thread could run it;
    // UNAVAILABLE when it did not decide in time, in which case it still
    // runs (running()) and OnAuthReturned() follows.
    virtual void OnAuthDecided(const Status& status) = 0;
    // A processor past its time has returned; its decision is dropped.
    virtual void OnAuthReturned() = 0;

   protected:
    ~Owner() = default;
  };

  explicit ServerCallAuth(Owner* owner) : owner_(owner) {}

  // Loop thread: decides on the call `context` serves (bound to its
  // stream) with `settings.auth_processor` (not null), the call arriving
  // on `connection_id` of `loop`. OnAuthDecided runs before this returns
  // for a processor that does not block or no thread to run it.
  void Start(const ServerCallSettings& settings, ServerContext* context,
             ServerCallLoop* loop, uint64_t connection_id);
  // Loop thread: a blocking processor is still running; the call object
  // must wait for it (OnAuthReturned or OnAuthDecided) before its reuse.
  bool running() const { return running_; }

 private:
  // WorkerTask, on the thread that runs the processor.
  void Run() override;
  void Done() override;
  // Loop thread: the processor returned (posted by Done()).
  void Returned();
  // Loop thread: the bound passed.
  void TimedOut();
  // Passes the decision on (once), with the response metadata.
  void Decide(const Status& status);

  class Timeout : public transport::io::Timer {
   public:
    explicit Timeout(ServerCallAuth* auth) : auth_(auth) {}
    void OnTimer() override { auth_->TimedOut(); }

   private:
    ServerCallAuth* auth_;
  };

  Owner* const owner_;
  AuthMetadataProcessor* processor_ = nullptr;
  ServerContext* context_ = nullptr;
  ServerCallLoop* loop_ = nullptr;
  absl::Duration timeout_;
  // Written by Run() (the worker) before Done() posts Returned().
  Status status_;
  Metadata response_metadata_;
  SyncTaskCount sync_tasks_;
  bool running_ = false;  // loop thread
  bool decided_ = false;  // loop thread
  MemberTask<ServerCallAuth, &ServerCallAuth::Returned> returned_task_{this};
  Timeout timeout_timer_{this};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_AUTH_H_
