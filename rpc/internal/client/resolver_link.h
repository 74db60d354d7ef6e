#ifndef H2RPC_RPC_INTERNAL_CLIENT_RESOLVER_LINK_H_
#define H2RPC_RPC_INTERNAL_CLIENT_RESOLVER_LINK_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "rpc/internal/client/loop_gate.h"
#include "rpc/internal/client/loop_timers.h"
#include "rpc/resolver.h"
#include "rpc/status.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// The channel's side of one resolver (h2rpc::ResolverChannel): brings what
// the resolver reports, from whatever thread, to the channel's loop thread
// through the channel's LoopGate, and keeps the resolver's timers. Made on
// the loop thread just before its resolver and shared with the tasks it
// posts; Detach() (loop thread, once the resolver is destroyed) drops
// whatever the resolver reports later and cancels its timers.
class ResolverLink final : public ResolverChannel,
                           public std::enable_shared_from_this<ResolverLink> {
 public:
  // Where reports go, on the loop thread, until Detach().
  class Sink {
   public:
    virtual void OnResolverResult(ResolverResult result) = 0;
    virtual void OnResolverError(const Status& error) = 0;

   protected:
    ~Sink() = default;
  };

  // `sink` and `loop` outlive every task the link posts (the gate is
  // closed before the loop stops).
  ResolverLink(Sink* sink, std::shared_ptr<LoopGate> gate,
               transport::io::EventLoop& loop);
  ~ResolverLink();

  // Loop thread (asserted).
  void Detach();

  // ResolverChannel.
  void Update(ResolverResult result) override;
  void Error(const Status& error) override;
  void Post(absl::AnyInvocable<void()> task) override;
  uint64_t StartTimer(absl::Duration delay,
                      absl::AnyInvocable<void()> task) override;
  void CancelTimer(uint64_t id) override;

 private:
  // Runs `task` on the loop thread unless the link is detached by then.
  void PostIfAttached(absl::AnyInvocable<void(Sink*)> task);

  Sink* sink_ ABSL_GUARDED_BY(loop_);  // null once detached
  const std::shared_ptr<LoopGate> gate_;
  transport::io::EventLoop& loop_;
  LoopTimers timers_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_RESOLVER_LINK_H_
