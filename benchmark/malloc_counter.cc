#include "benchmark/malloc_counter.h"

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define H2RPC_MALLOC_COUNTER_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define H2RPC_MALLOC_COUNTER_ENABLED 0
#endif
#endif
#ifndef H2RPC_MALLOC_COUNTER_ENABLED
#define H2RPC_MALLOC_COUNTER_ENABLED 1
#endif

namespace h2rpc::benchmark {
namespace {

constexpr int kRoles = 3;
std::atomic<int64_t> role_allocations[kRoles];
std::atomic<int64_t> role_bytes[kRoles];
std::atomic<int> default_role{static_cast<int>(Role::kHarness)};

// -1: not known yet. A thread may be named after its first allocations, so
// an unnamed thread's name is read again, but only every kNameRecheck
// allocations: reading it is a system call.
thread_local int thread_role = -1;
thread_local int allocations_until_name_check = 0;
constexpr int kNameRecheck = 1024;

int RoleFromName() {
  // For the calling thread glibc reads the name with prctl: no allocation.
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  if (std::strncmp(name, "h2rpc-channel", 13) == 0) {
    return static_cast<int>(Role::kClient);
  }
  if (std::strncmp(name, "h2rpc-server", 12) == 0 ||
      std::strncmp(name, "h2rpc-worker", 12) == 0) {
    return static_cast<int>(Role::kServer);
  }
  return -1;
}

int CurrentRole() {
  if (thread_role >= 0) return thread_role;
  if (--allocations_until_name_check <= 0) {
    thread_role = RoleFromName();
    if (thread_role >= 0) return thread_role;
    allocations_until_name_check = kNameRecheck;
  }
  return default_role.load(std::memory_order_relaxed);
}

void Count(size_t size) {
  const int role = CurrentRole();
  role_allocations[role].fetch_add(1, std::memory_order_relaxed);
  role_bytes[role].fetch_add(static_cast<int64_t>(size),
                             std::memory_order_relaxed);
}

}  // namespace

bool MallocCounterAvailable() { return H2RPC_MALLOC_COUNTER_ENABLED != 0; }

void SetDefaultRole(Role role) {
  default_role.store(static_cast<int>(role), std::memory_order_relaxed);
}

void SetThisThreadRole(Role role) { thread_role = static_cast<int>(role); }

AllocationCount AllocationsOf(Role role) {
  const int i = static_cast<int>(role);
  return {role_allocations[i].load(std::memory_order_relaxed),
          role_bytes[i].load(std::memory_order_relaxed)};
}

}  // namespace h2rpc::benchmark

#if H2RPC_MALLOC_COUNTER_ENABLED
// glibc's own implementations, which the interposed functions count and
// forward to.
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);

void* malloc(size_t size) {
  h2rpc::benchmark::Count(size);
  return __libc_malloc(size);
}

void* calloc(size_t count, size_t size) {
  h2rpc::benchmark::Count(count * size);
  return __libc_calloc(count, size);
}

void* realloc(void* p, size_t size) {
  h2rpc::benchmark::Count(size);
  return __libc_realloc(p, size);
}

void* memalign(size_t alignment, size_t size) {
  h2rpc::benchmark::Count(size);
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  h2rpc::benchmark::Count(size);
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) {
    return 22;  // EINVAL
  }
  h2rpc::benchmark::Count(size);
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}

void* valloc(size_t size) {
  h2rpc::benchmark::Count(size);
  return __libc_valloc(size);
}
}  // extern "C"
#endif  // H2RPC_MALLOC_COUNTER_ENABLED
