#include "rpc/coro/frame_allocator.h"

#include <cstdint>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define H2RPC_CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define H2RPC_CORO_ASAN 1
#endif
#endif

#ifdef H2RPC_CORO_ASAN
#include <sanitizer/asan_interface.h>
#define H2RPC_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define H2RPC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define H2RPC_POISON(p, n) ((void)(p), (void)(n))
#define H2RPC_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace h2rpc::coro {
namespace {

constexpr std::size_t kSmallestBlock = 64;
// 64, 128, ..., kLargestRecycledBlock.
constexpr int kClasses = 9;
static_assert(kSmallestBlock << (kClasses - 1) == kLargestRecycledBlock);

int ClassOf(std::size_t bytes) {
  int c = 0;
  while ((kSmallestBlock << c) < bytes) ++c;
  return c;
}

constexpr std::size_t ClassBytes(int c) { return kSmallestBlock << c; }

constexpr uint32_t MaxCached(int c) {
  const std::size_t n = kCachedBytesPerClass / ClassBytes(c);
  return n < 8 ? 8 : static_cast<uint32_t>(n);
}

struct FreeBlock {
  FreeBlock* next;
};

// A thread's cache. Trivially destructible, so it stays usable while other
// thread-local objects are destroyed at thread exit (after ~CacheDrain has
// run, `closed` sends every request to the heap).
struct Cache {
  FreeBlock* head[kClasses];
  uint32_t count[kClasses];
  bool drain_registered;
  bool closed;
};

thread_local Cache cache;

void Drain(Cache& c) {
  for (int i = 0; i < kClasses; ++i) {
    while (c.head[i] != nullptr) {
      FreeBlock* block = c.head[i];
      H2RPC_UNPOISON(block, ClassBytes(i));
      c.head[i] = block->next;
      ::operator delete(block);
    }
    c.count[i] = 0;
  }
}

// Gives the thread's cache back to the heap when the thread exits.
struct CacheDrain {
  bool armed = false;
  ~CacheDrain() {
    Drain(cache);
    cache.closed = true;
  }
};

thread_local CacheDrain cache_drain;

}  // namespace

void* AllocateFrame(std::size_t bytes) {
  if (bytes > kLargestRecycledBlock) return ::operator new(bytes);
  const int c = ClassOf(bytes);
  Cache& local = cache;
  FreeBlock* block = local.head[c];
  if (block != nullptr) {
    H2RPC_UNPOISON(block, ClassBytes(c));
    local.head[c] = block->next;
    --local.count[c];
    return block;
  }
  return ::operator new(ClassBytes(c));
}

void FreeFrame(void* block, std::size_t bytes) noexcept {
  if (bytes > kLargestRecycledBlock) {
    ::operator delete(block);
    return;
  }
  const int c = ClassOf(bytes);
  Cache& local = cache;
  if (!local.drain_registered && !local.closed) {
    // The first store to it constructs it and registers its destructor.
    local.drain_registered = true;
    cache_drain.armed = true;
  }
  if (local.closed || local.count[c] >= MaxCached(c)) {
    ::operator delete(block);
    return;
  }
  auto* free_block = static_cast<FreeBlock*>(block);
  free_block->next = local.head[c];
  local.head[c] = free_block;
  ++local.count[c];
  H2RPC_POISON(block, ClassBytes(c));
}

}  // namespace h2rpc::coro
