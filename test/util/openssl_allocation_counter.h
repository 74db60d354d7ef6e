#ifndef H2RPC_TEST_UTIL_OPENSSL_ALLOCATION_COUNTER_H_
#define H2RPC_TEST_UTIL_OPENSSL_ALLOCATION_COUNTER_H_

#include <cstdint>

namespace h2rpc::testing {

// Counts OpenSSL's own heap allocations (CRYPTO_malloc and CRYPTO_realloc,
// which AllocationCounter does not see: OpenSSL calls malloc directly) made
// by the current thread while an instance is alive. Linking
// //test/util:openssl_allocation_counter installs counting allocator hooks
// (CRYPTO_set_mem_functions) before main, ahead of any OpenSSL allocation;
// constructing a counter aborts if the hooks could not be installed.
class OpenSslAllocationCounter {
 public:
  OpenSslAllocationCounter();

  // Allocations by this thread since construction.
  int64_t allocations() const;

 private:
  int64_t start_;
};

// OpenSSL's allocations by every thread of the process so far.
int64_t OpenSslAllocationsInProcess();

}  // namespace h2rpc::testing

#endif  // H2RPC_TEST_UTIL_OPENSSL_ALLOCATION_COUNTER_H_
