// In a plain build the executable defines malloc and the rest, which
// interposes them on every library (glibc resolves its own calls through
// the executable too): each counts in the books of allocation_counter.cc
// and forwards to glibc's implementation.
#include "test/util/allocation_record.h"

#ifndef H2RPC_SANITIZER_HEAP

#include <unistd.h>

#include <cerrno>
#include <cstddef>

using h2rpc::testing::allocation_internal::RecordAllocation;
using h2rpc::testing::allocation_internal::RecordFree;

// glibc's own implementations (and malloc_usable_size, which glibc's
// free() and realloc() need no replacement for). noexcept as glibc
// declares them (__THROW).
extern "C" {
void* __libc_malloc(size_t size) noexcept;
void* __libc_calloc(size_t count, size_t size) noexcept;
void* __libc_realloc(void* p, size_t size) noexcept;
void* __libc_memalign(size_t alignment, size_t size) noexcept;
void* __libc_valloc(size_t size) noexcept;
void* __libc_pvalloc(size_t size) noexcept;
void __libc_free(void* p) noexcept;
size_t malloc_usable_size(void* p) noexcept;
}

namespace {

void* Counted(void* p, size_t requested) {
  if (p != nullptr) RecordAllocation(requested, malloc_usable_size(p));
  return p;
}

}  // namespace

extern "C" {

void* malloc(size_t size) noexcept {
  return Counted(__libc_malloc(size), size);
}

void* calloc(size_t count, size_t size) noexcept {
  return Counted(__libc_calloc(count, size), count * size);
}

void* realloc(void* p, size_t size) noexcept {
  const size_t old_usable = p != nullptr ? malloc_usable_size(p) : 0;
  void* const moved = __libc_realloc(p, size);
  // Null: p is untouched (out of memory), or freed (size 0).
  if (moved == nullptr && (p == nullptr || size != 0)) return nullptr;
  if (p != nullptr) RecordFree(old_usable);
  return Counted(moved, size);
}

// glibc's calls __libc_realloc directly.
void* reallocarray(void* p, size_t count, size_t size) noexcept {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

void free(void* p) noexcept {
  if (p == nullptr) return;
  RecordFree(malloc_usable_size(p));
  __libc_free(p);
}

void* memalign(size_t alignment, size_t size) noexcept {
  return Counted(__libc_memalign(alignment, size), size);
}

void* aligned_alloc(size_t alignment, size_t size) noexcept {
  return Counted(__libc_memalign(alignment, size), size);
}

int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  if (alignment == 0 || alignment % sizeof(void*) != 0 ||
      (alignment & (alignment - 1)) != 0) {
    return EINVAL;
  }
  void* const p = Counted(__libc_memalign(alignment, size), size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

void* valloc(size_t size) noexcept {
  return Counted(__libc_valloc(size), size);
}

// Whole pages (as a sanitizer counts them).
void* pvalloc(size_t size) noexcept {
  const size_t page = static_cast<size_t>(getpagesize());
  const size_t pages = size == 0 ? page : (size + page - 1) / page * page;
  return Counted(__libc_pvalloc(size), pages);
}

}  // extern "C"

#endif  // !H2RPC_SANITIZER_HEAP
