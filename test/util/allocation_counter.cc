// Replaces the global operator new/delete with versions that count.
#include "test/util/allocation_counter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace h2rpc::testing {
namespace {

thread_local int64_t thread_allocations = 0;
thread_local int64_t thread_bytes = 0;
std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_live_bytes{0};

void RecordAllocation(void* p, std::size_t size) {
  ++thread_allocations;
  thread_bytes += static_cast<int64_t>(size);
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
                ? std::aligned_alloc(alignment,
                                     (size + alignment - 1) / alignment * alignment)
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
