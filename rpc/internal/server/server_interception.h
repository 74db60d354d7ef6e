#ifndef H2RPC_RPC_INTERNAL_SERVER_SERVER_INTERCEPTION_H_
#define H2RPC_RPC_INTERNAL_SERVER_SERVER_INTERCEPTION_H_

#include <cstddef>
#include <vector>

#include "absl/strings/string_view.h"
#include "rpc/interceptor.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "transport/io/monotonic_time.h"

namespace h2rpc::internal {

// A server call's walk through the server's interceptors
// (rpc/interceptor.h): which have started, and when. Each hook is a branch
// and nothing more without interceptors. Part of a call object, reused
// call after call; the call's threads, one at a time.
class ServerInterception {
 public:
  // The call starts (before its handler): runs OnStart of `all` (the
  // server's interceptors) in order; the first failure is returned, and the
  // handler must not run. `all`, `method` and `context` must stay valid
  // until Finish.
  Status Start(const std::vector<ServerInterceptor*>& all,
               absl::string_view method, ServerContext* context);
  void Send(size_t bytes);
  void Receive(size_t bytes);
  // The call ended with `status`: OnFinish of those whose OnStart ran,
  // innermost first, once; then ready for the next call.
  void Finish(const Status& status);

 private:
  ServerCallInfo Info() const { return ServerCallInfo{method_, context_}; }

  const std::vector<ServerInterceptor*>* all_ = nullptr;
  absl::string_view method_;
  ServerContext* context_ = nullptr;
  size_t started_ = 0;
  transport::io::MonotonicTime start_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SERVER_INTERCEPTION_H_
