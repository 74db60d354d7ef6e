#ifndef H2RPC_RPC_ARENA_OPTIONS_H_
#define H2RPC_RPC_ARENA_OPTIONS_H_

#include <cstddef>

#include "google/protobuf/arena.h"

namespace h2rpc {

// Protobuf arenas whose blocks are recycled process-wide, for messages that
// cost no allocation once warm.
//
// An arena reset between calls keeps only its first block; every other block
// goes back to the allocator. Protobuf 3.21 gives an arena a block of its
// own for each further thread that allocates from it: a response the
// application put on its arena is parsed on the channel's event loop thread,
// a server call's response is filled on a synchronous handler's worker. With
// RecyclingArenaOptions() such blocks are kArenaBlockSize bytes (unless one
// object needs more) and come from, and go back to, a free list shared by
// the process. The server's per-call arenas use it.
//
// Bounded: the free list keeps at most kMaxPooledArenaBlocks blocks; a block
// freed beyond that, or of another size, goes back to the allocator.
// Thread-safe (one mutex per block taken or returned); allocates only when
// the list is empty.
//
//   alignas(8) char first_block[4096];
//   google::protobuf::Arena arena(
//       h2rpc::RecyclingArenaOptions(first_block, sizeof(first_block)));
//   for (;;) {
//     arena.Reset();
//     auto* response = google::protobuf::Arena::CreateMessage<Resp>(&arena);
//     channel->UnaryCall(&context, method, request, response);
//   }
inline constexpr size_t kArenaBlockSize = 4096;
inline constexpr size_t kMaxPooledArenaBlocks = 256;

// Options for an arena whose first block is `initial_block` (of
// `initial_block_size` bytes, aligned to 8, outliving the arena; may be
// null with size 0) and whose other blocks come from the free list.
google::protobuf::ArenaOptions RecyclingArenaOptions(char* initial_block,
                                                     size_t initial_block_size);

// Blocks in the free list now.
size_t PooledArenaBlocks();

}  // namespace h2rpc

#endif  // H2RPC_RPC_ARENA_OPTIONS_H_
