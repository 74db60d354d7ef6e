#ifndef H2RPC_TRANSPORT_CORE_LARGE_BUFFER_CACHE_H_
#define H2RPC_TRANSPORT_CORE_LARGE_BUFFER_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace h2rpc::transport {

// Keeps the storage of large message buffers (strings of at least
// kMinCapacity bytes of capacity) between messages, so that a stream of
// large messages reuses a few blocks of memory that are already mapped
// instead of asking the allocator for fresh ones each time: glibc serves
// such sizes with mmap or from a heap it trims, and the first touch of each
// page of a fresh block costs a page fault, several times the cost of
// copying the message.
//
// Bounded: it keeps at most max_retained_bytes of capacity in at most
// kMaxBuffers buffers; a buffer given beyond that is freed. Take() hands
// out only a buffer whose capacity is within 1/8 of the request, so a
// caller's memory bounds hold within that margin. A buffer that no request
// has taken while kMaxIdleTakes large requests went by is freed, so the
// cache follows the sizes in use instead of keeping ones no longer asked for
// (and several sizes in use at once each keep their buffers).
//
// A buffer keeps its size through the cache: the bytes a caller gets are a
// previous user's. std::string cannot grow without writing every new byte,
// so a caller that will overwrite n bytes calls resize(n), which writes only
// the bytes past the size the buffer came with (none when the previous
// message was as large), rather than clear() and resize(n), which writes
// all n. Owners give buffers back without clearing them.
//
// Thread-safe: one mutex, taken once per Take() and Give() of a large
// buffer (small ones never reach it). Neither allocates except Take(),
// which reserves a new buffer when none fits.
class LargeBufferCache {
 public:
  static constexpr size_t kMinCapacity = 64 << 10;
  static constexpr size_t kMaxBuffers = 512;
  static constexpr size_t kDefaultMaxRetainedBytes = 32 << 20;
  // Large requests (Take() and TakeCached() of at least kMinCapacity) a
  // cached buffer may see go by before it is freed.
  static constexpr uint64_t kMaxIdleTakes = 1024;

  // The process's cache, used by the HTTP/2 sessions' send buffers and
  // deframers. Never destroyed.
  static LargeBufferCache& Global();

  explicit LargeBufferCache(
      size_t max_retained_bytes = kDefaultMaxRetainedBytes)
      : max_retained_bytes_(max_retained_bytes) {
    buffers_.reserve(kMaxBuffers);
  }
  LargeBufferCache(const LargeBufferCache&) = delete;
  LargeBufferCache& operator=(const LargeBufferCache&) = delete;

  // Gives `*buffer` (whose contents are discarded) a capacity of at least
  // `capacity` bytes: the cached buffer of the smallest capacity in
  // [capacity, capacity + capacity / 8] if there is one (true), with the
  // size and bytes it was given back with; else an empty new reservation
  // (false; throws std::bad_alloc as std::string::reserve does). A buffer
  // already large enough is left as it is (false).
  bool Take(size_t capacity, std::string* buffer);

  // As Take(), but only from the cache: on a miss returns false with
  // `*buffer` untouched. Never allocates.
  [[nodiscard]] bool TakeCached(size_t capacity, std::string* buffer);

  // Takes `*buffer` (storage, size and bytes) if its capacity is at least
  // kMinCapacity and the cache has room (else frees it); `*buffer` is left
  // empty with no heap storage either way.
  void Give(std::string* buffer);

  // Frees every cached buffer.
  void Clear();

  size_t retained_bytes() const;
  size_t retained_buffers() const;
  size_t max_retained_bytes() const;
  // Frees cached buffers as needed to stay within the new bound.
  void set_max_retained_bytes(size_t bytes);

 private:
  struct Cached {
    std::string buffer;
    uint64_t given_at;  // takes_ when it was given
  };

  void EvictToFit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Frees the buffers that kMaxIdleTakes requests went by.
  void EvictIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Takes buffers_[index] out of the cache.
  std::string Remove(size_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  mutable Mutex mutex_;
  // Oldest first.
  std::vector<Cached> buffers_ ABSL_GUARDED_BY(mutex_);
  uint64_t takes_ ABSL_GUARDED_BY(mutex_) = 0;
  size_t retained_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  size_t max_retained_bytes_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace h2rpc::transport

#endif  // H2RPC_TRANSPORT_CORE_LARGE_BUFFER_CACHE_H_
