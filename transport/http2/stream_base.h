#ifndef H2RPC_TRANSPORT_HTTP2_STREAM_BASE_H_
#define H2RPC_TRANSPORT_HTTP2_STREAM_BASE_H_

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/compression_algorithm.h"
#include "base/status.h"
#include "transport/compression/thread_codecs.h"
#include "transport/core/header_field.h"
#include "transport/core/memory_quota.h"
#include "transport/core/message_deframer.h"
#include "transport/core/message_framer.h"
#include "transport/http2/output_queue.h"

namespace h2rpc::transport::http2 {

// Bytes queued to go out as a stream's DATA frames. nghttp2 pulls them with
// NGHTTP2_DATA_FLAG_NO_COPY: the read callback only reserves a length, and
// the send-data callback hands the bytes to the connection's OutputQueue
// (SendReserved): a large finished body is lent to it, so the wire writes
// it from here; anything else is copied into the queue's coalesced buffer.
// The buffer keeps up to kRetainedCapacity of capacity across messages and
// calls; a larger one goes to the LargeBufferCache once drained (or
// cleared).
//
// With a memory quota (servers), the bytes waiting here are charged to it:
// whoever appends calls ChargeAppended() before resuming the stream, and
// bytes return to the quota as they are written to the connection.
class OutgoingData {
 public:
  // Told when the bytes not yet written drop to a threshold (see
  // NotifyWhenPendingAtMost). Runs inside nghttp2's send callback: it must
  // not call into the connection (post a task instead).
  class DrainListener {
   public:
    virtual void OnOutgoingDrained() = 0;

   protected:
    ~DrainListener() = default;
  };

  // Capacity kept once the buffer is drained or cleared. Bytes.
  static constexpr size_t kRetainedCapacity = 64 << 10;

  OutgoingData() = default;
  OutgoingData(const OutgoingData&) = delete;
  OutgoingData& operator=(const OutgoingData&) = delete;
  // A queue holding lent bytes adopts the buffer.
  ~OutgoingData();

  // Appends bytes (never after set_end_of_data()); the caller then calls
  // ChargeAppended() and resumes the stream's data.
  std::string& buffer() { return buffer_; }
  // Loop thread. Charges the bytes appended since the last charge to the
  // quota (see set_quota; OK at once without one). If the quota refuses
  // them, removes them again (nothing of them was sent) and returns
  // RESOURCE_EXHAUSTED naming the quota. Allocates only on a refusal.
  Status ChargeAppended();
  // The quota that bytes waiting here are charged to; null: none. Gives
  // what is charged to the previous one back.
  void set_quota(MemoryQuotaShare* quota);
  // Bytes charged to the quota now.
  size_t charged() const { return charged_; }
  // No more bytes will be appended: the last DATA frame ends the body.
  void set_end_of_data() { end_of_data_ = true; }
  bool end_of_data() const { return end_of_data_; }

  // Bytes not yet handed to nghttp2 by Reserve().
  size_t unreserved() const { return buffer_.size() - reserved_; }
  // Hands up to `max` bytes to the next DATA frame; returns how many.
  size_t Reserve(size_t max);
  // Hands the next `n` reserved bytes to `queue` (the send-data callback).
  // At least OutputQueue::kMinLentBytes of a finished body (end_of_data())
  // in a buffer larger than kRetainedCapacity are lent when `queue` holds
  // no bytes of another connection's: they stay here, unchanged, until the
  // queue lets go of them (the body is never appended to; Clear() and the
  // destructor hand the buffer to the queue, OutputQueue::Adopt).
  // Everything else is copied.
  void SendReserved(size_t n, OutputQueue* queue);
  // Loop thread, before the body may change or be read off the loop thread
  // (the stream closed): the queue copies what it still holds of it.
  void TakeBackLent();
  // Whether a queue holds lent bytes of the buffer.
  bool lent() const { return lent_pieces_ > 0; }
  // Appended bytes not yet written to the connection.
  size_t pending() const { return buffer_.size() - written_; }
  // Bytes dropped from the buffer's front once written, since the last
  // Clear(): buffer()[i] is the (dropped() + i)-th byte appended.
  uint64_t dropped() const { return dropped_; }
  // Calls `listener` once, when pending() <= `bytes` after a write (the
  // caller checks the current value itself). Replaces an earlier request;
  // null cancels.
  void NotifyWhenPendingAtMost(size_t bytes, DrainListener* listener) {
    drain_threshold_ = bytes;
    drain_listener_ = listener;
  }

