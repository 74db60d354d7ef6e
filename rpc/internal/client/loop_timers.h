#ifndef H2RPC_RPC_INTERNAL_CLIENT_LOOP_TIMERS_H_
#define H2RPC_RPC_INTERNAL_CLIENT_LOOP_TIMERS_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// One-shot timers known by id, each running a task on a loop: the timers
// of the public plugin APIs (ResolverChannel::StartTimer,
// LbPolicy::Helper::StartTimer). Loop thread only (each method asserts it:
// its owners reach it through their own reference to the loop).
class LoopTimers {
 public:
  explicit LoopTimers(transport::io::EventLoop& loop);
  // Cancels every pending timer.
  ~LoopTimers();
  LoopTimers(const LoopTimers&) = delete;
  LoopTimers& operator=(const LoopTimers&) = delete;

  // Runs `task` after `delay` (negative: as zero) unless cancelled first;
  // the id is never 0. Allocates.
  uint64_t Start(absl::Duration delay, absl::AnyInvocable<void()> task);
  // No-op for a timer that has run or was cancelled (or id 0).
  void Cancel(uint64_t id);
  void CancelAll();

 private:
  class TaskTimer;

  transport::io::EventLoop& loop_;
  std::map<uint64_t, std::unique_ptr<TaskTimer>> timers_ ABSL_GUARDED_BY(loop_);
  uint64_t next_id_ ABSL_GUARDED_BY(loop_) = 1;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_LOOP_TIMERS_H_
