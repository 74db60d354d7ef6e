#include "transport/io/fake_scheduler.h"

#include <cstdint>

namespace h2rpc::transport::io {

void FakeScheduler::AdvanceTo(MonotonicTime time) {
  while (Timer* timer = timers_.PopDue(time, UINT64_MAX)) {
    if (timer->deadline() > now_) now_ = timer->deadline();
    timer->OnTimer();
  }
  if (time > now_) now_ = time;
}

}  // namespace h2rpc::transport::io
