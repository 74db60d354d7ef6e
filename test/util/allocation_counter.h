#ifndef H2RPC_TEST_UTIL_ALLOCATION_COUNTER_H_
#define H2RPC_TEST_UTIL_ALLOCATION_COUNTER_H_

// Counts every heap allocation of the process, per thread and per role of
// the allocating thread, for tests and benchmarks. Linking
// //test/util:allocation_counter puts the counting under every heap entry
// point: malloc, calloc, realloc, reallocarray, posix_memalign,
// aligned_alloc, memalign, valloc, pvalloc, and every form of operator new
// (which reaches them), called from any library: h2rpc, libstdc++,
// protobuf, nghttp2, zlib, OpenSSL, libc, gRPC. A realloc counts as one
// allocation of its new size. Only tests and benchmarks link it.
//
//   AllocationCounter counter;
//   BuildSomething();
//   EXPECT_EQ(counter.allocations(), 1);
//
// In a plain build the executable interposes those functions and forwards
// them to glibc's own (__libc_malloc and the rest). Under AddressSanitizer
// or ThreadSanitizer, whose runtimes interpose them, the sanitizer's
// allocation hooks (__sanitizer_install_malloc_and_free_hooks) count
// instead: the same calls, the same figures.
//
// Counting costs an allocating (or freeing) thread a few increments of its
// own counters: no lock, no shared cache line. Only threads past the first
// 4096 alive at once, and every thread while peak tracking is on
// (ResetPeakLiveHeapBytes), also update shared atomic counters.

#include <cstdint>

namespace h2rpc::testing {

// Counts the allocations (and bytes requested) of the current thread while
// it is alive. Deterministic: other threads do not change it.
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

// Who an allocation is for, in a process that runs client and server side
// by side. A thread's role is the one it declared (SetThisThreadRole), else
// the one its name gives: "h2rpc-channel*" the client, "h2rpc-server*" and
// "h2rpc-worker*" the server; else the process's default role
// (SetDefaultRole; kOther unless set). A thread named within its first 64
// allocations counts for its name's role from its next one on; a thread
// named after its first n allocations, from its 2n+1th at the latest
// (while it has no role its name is read again, less and less often).
enum class ThreadRole { kClient = 0, kServer = 1, kOther = 2 };

// Any thread. The role of threads that neither declared one nor have an
// h2rpc name, e.g. the server for gRPC C++'s threads when a gRPC C++
// server shares the process with an h2rpc client. Applies to their
// allocations from now on.
void SetDefaultRole(ThreadRole role);
// The calling thread's role from now on, whatever its name.
void SetThisThreadRole(ThreadRole role);

// Allocations (and bytes requested) counted so far for `role`, by every
// thread of the process, including threads that have exited. Any thread.
struct AllocationTotals {
  int64_t allocations = 0;
  int64_t bytes = 0;
};
AllocationTotals AllocationsByRole(ThreadRole role);

// Heap bytes the process holds now (allocated and not yet freed, by any
// thread, as the allocator sized them: malloc_usable_size, or the
// requested size under a sanitizer), and the most it held at once since
// the last ResetPeakLiveHeapBytes() (before the first: LiveHeapBytes()).
// Exact while no other thread allocates during ResetPeakLiveHeapBytes();
// tracking the peak makes every allocation and free touch one shared
// counter from the first ResetPeakLiveHeapBytes() on.
int64_t LiveHeapBytes();
int64_t PeakLiveHeapBytes();
void ResetPeakLiveHeapBytes();

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_ALLOCATION_COUNTER_H_
