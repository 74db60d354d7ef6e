#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_HOST_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_HOST_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "rpc/auth_context.h"
#include "rpc/compression.h"
#include "rpc/interceptor.h"
#include "rpc/internal/common/method.h"
#include "rpc/internal/common/worker_pool.h"
#include "rpc/internal/server/sync_task_count.h"
#include "rpc/status.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

class ServerStreamCall;
class UnaryServerCall;

// What every call needs from the server to answer, fixed when the server
// starts.
struct ServerCallSettings {
  // ServerOptions::default_compression.
  CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
  // ServerOptions::connection.max_send_message_size. Bytes.
  size_t max_send_message_size = 0;
  // ServerOptions::stream_write_buffer. Bytes.
  size_t stream_write_buffer = 0;
  // ServerOptions::interceptors (which keeps them alive), outermost first.
  std::vector<ServerInterceptor*> interceptors;
  // ServerOptions::tracer (which keeps it alive); null: no tracing.
  Tracer* tracer = nullptr;
  // ServerOptions::auth_metadata_processor (which keeps it alive), and
  // auth_processor_timeout; null: none.
  AuthMetadataProcessor* auth_processor = nullptr;
  absl::Duration auth_processor_timeout;
};

// What the server's calls (UnaryServerCall, ServerStreamCall) need of the
// server that dispatched them. ServerCore implements it; it outlives every
// call.
class ServerCallHost {
 public:
  // Any thread; the same object for the server's life.
  virtual const ServerCallSettings& call_settings() const = 0;
  // Loop thread, exactly once per dispatched call, by the one function that
  // releases the call object (UnaryServerCall::Recycle,
  // ServerStreamCall::Destroy), as its last use of anything: Shutdown may be
  // waiting for it.
  virtual void CallEnded(const Method* method) = 0;

 protected:
  ~ServerCallHost() = default;
};

// What a call needs of the event loop that serves it. ServerLoop implements
// it; it outlives the calls it serves.
class ServerCallLoop {
 public:
  // Any thread; the same loop for the call's life.
  virtual transport::io::EventLoop& loop() = 0;
  // Loop thread: a synchronous handler's task to the server's worker pool
  // (ServerLoop::SubmitToWorkers says how).
  virtual Status SubmitToWorkers(WorkerTask* task, uint64_t connection_id,
                                 SyncTaskCount* count) = 0;
  // Loop thread: a call object back to the loop's pool.
  virtual void ReturnCall(UnaryServerCall* call) = 0;
  virtual void ReturnCall(ServerStreamCall* call) = 0;

 protected:
  ~ServerCallLoop() = default;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_CALL_HOST_H_
