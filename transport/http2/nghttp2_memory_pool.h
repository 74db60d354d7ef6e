#ifndef H2RPC_TRANSPORT_HTTP2_NGHTTP2_MEMORY_POOL_H_
#define H2RPC_TRANSPORT_HTTP2_NGHTTP2_MEMORY_POOL_H_

#include <nghttp2/nghttp2.h>

#include <cstddef>

namespace h2rpc::transport::http2 {

// The allocator one nghttp2 session uses (nghttp2_mem). Blocks come from the
// global operator new, so nghttp2's memory is visible to whatever allocator
// or allocation counter the application installs. Blocks of up to
// kLargestClass bytes are rounded up to a power of two and, once freed, kept
// in per-size free lists for reuse: the stream objects, frames and header
// copies nghttp2 allocates per request then cost no call into the system
// allocator once the connection is warm. Larger blocks (the session itself,
// its frame buffer, its stream table) are allocated at their exact size and
// freed at once.
//
// Not thread-safe: a session lives on one loop thread. Must outlive the
// session (delete the session first).
class Nghttp2MemoryPool {
 public:
  // Keeps at most `max_cached_bytes` of freed blocks.
  explicit Nghttp2MemoryPool(size_t max_cached_bytes = 1 << 20);
  ~Nghttp2MemoryPool();
  Nghttp2MemoryPool(const Nghttp2MemoryPool&) = delete;
  Nghttp2MemoryPool& operator=(const Nghttp2MemoryPool&) = delete;

  // The largest size rounded up to a class and cached.
  static constexpr size_t kLargestClass = 2048;

  nghttp2_mem* mem() { return &mem_; }
  // Frees cached blocks until at most `max_cached_bytes` remain.
  void Trim(size_t max_cached_bytes);
  size_t cached_bytes() const { return cached_bytes_; }
  // Bytes of the blocks nghttp2 holds now (their capacities).
  size_t in_use_bytes() const { return in_use_bytes_; }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  static constexpr int kClasses = 7;  // 32, 64, ..., kLargestClass bytes

  void* Allocate(size_t size);
  void Free(void* p);
  void* Reallocate(void* p, size_t size);

  static void* MallocHook(size_t size, void* self);
  static void FreeHook(void* p, void* self);
  static void* CallocHook(size_t n, size_t size, void* self);
  static void* ReallocHook(void* p, size_t size, void* self);

  nghttp2_mem mem_;
  FreeBlock* free_[kClasses] = {};
  size_t cached_bytes_ = 0;
  size_t in_use_bytes_ = 0;
  const size_t max_cached_bytes_;
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_NGHTTP2_MEMORY_POOL_H_
