#ifndef H2RPC_RPC_INTERNAL_CLIENT_LOOP_GATE_H_
#define H2RPC_RPC_INTERNAL_CLIENT_LOOP_GATE_H_

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "base/mutex.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// A channel's event loop as threads that are not the channel's see it
// (call credentials plugins, resolvers): they post work through it until
// the channel closes it, after which their posts are dropped. Thread-safe.
class LoopGate {
 public:
  explicit LoopGate(transport::io::EventLoop* loop) : loop_(loop) {}

  // Any thread: no Post() reaches the loop after this returns.
  void Close();
  // Any thread: posts `task` to the loop unless closed (false: `task` is
  // destroyed without running). Allocates.
  bool Post(absl::AnyInvocable<void()> task);

 private:
  Mutex mu_;
  transport::io::EventLoop* loop_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_LOOP_GATE_H_
