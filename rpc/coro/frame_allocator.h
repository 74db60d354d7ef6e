#ifndef H2RPC_RPC_CORO_FRAME_ALLOCATOR_H_
#define H2RPC_RPC_CORO_FRAME_ALLOCATOR_H_

#include <cstddef>

namespace h2rpc::coro {

// The storage of coroutine frames (every Task's) and of the coroutine calls'
// states (rpc/coro/client.h, rpc/coro/server.h), recycled so that a warm call
// allocates nothing: the heap is reached only when a thread's cache has no
// block of the size class.
//
// Any thread. A block goes back to the cache of the thread that frees it,
// whichever thread allocated it; so a frame made and freed on one event loop
// thread (a server handler's, a client coroutine's that runs on its channel's
// loop) is reused there without allocating, while a thread that only frees
// (or only allocates) gains nothing. Sizes up to kLargestRecycledBlock are
// rounded up to a power of two from 64 bytes; larger ones go to the heap every
// time. Each thread keeps at most kCachedBytesPerClass bytes of each size
// class (at least 8 blocks); its cache goes back to the heap when the thread
// exits. Under AddressSanitizer a cached block is poisoned, so a frame used
// after it ended is still reported.
inline constexpr std::size_t kLargestRecycledBlock = 16384;
inline constexpr std::size_t kCachedBytesPerClass = 128 * 1024;

// A block of at least `bytes` bytes, aligned as operator new aligns.
void* AllocateFrame(std::size_t bytes);
// Returns a block from AllocateFrame(`bytes`) (the same `bytes`).
void FreeFrame(void* block, std::size_t bytes) noexcept;

}  // namespace h2rpc::coro

#endif  // H2RPC_RPC_CORO_FRAME_ALLOCATOR_H_
