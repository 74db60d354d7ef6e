#ifndef H2RPC_RPC_INTERNAL_COMMON_STREAM_OPS_H_
#define H2RPC_RPC_INTERNAL_COMMON_STREAM_OPS_H_

#include <atomic>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "rpc/compression.h"
#include "rpc/internal/common/member_task.h"
#include "rpc/internal/common/received_messages.h"
#include "rpc/internal/message_ref.h"
#include "rpc/status.h"
#include "transport/http2/stream_base.h"
#include "transport/io/event_loop.h"

namespace h2rpc::internal {

// The read and write operations of a streaming call, shared by the client
// and the server side. The application starts at most one read and one
// write at a time, from any thread; each runs on the loop thread and
// completes through ReadDone / WriteDone (on the loop thread).
//
// Every task posted to the loop (a read, a write, a misuse report, and the
// derived class's own through BeginOp) counts as an operation until it has
// completed, and the derived class frees the call only once none is
// outstanding, so no task ever finds its call gone. A read or write started
// while another is outstanding is misuse (ReportOpMisuse): it is not
// counted, so it cannot leave an operation that never completes.
//
// Backpressure, both ways:
//  * A message that arrives while no read is waiting is queued and *held*:
//    its bytes stay counted against the peer's flow-control windows until a
//    read takes it, so a reader that stops reading stops the sender. A
//    message arriving for a waiting read is parsed at once and never held.
//  * A write serializes its message straight into the stream's outgoing
//    buffer and completes once no more than `write_buffer_size` bytes wait
//    there (at once if so already; otherwise when the connection has taken
//    enough). So a writer holds at most one message plus that much.
class StreamOps : private transport::http2::OutgoingData::DrainListener {
 public:
  // Any thread. `message` (a protobuf message or a ByteBuffer) must stay
  // valid until ReadDone / WriteDone. A read started on the loop thread
  // while no message is queued waits at once, so the next message is parsed
  // into it as it arrives.
  void StartRead(MessageRef message);
  void StartWrite(ConstMessageRef message, WriteOptions options);

 protected:
  StreamOps(transport::io::EventLoop* loop, size_t write_buffer_size,
            size_t max_send_message_size);
  virtual ~StreamOps() = default;

  // Before the call starts: the largest message StartWrite sends.
  void set_max_send_message_size(size_t bytes) {
    max_send_message_size_ = bytes;
  }

  // The transport stream, loop thread.
  virtual transport::http2::OutgoingData& outgoing() = 0;
  virtual void ResumeSend() = 0;
  virtual size_t HoldMessage() = 0;
  // Loop thread: a write's message of `bytes` bytes (serialized, before
  // compression) was appended to outgoing().
  virtual void OnWriteAppended(size_t bytes) {}
  // Loop thread: a received message of `bytes` bytes (serialized,
  // decompressed) goes to the application's read.
  virtual void OnMessageRead(size_t bytes) {}
  // The algorithm messages are compressed with (fixed once the first
  // message or the headers went out).
  virtual CompressionAlgorithm SendCompression() = 0;
  virtual void ReleaseMessage(size_t held_bytes) = 0;
  // Ends the call with `status` (a message that cannot be parsed or sent).
  virtual void FailCall(const Status& status) = 0;
  // Completions, loop thread. An operation counts as outstanding until its
  // completion returns; OpCompleted() follows each one.
  virtual void ReadDone(bool ok) = 0;
  virtual void WriteDone(bool ok) = 0;
  virtual void OpCompleted() = 0;
  // "/package.Service/Method", for misuse reports; any thread.
  virtual absl::string_view MethodName() const = 0;

  // Any thread: the application misused the call (`what`). Reports it,
  // naming the method (a debug build aborts; see rpc/internal/common/misuse.h),
  // then fails the call with INTERNAL on the loop (once; counted as an
  // operation, so the call outlives the report).
  void ReportOpMisuse(absl::string_view what);

