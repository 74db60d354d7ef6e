#ifndef H2RPC_RPC_INTERNAL_RECEIVED_MESSAGES_H_
#define H2RPC_RPC_INTERNAL_RECEIVED_MESSAGES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace h2rpc::internal {

// Messages a stream received before the application asked for them, in
// order (decompressed), each with the flow-control bytes it holds. A ring of
// buffers that keep their capacity (up to kRetainedCapacity), so a stream
// that queues messages of a steady size stops allocating once warm. Its
// length is bounded by the stream's receive window (held messages stop the
// sender).
class ReceivedMessages {
 public:
  // Room for a few messages from the start (with the call, not with its
  // first early message), so a warm ping-pong never allocates.
  ReceivedMessages() : slots_(4) {}

  bool empty() const { return size_ == 0; }

  void Push(absl::string_view message, bool compressed, size_t held_bytes) {
    if (size_ == slots_.size()) Grow();
    Slot& slot = slots_[(head_ + size_) % slots_.size()];
    slot.bytes.assign(message.data(), message.size());
    slot.compressed = compressed;
    slot.held_bytes = held_bytes;
    ++size_;
  }
  // The oldest message; valid until Pop().
  absl::string_view front() const { return slots_[head_].bytes; }
  // Whether it arrived compressed (it is held decompressed).
  bool front_compressed() const { return slots_[head_].compressed; }
  size_t front_held_bytes() const { return slots_[head_].held_bytes; }
  // Drops the oldest message. Its slot keeps up to kRetainedCapacity for
  // later messages; a larger buffer is freed.
  void Pop() {
    std::string& bytes = slots_[head_].bytes;
    if (bytes.capacity() > kRetainedCapacity) std::string().swap(bytes);
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
