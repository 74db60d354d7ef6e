// Under AddressSanitizer or ThreadSanitizer, whose runtime interposes
// malloc and the rest, its allocation hooks feed the books of
// allocation_counter.cc: every user allocation and free.
#include "test/util/allocation_record.h"

#ifdef H2RPC_SANITIZER_HEAP

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

using h2rpc::testing::allocation_internal::RecordAllocation;
using h2rpc::testing::allocation_internal::RecordFree;

// sanitizer/allocator_interface.h, which GCC does not ship.
extern "C" {
int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void*, size_t),
    void (*free_hook)(const volatile void*));
size_t __sanitizer_get_allocated_size(const volatile void* p);
}

namespace {

// Every user allocation: malloc and the rest, and operator new.
void OnAllocation(const volatile void* p, size_t size) {
  RecordAllocation(size, size);
}

void OnFree(const volatile void* p) {
  if (p != nullptr) RecordFree(__sanitizer_get_allocated_size(p));
}

const bool hooks_installed = [] {
  if (__sanitizer_install_malloc_and_free_hooks(&OnAllocation, &OnFree) == 0) {
    std::fprintf(stderr,
                 "allocation_counter: the sanitizer took no more allocation "
                 "hooks\n");
    std::abort();
  }
  return true;
}();

}  // namespace

#ifdef H2RPC_THREAD_SANITIZER_HEAP
// ThreadSanitizer runs no hook for the aligned allocations, and gives its
// hook the wrong size for reallocarray: these are interposed here, counted,
// and handed to its own. Their frees run the free hook.
extern "C" {
void* __interceptor_memalign(size_t alignment, size_t size);
void* __interceptor_aligned_alloc(size_t alignment, size_t size);
int __interceptor_posix_memalign(void** out, size_t alignment, size_t size);
void* __interceptor_valloc(size_t size);
void* __interceptor_pvalloc(size_t size);
}

namespace {

void* Counted(void* p, size_t requested) {
  if (p != nullptr) OnAllocation(p, requested);
  return p;
}

}  // namespace

extern "C" {

void* memalign(size_t alignment, size_t size) noexcept {
  return Counted(__interceptor_memalign(alignment, size), size);
}

void* aligned_alloc(size_t alignment, size_t size) noexcept {
  return Counted(__interceptor_aligned_alloc(alignment, size), size);
}

int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  const int error = __interceptor_posix_memalign(out, alignment, size);
  if (error == 0) OnAllocation(*out, size);
  return error;
}

void* valloc(size_t size) noexcept {
  return Counted(__interceptor_valloc(size), size);
}

// Through its realloc, which gives its hook the size.
void* reallocarray(void* p, size_t count, size_t size) noexcept {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

// As ThreadSanitizer sizes it: whole pages.
void* pvalloc(size_t size) noexcept {
  void* const p = __interceptor_pvalloc(size);
  return Counted(p, p != nullptr ? __sanitizer_get_allocated_size(p) : 0);
}

}  // extern "C"
#endif  // H2RPC_THREAD_SANITIZER_HEAP

#endif  // H2RPC_SANITIZER_HEAP