  // Loop thread, from the transport observer: a received message. A non-OK
  // return fails the stream.
  Status OnMessageReceived(absl::string_view message, bool compressed);
  // Loop thread: whether a compressed message arriving now would be queued
  // (no read waits), so it may be passed as received (see
  // ClientStream::Observer::DefersDecompression).
  bool QueuesNextMessage() const { return !read_waiting_; }
  // Loop thread: a compressed message, as received, while no read waits:
  // queued compressed and decompressed when a read takes it.
  Status OnCompressedMessageReceived(absl::string_view wire,
                                     CompressionAlgorithm encoding,
                                     size_t max_size);
  // Whether the message of the last successful read arrived compressed; set
  // before ReadDone.
  bool last_read_compressed() const { return last_read_compressed_; }
  // Loop thread: no more messages will arrive. A waiting read with nothing
  // queued completes with false.
  void EndReads();
  // Loop thread: the call is over; unread messages are dropped (their held
  // bytes released) and reads and writes fail from now on.
  void EndReadsAndWrites();
  // Loop thread: the call is over for writes; a write waiting for the
  // outgoing buffer to drain completes with false.
  void EndWrites();
  // Loop thread: writes started from now on fail (after a half-close); a
  // waiting write still completes normally.
  void CloseWrites();

  // Operations started (by StartRead/StartWrite and by the derived class
  // through BeginOp) and not yet completed. Any thread.
  bool ops_outstanding() const {
    return ops_.load(std::memory_order_acquire) > 0;
  }
  void BeginOp() { ops_.fetch_add(1, std::memory_order_acq_rel); }
  // Completes an operation the derived class started: runs `done`, then
  // OpCompleted().
  template <class Done>
  void EndOp(Done&& done) {
    done();
    ops_.fetch_sub(1, std::memory_order_acq_rel);
    OpCompleted();
  }

  bool has_unread_messages() const { return !queue_.empty(); }

  // For a pooled call, once no operation is outstanding and its stream is
  // gone: the state of a new call. Messages still queued (a server handler
  // that finished without reading them) are dropped; the queue keeps up to
  // kPooledQueueCapacity of capacity, so that idle pooled calls hold little
  // memory however much their calls queued.
  void ResetStreamOps();
  static constexpr size_t kPooledQueueCapacity = 4096;

  transport::io::EventLoop* const loop_;

 private:
  void RunRead();
  void RunWrite();
  void RunMisuse();
  void RunWriteDrained();
  void OnOutgoingDrained() override;
  bool ParseIntoReadTarget(absl::string_view message);
  static Status ParseError();
  void CompleteRead(bool ok);
  void CompleteWrite(bool ok);

  const size_t write_buffer_size_;
  size_t max_send_message_size_;
  std::atomic<int> ops_{0};
  // A read / write is outstanding: set by StartRead / StartWrite (any
  // thread), cleared on the loop thread just before its completion runs.
  std::atomic<bool> read_outstanding_{false};
  std::atomic<bool> write_outstanding_{false};
  // The first misuse posts misuse_task_ with its message; later ones are
  // only reported.
  std::atomic<bool> misuse_posted_{false};
  std::string misuse_message_;  // written before misuse_task_ is posted

  // Set by StartRead/StartWrite before posting; read on the loop thread.
  MessageRef read_target_;
  ConstMessageRef write_message_;
  WriteOptions write_options_;

  // Loop thread.
  ReceivedMessages queue_;
  bool read_waiting_ = false;
  bool last_read_compressed_ = false;
  bool reads_ended_ = false;
  bool write_waiting_ = false;  // for the outgoing buffer to drain
  bool writes_ended_ = false;
  bool drained_task_posted_ = false;
  MemberTask<StreamOps, &StreamOps::RunRead> read_task_{this};
  MemberTask<StreamOps, &StreamOps::RunWrite> write_task_{this};
  MemberTask<StreamOps, &StreamOps::RunWriteDrained> drained_task_{this};
  MemberTask<StreamOps, &StreamOps::RunMisuse> misuse_task_{this};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_STREAM_OPS_H_
