#ifndef H2RPC_RPC_INTERCEPTORS_ECHO_LOOPBACK_H_
#define H2RPC_RPC_INTERCEPTORS_ECHO_LOOPBACK_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "rpc/channel.h"
#include "rpc/interceptor.h"
#include "rpc/server.h"
#include "rpc/status.h"

namespace h2rpc::testing {

// Methods of the echo server (messages from proto/grpc/testing).
// SimpleRequest -> SimpleResponse with the request's payload body; every
// client metadata entry whose key starts with "x-" comes back as a
// trailing entry "echo-<key>". Callback handler.
inline constexpr char kEchoMethod[] = "/h2rpc.test.Echo/Echo";
// Fails with NOT_FOUND "no such thing" (kFailMessage). Callback handler.
inline constexpr char kFailMethod[] = "/h2rpc.test.Echo/Fail";
inline constexpr char kFailMessage[] = "no such thing";
// Bidirectional streaming StreamingOutputCallRequest ->
// StreamingOutputCallResponse: echoes each message's payload body until the
// client half-closes, then OK. Synchronous handler.
inline constexpr char kBidiMethod[] = "/h2rpc.test.Echo/Bidi";
// Empty -> Empty, OK. Callback handler.
inline constexpr char kEmptyMethod[] = "/h2rpc.test.Echo/Empty";

// An h2rpc server of the methods above on 127.0.0.1 (one loop, one worker
// thread) and a channel to it, with the interceptors given. For tests on
// the test's thread; handler_calls() from any thread.
class EchoLoopback {
 public:
  EchoLoopback(std::vector<std::shared_ptr<ClientInterceptor>> client,
               std::vector<std::shared_ptr<ServerInterceptor>> server);

  // OK unless the server could not start (then channel() is null).
  const Status& status() const { return status_; }
  Channel* channel() const { return channel_.get(); }
  // Handler runs so far, of every method.
  int handler_calls() const { return handler_calls_.load(); }

 private:
  std::atomic<int> handler_calls_{0};
  Status status_;
  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
};

}  // namespace h2rpc::testing

#endif  // H2RPC_RPC_INTERCEPTORS_ECHO_LOOPBACK_H_