  // Set while nghttp2 holds the stream's data deferred (nothing to send).
  bool deferred = false;

  // While set, bytes written stay in the buffer (a stream still writing
  // otherwise drops them), so that Rewind() can send them again: a call
  // that may be retried keeps what it sent until it is committed. Clearing
  // it lets the written bytes go at the next write.
  void set_retain_written(bool retain) { retain_written_ = retain; }
  // Every byte appended and not yet dropped. Bytes.
  size_t size() const { return buffer_.size(); }

  // Makes every byte unsent again, to send the body again on a new stream
  // (a transparent retry of a stream the server refused, or a retried
  // call). Possible only if no written byte was dropped (a complete body,
  // or one written while retained); returns false otherwise.
  bool Rewind();

  // The application appended a framed message of `framed_bytes`; counts
  // its bytes without the prefix.
  void CountMessage(size_t framed_bytes) {
    message_bytes_ += framed_bytes - kMessagePrefixSize;
    ++messages_;
  }
  // Bytes of the messages counted since the last Clear(), prefixes not
  // included (gRPC's sent_total_compressed_message_size).
  uint64_t message_bytes() const { return message_bytes_; }
  // The messages counted since the last call (or the last Clear() or
  // Rewind(): a rewound body is sent, and counted, again). For the
  // session's ConnectionStats, as the body goes out.
  uint32_t TakeUncountedMessages() {
    const uint32_t n = messages_ - messages_taken_;
    messages_taken_ = messages_;
    return n;
  }

  // Empties the queue for reuse, keeping up to kRetainedCapacity of
  // capacity and giving back what is charged to the quota.
  void Clear();

 private:
  friend class OutputQueue;
  // The queue's side of lending.
  void OnLent(OutputQueue* queue) {
    borrower_ = queue;
    ++lent_pieces_;
  }
  void OnReturned() {
    if (--lent_pieces_ == 0) borrower_ = nullptr;
  }
  void OnAllReturned() {
    lent_pieces_ = 0;
    borrower_ = nullptr;
  }

  // Gives back the charge of bytes no longer waiting.
  void ReleaseWritten();
  // Empties the buffer: one larger than kRetainedCapacity goes to the
  // LargeBufferCache with its size (see there), a smaller one is cleared.
  void EmptyBuffer();
  // Lent bytes go with the buffer to the queue holding them.
  void GiveLentBuffer();

  std::string buffer_;
  // The queue holding lent bytes of buffer_ (lent_pieces_ pieces), or null.
  OutputQueue* borrower_ = nullptr;
  size_t lent_pieces_ = 0;
  MemoryQuotaShare* quota_ = nullptr;
  size_t charged_ = 0;
  DrainListener* drain_listener_ = nullptr;
  size_t drain_threshold_ = 0;
  size_t reserved_ = 0;
  size_t written_ = 0;
  uint64_t dropped_ = 0;
  uint64_t message_bytes_ = 0;
  uint32_t messages_ = 0;
  uint32_t messages_taken_ = 0;  // by TakeUncountedMessages()
  bool end_of_data_ = false;
  bool retain_written_ = false;
  bool dropped_sent_bytes_ = false;
};

// Receive-side flow control of one stream. The connection runs with manual
// window updates: bytes return to the peer's windows (nghttp2_session_consume)
// only when the application is done with them. Bytes of a message the
// application has not taken yet are "held"; bytes of a message being
// gathered without a memory grant are "ungranted" (see
// MessageDeframer::ungranted_bytes); everything else (prefixes, messages
// consumed at once, a message being gathered with a grant, data of a stream
// being ignored) is returned as soon as it is received. So a reader that
// stops reading stops the sender once the stream window is full of held
// messages; a message larger than the window still gets through once the
// memory quota grants it, and stalls the sender until then.
class ReceiveWindow {
 public:
  void Received(size_t bytes) { received_ += bytes; }
  // The bytes of the message being gathered that have no memory grant now;
  // they are not returned until it is granted or complete.
  void set_ungranted(size_t bytes) { ungranted_ = bytes; }
  size_t ungranted() const { return ungranted_; }
  // A delivered message of `wire_size` bytes on the wire (compressed, if it
  // was) the application keeps for later: holds its wire bytes (prefix
  // included) and returns them, for Release().
  size_t HoldMessage(size_t wire_size) {
    const size_t bytes = kMessagePrefixSize + wire_size;
    held_ += bytes;
    return bytes;
  }
  void Release(size_t bytes) { held_ -= bytes; }
  // Bytes that may be returned to the peer now (and counts them returned).
  // Zero while held bytes exceed what was not yet returned, e.g. when a
  // large message was returned while being gathered and is now held whole.
  [[nodiscard]] size_t TakeCredit() {
    const size_t kept = held_ + ungranted_;
    const size_t returnable = received_ > kept ? received_ - kept : 0;
    if (closed_ || returnable <= credited_) return 0;
    const size_t credit = returnable - credited_;
    credited_ = returnable;
    return credit;
  }
  // Bytes received and not yet returned (held, ungranted, or returnable
  // but not yet taken).
  size_t unreturned() const { return closed_ ? 0 : received_ - credited_; }
  // Bytes returned so far.
  size_t returned() const { return credited_; }
  // The stream is gone: every byte not yet returned, for the connection
  // window. Later calls return nothing.
  [[nodiscard]] size_t CloseAndTakeAll() {
    if (closed_) return 0;
    closed_ = true;
    return received_ - credited_;
  }
  void Reset() { *this = ReceiveWindow(); }

