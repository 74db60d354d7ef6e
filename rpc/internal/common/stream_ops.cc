#include "rpc/internal/common/stream_ops.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/internal/common/serialize_framed.h"

namespace h2rpc::internal {

StreamOps::StreamOps(transport::io::EventLoop* loop, size_t write_buffer_size,
                     size_t max_send_message_size)
    : loop_(loop),
      write_buffer_size_(write_buffer_size),
      max_send_message_size_(max_send_message_size) {}

void StreamOps::ResetStreamOps() {
  queue_.Clear(kPooledQueueCapacity);
  read_outstanding_.store(false, std::memory_order_relaxed);
  write_outstanding_.store(false, std::memory_order_relaxed);
  misuse_posted_.store(false, std::memory_order_relaxed);
  misuse_message_.clear();
  read_target_ = MessageRef();
  write_message_ = ConstMessageRef();
  write_options_ = WriteOptions();
  read_waiting_ = false;
  last_read_compressed_ = false;
  reads_ended_ = false;
  write_waiting_ = false;
  writes_ended_ = false;
  drained_task_posted_ = false;
}

void StreamOps::StartRead(MessageRef message) {
  if (read_outstanding_.exchange(true, std::memory_order_acq_rel)) {
    ReportOpMisuse("StartRead while a read is outstanding");
    return;
  }
  read_target_ = message;
  BeginOp();
  // On the loop thread with nothing to take yet, the read waits at once
  // (RunRead's last case): the next message goes straight into it, never
  // through the queue.
  if (loop_->InLoopThread() && queue_.empty() && !reads_ended_) {
    read_waiting_ = true;
    return;
  }
  loop_->Post(&read_task_);
}

void StreamOps::StartWrite(ConstMessageRef message, WriteOptions options) {
  if (write_outstanding_.exchange(true, std::memory_order_acq_rel)) {
    ReportOpMisuse("StartWrite while a write is outstanding");
    return;
  }
  write_message_ = message;
  write_options_ = options;
  BeginOp();
  loop_->Post(&write_task_);
}

void StreamOps::ReportOpMisuse(absl::string_view what) {
  std::string message =
      absl::StrCat(what, " on a call of ", MethodName(), "; the call fails");
  ReportMisuse(message);
  if (misuse_posted_.exchange(true, std::memory_order_acq_rel)) return;
  misuse_message_ = std::move(message);
  BeginOp();
  loop_->Post(&misuse_task_);
}

void StreamOps::RunMisuse() {
  EndOp([&] {
    FailCall(Status(StatusCode::kInternal,
                    absl::StrCat("API misuse: ", misuse_message_)));
  });
}

// ---------------------------------------------------------------------------
// Reads

void StreamOps::RunRead() {
  if (!queue_.empty()) {
    const size_t held = queue_.front_held_bytes();
    absl::string_view message;
    Status status = queue_.TakeFront(&message);
    if (status.ok() && !ParseIntoReadTarget(message)) status = ParseError();
    last_read_compressed_ = queue_.front_compressed();
    // Settle the queue before the completion, which may end the call.
    queue_.Pop();
    ReleaseMessage(held);
    CompleteRead(status.ok());
    if (!status.ok()) FailCall(status);
    return;
  }
  if (reads_ended_) {
    CompleteRead(false);
    return;
  }
  read_waiting_ = true;
}

Status StreamOps::OnMessageReceived(absl::string_view message,
                                    bool compressed) {
  if (!read_waiting_) {
    queue_.Push(message, compressed, HoldMessage());
    return Status();
  }
  const bool parsed = ParseIntoReadTarget(message);
  last_read_compressed_ = compressed;
  CompleteRead(parsed);
  return parsed ? Status() : ParseError();
}

Status StreamOps::OnCompressedMessageReceived(absl::string_view wire,
                                              CompressionAlgorithm encoding,
                                              size_t max_size) {
  queue_.Push(wire, /*compressed=*/true, HoldMessage(), encoding, max_size);
  return Status();
}

bool StreamOps::ParseIntoReadTarget(absl::string_view message) {
  OnMessageRead(message.size());
  return read_target_.Read(message);
}

Status StreamOps::ParseError() {
  return Status(StatusCode::kInternal, "failed to parse a received message");
}

void StreamOps::CompleteRead(bool ok) {
  read_waiting_ = false;
  read_outstanding_.store(false, std::memory_order_release);
  EndOp([&] { ReadDone(ok); });
}

void StreamOps::EndReads() {
  reads_ended_ = true;
  if (read_waiting_ && queue_.empty()) CompleteRead(false);
}

void StreamOps::EndReadsAndWrites() {
  while (!queue_.empty()) {
    ReleaseMessage(queue_.front_held_bytes());
    queue_.Pop();
  }
  EndReads();
  EndWrites();
}

// ---------------------------------------------------------------------------
// Writes

void StreamOps::RunWrite() {
  if (writes_ended_) {
    CompleteWrite(false);
    return;
  }
  transport::http2::OutgoingData& out = outgoing();
  // Fixes the call's encoding even for a message sent uncompressed.
  const CompressionAlgorithm compression = SendCompression();
  const size_t before = out.buffer().size();
  Status status = SerializeFramed(write_message_,
                                  write_options_.no_compression()
                                      ? CompressionAlgorithm::kIdentity
                                      : compression,
                                  max_send_message_size_, &out.buffer());
  // A message the memory quota (servers) cannot hold fails the call.
  if (status.ok()) status = out.ChargeAppended();
  if (!status.ok()) {
    CompleteWrite(false);
    FailCall(status);
    return;
  }
  out.CountMessage(out.buffer().size() - before);
  OnWriteAppended(FramedMessageSize(write_message_));
  ResumeSend();
  if (out.pending() <= write_buffer_size_) {
    CompleteWrite(true);
    return;
  }
  write_waiting_ = true;
  out.NotifyWhenPendingAtMost(write_buffer_size_, this);
}

void StreamOps::OnOutgoingDrained() {
  // Inside nghttp2's send callback: continue on a fresh task (counted as an
  // operation, so the call outlives it).
  if (drained_task_posted_) return;
  drained_task_posted_ = true;
  BeginOp();
  loop_->Post(&drained_task_);
}

void StreamOps::RunWriteDrained() {
  drained_task_posted_ = false;
  if (write_waiting_) {
    if (outgoing().pending() > write_buffer_size_) {
      // A stale notice (the write it was for failed and a new one waits).
      outgoing().NotifyWhenPendingAtMost(write_buffer_size_, this);
    } else {
      CompleteWrite(true);
    }
  }
  EndOp([] {});
}

void StreamOps::CompleteWrite(bool ok) {
  write_waiting_ = false;
  write_outstanding_.store(false, std::memory_order_release);
  EndOp([&] { WriteDone(ok); });
}

void StreamOps::CloseWrites() { writes_ended_ = true; }

void StreamOps::EndWrites() {
  writes_ended_ = true;
  if (write_waiting_) {
    outgoing().NotifyWhenPendingAtMost(0, nullptr);
    CompleteWrite(false);
  }
}

}  // namespace h2rpc::internal
