#include "transport/io/scheduler.h"

#include <cassert>

namespace h2rpc::transport::io {

TimerHeap::TimerHeap(size_t initial_capacity) {
  timers_.reserve(initial_capacity);
}

TimerHeap::~TimerHeap() {
  for (Timer* timer : timers_) timer->heap_index_ = Timer::kNotScheduled;
}

bool TimerHeap::Earlier(const Timer* a, const Timer* b) {
  if (a->deadline_ != b->deadline_) return a->deadline_ < b->deadline_;
  return a->sequence_ < b->sequence_;
}

void TimerHeap::Set(size_t index, Timer* timer) {
  timers_[index] = timer;
  timer->heap_index_ = index;
}

void TimerHeap::SiftUp(size_t index) {
  Timer* timer = timers_[index];
  while (index > 0) {
    const size_t parent = (index - 1) / 2;
    if (!Earlier(timer, timers_[parent])) break;
    Set(index, timers_[parent]);
    index = parent;
  }
  Set(index, timer);
}

void TimerHeap::SiftDown(size_t index) {
  Timer* timer = timers_[index];
  const size_t size = timers_.size();
  for (;;) {
    size_t child = 2 * index + 1;
    if (child >= size) break;
    if (child + 1 < size && Earlier(timers_[child + 1], timers_[child])) {
      ++child;
    }
    if (!Earlier(timers_[child], timer)) break;
    Set(index, timers_[child]);
    index = child;
  }
  Set(index, timer);
}

void TimerHeap::Remove(size_t index) {
  Timer* timer = timers_[index];
  Timer* last = timers_.back();
  timers_.pop_back();
  timer->heap_index_ = Timer::kNotScheduled;
  if (index < timers_.size()) {
    Set(index, last);
    SiftUp(index);
    SiftDown(last->heap_index_);
  }
}

void TimerHeap::Schedule(Timer* timer, MonotonicTime deadline) {
  timer->deadline_ = deadline;
  timer->sequence_ = next_sequence_++;
  if (timer->scheduled()) {
    assert(timers_[timer->heap_index_] == timer);
    SiftUp(timer->heap_index_);
    SiftDown(timer->heap_index_);
    return;
  }
  timer->heap_index_ = timers_.size();
  timers_.push_back(timer);
  SiftUp(timer->heap_index_);
}

void TimerHeap::Cancel(Timer* timer) {
  if (!timer->scheduled()) return;
  assert(timers_[timer->heap_index_] == timer);
  Remove(timer->heap_index_);
}

Timer* TimerHeap::PopDue(MonotonicTime now, uint64_t sequence_limit) {
  if (timers_.empty()) return nullptr;
  Timer* timer = timers_[0];
  if (timer->deadline_ > now || timer->sequence_ >= sequence_limit) {
    return nullptr;
  }
  Remove(0);
  return timer;
}

}  // namespace h2rpc::transport::io
