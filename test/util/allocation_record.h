#ifndef H2RPC_TEST_UTIL_ALLOCATION_RECORD_H_
#define H2RPC_TEST_UTIL_ALLOCATION_RECORD_H_

// What the heap entry points (glibc_heap_hooks.cc, sanitizer_heap_hooks.cc)
// tell the books of allocation_counter.cc. Internal to
// //test/util:allocation_counter.

#include <cstddef>

// Whose heap this build has: a sanitizer's (its runtime interposes malloc
// and the rest), or glibc's.
#if defined(__SANITIZE_ADDRESS__)
#define H2RPC_SANITIZER_HEAP 1
#elif defined(__SANITIZE_THREAD__)
#define H2RPC_SANITIZER_HEAP 1
#define H2RPC_THREAD_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define H2RPC_SANITIZER_HEAP 1
#elif __has_feature(thread_sanitizer)
#define H2RPC_SANITIZER_HEAP 1
#define H2RPC_THREAD_SANITIZER_HEAP 1
#endif
#endif

namespace h2rpc::testing::allocation_internal {

// The calling thread made one allocation of `requested` bytes, which the
// allocator sized `usable`. Never allocates.
void RecordAllocation(size_t requested, size_t usable);
// The calling thread freed a block the allocator sized `usable`. Never
// allocates.
void RecordFree(size_t usable);

}  // namespace h2rpc::testing::allocation_internal

#endif  // H2RPC_TEST_UTIL_ALLOCATION_RECORD_H_
