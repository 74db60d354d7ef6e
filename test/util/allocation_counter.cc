// Replaces the global operator new/delete with versions that count.
#include "test/util/allocation_counter.h"

#include <malloc.h>
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace h2rpc::testing {
namespace {

thread_local int64_t thread_allocations = 0;
thread_local int64_t thread_bytes = 0;
std::atomic<int64_t> live_bytes{0};

constexpr int kRoles = 3;
std::atomic<int64_t> role_allocations[kRoles];
std::atomic<int64_t> role_bytes[kRoles];
// -1 until the thread has an h2rpc name (it may get one after its first
// allocations); looked up again until then.
thread_local int thread_role = -1;

int CurrentRole() {
  if (thread_role >= 0) return thread_role;
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  if (std::strncmp(name, "h2rpc-channel", 13) == 0) {
    thread_role = static_cast<int>(ThreadRole::kClient);
  } else if (std::strncmp(name, "h2rpc-server", 12) == 0 ||
             std::strncmp(name, "h2rpc-worker", 12) == 0) {
    thread_role = static_cast<int>(ThreadRole::kServer);
  } else {
    return static_cast<int>(ThreadRole::kOther);
  }
  return thread_role;
}
std::atomic<int64_t> peak_live_bytes{0};

void RecordAllocation(void* p, std::size_t size) {
  ++thread_allocations;
  thread_bytes += static_cast<int64_t>(size);
  const int role = CurrentRole();
  role_allocations[role].fetch_add(1, std::memory_order_relaxed);
  role_bytes[role].fetch_add(static_cast<int64_t>(size),
                             std::memory_order_relaxed);
  const int64_t live =
      live_bytes.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) +
      static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = peak_live_bytes.load(std::memory_order_relaxed);
  while (live > peak && !peak_live_bytes.compare_exchange_weak(
                            peak, live, std::memory_order_relaxed)) {
  }
}

void* Allocate(std::size_t size, std::size_t alignment, bool nothrow) {
  if (size == 0) size = 1;
  void* p = alignment > alignof(std::max_align_t)
                ? std::aligned_alloc(
                      alignment, (size + alignment - 1) / alignment * alignment)
                : std::malloc(size);
  if (p == nullptr) {
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  RecordAllocation(p, size);
  return p;
}

void Deallocate(void* p) {
  if (p == nullptr) return;
  live_bytes.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

AllocationCounter::AllocationCounter() { Reset(); }

int64_t AllocationCounter::allocations() const {
  return thread_allocations - start_allocations_;
}

int64_t AllocationCounter::bytes() const { return thread_bytes - start_bytes_; }

void AllocationCounter::Reset() {
  start_allocations_ = thread_allocations;
  start_bytes_ = thread_bytes;
}

AllocationTotals AllocationsByRole(ThreadRole role) {
  const int i = static_cast<int>(role);
  return {role_allocations[i].load(std::memory_order_relaxed),
          role_bytes[i].load(std::memory_order_relaxed)};
}

int64_t LiveHeapBytes() { return live_bytes.load(std::memory_order_relaxed); }

int64_t PeakLiveHeapBytes() {
  return peak_live_bytes.load(std::memory_order_relaxed);
}

void ResetPeakLiveHeapBytes() {
  peak_live_bytes.store(live_bytes.load(std::memory_order_relaxed),
                        std::memory_order_relaxed);
}

}  // namespace h2rpc::testing

using h2rpc::testing::Allocate;
using h2rpc::testing::Deallocate;

void* operator new(std::size_t n) { return Allocate(n, 0, false); }
void* operator new[](std::size_t n) { return Allocate(n, 0, false); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n, 0, true);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n, 0, true);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return Allocate(n, static_cast<std::size_t>(a), false);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return Allocate(n, static_cast<std::size_t>(a), false);
}
void* operator new(std::size_t n, std::align_val_t a,
                   const std::nothrow_t&) noexcept {
  return Allocate(n, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a,
                     const std::nothrow_t&) noexcept {
  return Allocate(n, static_cast<std::size_t>(a), true);
}

void operator delete(void* p) noexcept { Deallocate(p); }
void operator delete[](void* p) noexcept { Deallocate(p); }
void operator delete(void* p, std::size_t) noexcept { Deallocate(p); }
void operator delete[](void* p, std::size_t) noexcept { Deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  Deallocate(p);
}
void operator delete(void* p, std::align_val_t) noexcept { Deallocate(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Deallocate(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  Deallocate(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  Deallocate(p);
}