 private:
  size_t received_ = 0;
  size_t held_ = 0;
  size_t ungranted_ = 0;
  size_t credited_ = 0;
  bool closed_ = false;
};

// The bytes of an nghttp2 rcbuf (a decoded header name or value).
inline absl::string_view RcbufView(nghttp2_rcbuf* buffer) {
  const nghttp2_vec bytes = nghttp2_rcbuf_get_buf(buffer);
  return absl::string_view(reinterpret_cast<const char*>(bytes.base),
                           bytes.len);
}

// The fields of one received header block, held without copying: the
// nghttp2 rcbufs are referenced until Release(). Reused across blocks.
class ReceivedHeaderBlock {
 public:
  ReceivedHeaderBlock() = default;
  ReceivedHeaderBlock(const ReceivedHeaderBlock&) = delete;
  ReceivedHeaderBlock& operator=(const ReceivedHeaderBlock&) = delete;
  ~ReceivedHeaderBlock() { Release(); }

  void Add(nghttp2_rcbuf* name, nghttp2_rcbuf* value);
  // Views of the fields, valid until Release().
  absl::Span<const HeaderField> fields() const { return fields_; }
  bool empty() const { return fields_.empty(); }
  // Drops the references, keeping capacity.
  void Release();

 private:
  std::vector<std::pair<nghttp2_rcbuf*, nghttp2_rcbuf*>> rcbufs_;
  std::vector<HeaderField> fields_;
};

// The sizes on the wire (compressed if they were, without the 5-byte
// prefix) of the messages a stream delivered.
struct DeliveredMessageBytes {
  size_t last = 0;     // the message being delivered
  uint64_t total = 0;  // all of them
};

// Hands each deframed message to a stream observer's OnMessage (client and
// server observers alike), inflating it first when it arrived flagged
// compressed, and records its size on the wire for flow control (see
// ReceiveWindow::HoldMessage) and metrics.
template <class Observer>
class DeliverToObserver final : public MessageDeframer::Listener {
 public:
  // `encoding`: the stream's grpc-encoding. `max_message_size`: the receive
  // limit, which applies to the decompressed size too. `*delivered` counts
  // each message before the observer sees it.
  DeliverToObserver(Observer* observer, CompressionAlgorithm encoding,
                    size_t max_message_size, DeliveredMessageBytes* delivered)
      : observer_(observer),
        encoding_(encoding),
        max_message_size_(max_message_size),
        delivered_(delivered) {}

  Status OnMessage(absl::string_view message, bool compressed) override {
    delivered_->last = message.size();
    delivered_->total += message.size();
    if (!compressed) return observer_->OnMessage(message, false);
    if (observer_->DefersDecompression()) {
      return observer_->OnCompressedMessage(message, encoding_,
                                            max_message_size_);
    }
    absl::string_view inflated;
    Status status = compression::DecompressMessage(
        message, encoding_, max_message_size_, &inflated);
    if (!status.ok()) return status;
    return observer_->OnMessage(inflated, true);
  }

 private:
  Observer* const observer_;
  const CompressionAlgorithm encoding_;
  const size_t max_message_size_;
  DeliveredMessageBytes* const delivered_;
};

}  // namespace h2rpc::transport::http2

#endif  // H2RPC_TRANSPORT_HTTP2_STREAM_BASE_H_
