#ifndef H2RPC_RPC_INTERNAL_SERVER_SYNC_TASK_COUNT_H_
#define H2RPC_RPC_INTERNAL_SERVER_SYNC_TASK_COUNT_H_

#include <atomic>
#include <memory>

namespace h2rpc::internal {

// One connection's synchronous handler tasks accepted and not yet done
// (ServerLoop::SubmitToWorkers): shared by the loop, which counts tasks in,
// and the calls, whose tasks count themselves out on a worker thread (the
// thread is free again then), after the connection is gone if need be.
using SyncTaskCount = std::shared_ptr<std::atomic<int>>;

// Any thread: gives back `*count`'s task (a no-op when it is null) and
// drops the reference.
inline void SyncTaskDone(SyncTaskCount* count) {
  if (*count == nullptr) return;
  (*count)->fetch_sub(1, std::memory_order_relaxed);
  count->reset();
}

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_SERVER_SYNC_TASK_COUNT_H_
