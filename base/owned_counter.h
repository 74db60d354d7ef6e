#ifndef H2RPC_BASE_OWNED_COUNTER_H_
#define H2RPC_BASE_OWNED_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace h2rpc {

// A count written by one thread at a time, read by any: a relaxed load and
// store, no read-modify-write, so counting costs what a plain increment
// does. Writers that take turns must be ordered by something else (a mutex,
// the loop thread they share). Never allocates.
class OwnedCounter {
 public:
  void Add(uint64_t n) {
    value_.store(value_.load(std::memory_order_relaxed) + n,
                 std::memory_order_relaxed);
  }
  uint64_t Read() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value set by one thread at a time, read by any (the last of several
// readings, such as a timestamp). Never allocates.
class OwnedValue {
 public:
  void Set(int64_t value) { value_.store(value, std::memory_order_relaxed); }
  int64_t Read() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

}  // namespace h2rpc

#endif  // H2RPC_BASE_OWNED_COUNTER_H_
