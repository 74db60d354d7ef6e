#ifndef H2RPC_RPC_INTERNAL_RECEIVED_MESSAGES_H_
#define H2RPC_RPC_INTERNAL_RECEIVED_MESSAGES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "rpc/status.h"
#include "transport/compression/compression_algorithm.h"
#include "transport/compression/thread_codecs.h"
#include "transport/core/large_buffer_cache.h"

namespace h2rpc::internal {

// Messages a stream received before the application asked for them, in
// order, each with the flow-control bytes it holds. A message that arrived
// compressed is kept as received (compressed) and decompressed when taken,
// so the queue holds no more bytes than the peer sent within its
// flow-control windows, however well they compress. A ring of
// buffers that keep their capacity (up to kRetainedCapacity), so a stream
// that queues messages of a steady size stops allocating once warm; larger
// buffers come from and go back to transport::LargeBufferCache::Global(). Its
// length is bounded by the stream's receive window (held messages stop the
// sender).
class ReceivedMessages {
 public:
  // Room for a few messages from the start (with the call, not with its
  // first early message), so a warm ping-pong never allocates.
  ReceivedMessages() : slots_(4) {}

  bool empty() const { return size_ == 0; }

  // Queues `message`: its bytes as the application sees them
  // (`compressed`: it arrived compressed and was decompressed), or, with
  // `encoding` other than identity, as received, compressed with `encoding`
  // and decompressed by TakeFront() to at most `max_size` bytes.
  void Push(absl::string_view message, bool compressed, size_t held_bytes,
            transport::compression::CompressionAlgorithm encoding =
                transport::compression::CompressionAlgorithm::kIdentity,
            size_t max_size = 0) {
    if (size_ == slots_.size()) Grow();
    Slot& slot = slots_[(head_ + size_) % slots_.size()];
    if (message.size() > kRetainedCapacity) {
      transport::LargeBufferCache::Global().Take(message.size(), &slot.bytes);
    }
    slot.bytes.assign(message.data(), message.size());
    slot.compressed = compressed;
    slot.held_bytes = held_bytes;
    slot.encoding = encoding;
    slot.max_size = max_size;
    ++size_;
  }
  // The oldest message as the application sees it, decompressed if it is
  // queued compressed (into the thread's scratch buffer, see
  // transport::compression::DecompressMessage); valid until Pop() or the
  // thread's next decompression. A message that does not decompress, or
  // inflates beyond its limit, gives that error.
  Status TakeFront(absl::string_view* message) const {
    const Slot& slot = slots_[head_];
    if (slot.encoding ==
        transport::compression::CompressionAlgorithm::kIdentity) {
      *message = slot.bytes;
      return Status();
    }
    return transport::compression::DecompressMessage(slot.bytes, slot.encoding,
                                                     slot.max_size, message);
  }
  // Whether it arrived compressed.
  bool front_compressed() const { return slots_[head_].compressed; }
  size_t front_held_bytes() const { return slots_[head_].held_bytes; }
  // Drops the oldest message. Its slot keeps up to kRetainedCapacity for
  // later messages; a larger buffer goes back to the cache.
  void Pop() {
    std::string& bytes = slots_[head_].bytes;
    if (bytes.capacity() > kRetainedCapacity) {
      transport::LargeBufferCache::Global().Give(&bytes);
    }
    head_ = (head_ + 1) % slots_.size();
    --size_;
  }

  // Bytes of capacity a slot keeps once its message is taken.
  static constexpr size_t kRetainedCapacity = 64 << 10;

 private:
  struct Slot {
    std::string bytes;
    bool compressed = false;
    size_t held_bytes = 0;
    // Identity: `bytes` are the message; else compressed with this.
    transport::compression::CompressionAlgorithm encoding =
        transport::compression::CompressionAlgorithm::kIdentity;
    size_t max_size = 0;
  };

  // Doubles the ring, unrolling it so the oldest message is first.
  void Grow() {
    std::vector<Slot> grown(2 * slots_.size());
    for (size_t i = 0; i < size_; ++i) {
      grown[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    }
    slots_ = std::move(grown);
    head_ = 0;
  }

  std::vector<Slot> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_RECEIVED_MESSAGES_H_
