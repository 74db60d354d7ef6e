#include "test/util/openssl_allocation_counter.h"

#include <openssl/crypto.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace h2rpc::testing {
namespace {

thread_local int64_t openssl_allocations = 0;
std::atomic<int64_t> process_allocations{0};

void* CountingMalloc(size_t size, const char*, int) {
  ++openssl_allocations;
  process_allocations.fetch_add(1, std::memory_order_relaxed);
  return malloc(size);
}

void* CountingRealloc(void* block, size_t size, const char*, int) {
  ++openssl_allocations;
  process_allocations.fetch_add(1, std::memory_order_relaxed);
  return realloc(block, size);
}

void PlainFree(void* block, const char*, int) { free(block); }

// Before main: OpenSSL accepts new hooks only before its first allocation.
const bool hooks_installed =
    CRYPTO_set_mem_functions(CountingMalloc, CountingRealloc, PlainFree) == 1;

}  // namespace

OpenSslAllocationCounter::OpenSslAllocationCounter()
    : start_(openssl_allocations) {
  if (!hooks_installed) {
    fprintf(stderr,
            "OpenSslAllocationCounter: OpenSSL allocated before the counting "
            "hooks could be installed\n");
    abort();
  }
}

int64_t OpenSslAllocationCounter::allocations() const {
  return openssl_allocations - start_;
}

int64_t OpenSslAllocationsInProcess() {
  return process_allocations.load(std::memory_order_relaxed);
}

}  // namespace h2rpc::testing
