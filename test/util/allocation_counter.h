#ifndef H2RPC_TEST_UTIL_ALLOCATION_COUNTER_H_
#define H2RPC_TEST_UTIL_ALLOCATION_COUNTER_H_

#include <cstddef>
#include <cstdint>

namespace h2rpc::testing {

// Counts calls into the global allocator (every form of operator new) made by
// the current thread while an instance is alive. Linking
// //test/util:allocation_counter replaces the global operator new/delete, so
// only tests and benchmarks link it.
//
//   AllocationCounter counter;
//   BuildSomething();
//   EXPECT_EQ(counter.allocations(), 1);
//
// Counting is per thread and deterministic; it does not see malloc() called
// directly by C libraries (nghttp2 and zlib are given allocators that count).
class AllocationCounter {
 public:
  AllocationCounter();

  // Allocations (and bytes requested) by this thread since construction or
  // the last Reset().
  int64_t allocations() const;
  int64_t bytes() const;
  void Reset();

 private:
  int64_t start_allocations_;
  int64_t start_bytes_;
};

// Process-wide counts by the role of the allocating thread, for benchmarks
// that run client and server in one process: threads named "h2rpc-channel*"
// are the client, "h2rpc-server*" and "h2rpc-worker*" the server, any other
// thread is kOther.
enum class ThreadRole { kClient = 0, kServer = 1, kOther = 2 };
struct AllocationTotals {
  int64_t allocations = 0;
  int64_t bytes = 0;
};
AllocationTotals AllocationsByRole(ThreadRole role);

// Process-wide bytes currently held through operator new, and the peak since
// the last ResetPeakLiveBytes(). Uses malloc_usable_size, so figures include
// the allocator's rounding.
int64_t LiveHeapBytes();
int64_t PeakLiveHeapBytes();
void ResetPeakLiveHeapBytes();

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_ALLOCATION_COUNTER_H_
