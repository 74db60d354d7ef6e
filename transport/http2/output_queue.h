#ifndef H2RPC_TRANSPORT_HTTP2_OUTPUT_QUEUE_H_
#define H2RPC_TRANSPORT_HTTP2_OUTPUT_QUEUE_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace h2rpc::transport::http2 {

class OutgoingData;

// The bytes a connection has produced and its wire has not yet taken, in
// order, as pieces for a gathering write: frames copied in (HEADERS,
// SETTINGS, DATA frame headers, small payloads) and DATA payloads lent by
// a stream's OutgoingData, which stay in the stream's buffer until the wire
// has taken them (one copy of a large message fewer per side).
//
// Lent bytes are pinned: their lender changes or frees them only after the
// queue let go of them. The queue lets go of a lender's bytes when they are
// written (Consume), copied in (CopyLent: the lender keeps its body to send
// it again), or adopted (Adopt: the lender clears its buffer, which the
// queue then owns until those bytes are written), and of all of them in
// Clear() and the destructor. OutgoingData keeps its side (see
// OutgoingData::SendReserved).
//
// The queue is filled in rounds: Consume() of its last byte empties it and
// starts the next round; appended() counts the bytes of the round, so a
// producer that stops at a limit bounds the queue, its piece list and its
// adopted buffers.
//
// Loop thread only. Allocates only when its copy buffer, piece list or
// adopted-buffer list grows past its largest size so far, and in CopyLent.
class OutputQueue {
 public:
  // Pieces smaller than this are copied rather than lent: a gathering write
  // of many small pieces costs more than the copy. Bytes.
  static constexpr size_t kMinLentBytes = 4 << 10;
  // The most buffer capacity a session's queue keeps adopted at once, for
  // its write_buffer_limit: 16 times it (4 MiB for the default 256 KiB),
  // saturating. What a connection holds beyond its pending bytes, so a peer
  // that reads slowly cannot make it hold every finished body. Bytes.
  static constexpr size_t MaxAdoptedBytesFor(size_t write_buffer_limit) {
    constexpr size_t kFactor = 16;
    return write_buffer_limit > SIZE_MAX / kFactor
               ? SIZE_MAX
               : write_buffer_limit * kFactor;
  }
  // MaxAdoptedBytesFor() the default write_buffer_limit.
  static constexpr size_t kDefaultMaxAdoptedBytes = 4 << 20;

  // Keeps at most `max_adopted_bytes` of adopted buffer capacity (Adopt).
  explicit OutputQueue(size_t max_adopted_bytes = kDefaultMaxAdoptedBytes)
      : max_adopted_bytes_(max_adopted_bytes) {}
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;
  // Lets go of every lender.
  ~OutputQueue();

  // Bytes queued in this round, written or not.
  size_t appended() const { return appended_; }
  // Bytes not yet written.
  size_t pending() const { return pending_; }

  // Copies `bytes` in; returns the copy, valid until the next append.
  char* Append(absl::string_view bytes);
  // Queues `bytes` of `lender`'s buffer without copying them; they stay
  // pinned until the queue lets go of them. For OutgoingData.
  void AppendLent(OutgoingData* lender, absl::string_view bytes);

  // The first unwritten piece; empty when nothing is pending.
  absl::string_view Front() const;
  // Up to `max` unwritten pieces, in order, from the first unwritten byte;
  // returns how many.
  size_t Peek(iovec* pieces, size_t max) const;
  // The first `n` pending bytes were written.
  void Consume(size_t n);

  // Copies in the unwritten bytes `lender` lent and lets go of it, so it
  // may change its buffer.
  void CopyLent(OutgoingData* lender);
  // `lender` clears or frees `*body`, the buffer holding the bytes it lent:
  // the queue takes the buffer (leaving `*body` empty) and keeps it until
  // those bytes are written, then gives it to the LargeBufferCache; or, if
  // that would keep more than max_adopted_bytes of such buffers, copies the
  // bytes (CopyLent). Lets go of `lender` either way.
  void Adopt(OutgoingData* lender, std::string* body);
  // Drops everything (the connection closed) and lets go of every lender.
  void Clear();

 private:
  struct Piece {
    // Lent or adopted bytes; null: `size` bytes of copied_ from `offset`.
    const char* data;
    size_t offset;
    size_t size;
    // Who lent the bytes; null once copied in or adopted.
    OutgoingData* lender;
    // Index in adopted_ of the buffer holding the bytes, or -1.
    int32_t adopted;
  };
  struct AdoptedBuffer {
    std::string body;
    // Unwritten pieces in `body`.
    size_t pieces;
  };

  const char* PieceData(const Piece& piece) const {
    return piece.data != nullptr ? piece.data : copied_.data() + piece.offset;
  }
  // The queue's hold on `piece` ends (written or dropped).
  void LetGo(Piece* piece);
  // Starts the next round.
  void Reset();

  const size_t max_adopted_bytes_;
  std::string copied_;
  std::vector<Piece> pieces_;
  std::vector<AdoptedBuffer> adopted_;
  size_t adopted_bytes_ = 0;  // capacity of the buffers in adopted_ kept
  size_t front_ = 0;          // the first piece not completely written
  size_t front_written_ = 0;  // bytes of it written
  size_t appended_ = 0;
  size_t pending_ = 0;
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_OUTPUT_QUEUE_H_
