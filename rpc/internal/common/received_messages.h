#ifndef H2RPC_RPC_INTERNAL_COMMON_RECEIVED_MESSAGES_H_
#define H2RPC_RPC_INTERNAL_COMMON_RECEIVED_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/compression_algorithm.h"
#include "base/status.h"
#include "transport/compression/thread_codecs.h"
#include "transport/core/large_buffer_cache.h"

namespace h2rpc::internal {

// Messages a stream received before the application asked for them, in
// order, each with the flow-control bytes it holds. Loop thread only.
//
// Memory: the messages lie back to back in one buffer, each behind a
// header of 1 to 10 bytes (a varint of its length and flags, and only for a
// message queued decompressed, a varint of its held bytes), so a queued
// message costs no more than its bytes on the wire (its 5-byte gRPC prefix
// included): the queue holds at most what the peer sent within its
// flow-control windows, however small its messages. A message that arrived
// compressed is kept as received (compressed) and decompressed when taken,
// for the same reason. When the buffer is full, the live records move to
// its front only if the taken bytes before them are as many (so each byte
// taken pays for at most one byte moved, however deep the queue); else it
// grows, to less than four times the live bytes. It keeps up to
// kRetainedCapacity of capacity once drained, so a stream that queues
// messages of a steady size stops allocating once warm; a larger buffer
// goes back to transport::LargeBufferCache::Global().
//
// A message of kOwnBufferSize bytes or more keeps only its header in that
// buffer; its bytes get a buffer of their own from
// transport::LargeBufferCache::Global(), which gets it back when the
// message is taken. So a deep queue of large messages (a reader slower
// than a long, fast path) reuses memory the process has touched already
// instead of growing one buffer into fresh pages on every burst, whose
// page faults cost several times the copy. Nothing is allocated until the
// first message is queued.
class ReceivedMessages {
 public:
  ReceivedMessages() = default;
  ReceivedMessages(const ReceivedMessages&) = delete;
  ReceivedMessages& operator=(const ReceivedMessages&) = delete;
  ~ReceivedMessages() { Drop(); }

  bool empty() const { return count_ == 0; }
  // Messages queued.
  size_t size() const { return count_; }
  // Bytes of the queue's buffer (capacity), for tests and accounting.
  size_t capacity_bytes() const { return bytes_.capacity(); }

  // Queues `message`: its bytes as the application sees them
  // (`compressed`: it arrived compressed and was decompressed), or, with
  // `encoding` other than identity, as received, compressed with `encoding`
  // and decompressed by TakeFront() to at most `max_size` bytes (a stream's
  // encoding and limit: the same for every message of the queue).
  // `held_bytes`: the flow-control bytes it holds, returned by
  // front_held_bytes(). Invalidates the view TakeFront() gave.
  void Push(absl::string_view message, bool compressed, size_t held_bytes,
            CompressionAlgorithm encoding = CompressionAlgorithm::kIdentity,
            size_t max_size = 0);

  // The oldest message as the application sees it, decompressed if it is
  // queued compressed (into the thread's scratch buffer, see
  // transport::compression::DecompressMessage); valid until Pop(), Push()
  // or the thread's next decompression. A message that does not
  // decompress, or inflates beyond its limit, gives that error. Not empty().
  Status TakeFront(absl::string_view* message) const;
  // Whether the oldest message arrived compressed.
  bool front_compressed() const { return Front().flags & kArrivedCompressed; }
  size_t front_held_bytes() const { return Front().held_bytes; }
  // Drops the oldest message. Not empty().
  void Pop();
  // Drops every message, keeping up to `retained_capacity` bytes of
  // capacity.
  void Clear(size_t retained_capacity) {
    Drop();
    if (bytes_.capacity() > retained_capacity) std::string().swap(bytes_);
  }

  // Capacity the buffer keeps once drained. Bytes.
  static constexpr size_t kRetainedCapacity = 64 << 10;
  // Messages this large (as queued) get a buffer of their own. Bytes.
  static constexpr size_t kOwnBufferSize =
      transport::LargeBufferCache::kMinCapacity;

 private:
  // Header flags, in the low bits of the first varint.
  static constexpr uint64_t kArrivedCompressed = 1;
  // Queued as received; TakeFront() decompresses it.
  static constexpr uint64_t kQueuedCompressed = 2;
  // A varint of the held bytes follows; without it they are the message's
  // wire size: its length plus the 5-byte gRPC prefix.
  static constexpr uint64_t kExplicitHeld = 4;
  // The message's bytes are in own_buffers_, not after the header.
  static constexpr uint64_t kOwnBuffer = 8;
  static constexpr int kFlagBits = 4;

  // The oldest record, decoded.
  struct Record {
    uint64_t flags = 0;
    size_t held_bytes = 0;
    size_t header_size = 0;
    absl::string_view message;
  };
  Record Front() const;
  // Empties the buffer, keeping up to kRetainedCapacity of capacity, and
  // gives the own buffers back.
  void Drop();

  // bytes_[head_, bytes_.size()) holds count_ records.
  std::string bytes_;
  size_t head_ = 0;
  size_t count_ = 0;
  // The bytes of the kOwnBuffer records, in order: a ring of
  // own_count_ buffers from own_head_ (the vector keeps its slots).
  std::vector<std::string> own_buffers_;
  size_t own_head_ = 0;
  size_t own_count_ = 0;
  CompressionAlgorithm encoding_ = CompressionAlgorithm::kIdentity;
  size_t max_size_ = 0;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_RECEIVED_MESSAGES_H_
