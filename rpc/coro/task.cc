#include "rpc/coro/task.h"

#include "rpc/internal/common/misuse.h"

namespace h2rpc::coro::internal {

void ReportRunningTaskDestroyed() {
  h2rpc::internal::ReportMisuse(
      "a coro::Task destroyed while its coroutine is suspended inside it; "
      "its frame is left allocated");
}

}  // namespace h2rpc::coro::internal
