#ifndef H2RPC_RPC_INTERNAL_SERVER_LOOP_H_
#define H2RPC_RPC_INTERNAL_SERVER_LOOP_H_

#include <memory>
#include <vector>

#include "rpc/internal/member_task.h"
#include "rpc/status.h"
#include "transport/core/memory_quota.h"
#include "transport/http2/server_session.h"
#include "transport/io/event_loop.h"
#include "transport/io/socket.h"
#include "transport/io/socket_connection.h"
#include "transport/tls/tls_context.h"

namespace h2rpc::internal {

class ServerCall;
class ServerCore;

// One of the server's event loops with the connections it serves and its
// pool of call objects (touched only on its thread).
class ServerLoop final : public transport::http2::ServerDispatcher,
                         public transport::http2::ServerSession::Listener,
                         private transport::MemoryQuota::Listener {
 public:
  // `server` must outlive the loop.
  ServerLoop(ServerCore* server, int cpu);
  ~ServerLoop();

  transport::io::EventLoop& loop() { return loop_; }
  // Why the loop thread could not start (e.g. a CPU it cannot pin to).
  const Status& start_status() const { return start_status_; }

  // Any thread: serve a newly accepted socket on this loop, over TLS with
  // `tls` unless it is null.
  void Adopt(transport::io::FileDescriptor socket, std::string peer,
             std::shared_ptr<const transport::tls::TlsContext> tls);
  // Loop thread.
  void DrainConnections();
  void CloseConnections();

  ServerCall* TakeCall();
  void ReturnCall(ServerCall* call);

 private:
  Status Dispatch(transport::http2::ServerStream* stream) override;
  void OnConnectionClosed(transport::http2::ServerSession* connection) override;
  // Any thread: memory of the server's quota was released while a message
  // waits for it; the loop's connections retry on a posted task.
  void OnMemoryQuotaReleased() override { loop_.Post(&memory_task_); }
  void RetryMemoryWaiters();

  ServerCore* const server_;
  transport::io::EventLoop loop_;
  std::vector<std::unique_ptr<
      transport::io::SocketConnection<transport::http2::ServerSession>>>
      connections_;
  std::vector<ServerCall*> free_calls_;
  bool draining_ = false;
  Status start_status_;
  MemberTask<ServerLoop, &ServerLoop::RetryMemoryWaiters> memory_task_{this};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_LOOP_H_
