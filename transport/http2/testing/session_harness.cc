#include "transport/http2/testing/session_harness.h"

#include <algorithm>
#include <climits>

#include "transport/core/message_framer.h"

namespace h2rpc::transport::http2::testing {

void MemoryWire::Feed(absl::string_view bytes) {
  if (!closed_) session_->Feed(bytes);
}

void MemoryWire::PeerCloses() {
  if (!closed_) session_->OnPeerClosed();
}

std::string MemoryWire::TakeOutput(size_t max_write) {
  flush_requested_ = false;
  std::string taken;
  while (!closed_ && !write_shut_) {
    const absl::string_view out = session_->PendingOutput();
    if (closed_ || write_shut_ || out.empty()) break;
    const size_t n = std::min(out.size(), max_write);
    taken.append(out.data(), n);
    session_->ConsumeOutput(n);
  }
  return taken;
}

void MemoryWire::CloseWire(bool flush_first) {
  if (closed_) return;
  if (flush_first && !write_shut_) {
    iovec pieces[64];
    const size_t count = session_->PendingOutputPieces(pieces, 64);
    for (size_t i = 0; i < count; ++i) {
      last_words_.append(static_cast<const char*>(pieces[i].iov_base),
                         pieces[i].iov_len);
    }
  }
  closed_ = true;
}

std::string Framed(absl::string_view message) {
  std::string out;
  const Status status =
      AppendFramedMessage(message, /*compressed=*/false, INT_MAX, &out);
  return status.ok() ? out : std::string();
}

// ---------------------------------------------------------------------------
// EchoDispatcher

Status EchoDispatcher::Dispatch(ServerStream* stream) {
  const bool echo = stream->method() == "/test.Echo/Echo";
  if (!echo && stream->method() != "/test.Echo/Hold") {
    return Status(StatusCode::kUnimplemented, "unknown method");
  }
  calls.push_back(std::make_unique<Call>(this, stream, echo));
  stream->observer = calls.back().get();
  return Status();
}

Status EchoDispatcher::Call::OnMessage(absl::string_view message,
                                       bool compressed) {
  messages.emplace_back(message);
  if (dispatcher_->hold_messages) held.push_back(stream_->HoldMessage());
  if (!echo_) return Status();
  Status status = AppendFramedMessage(message, /*compressed=*/false, INT_MAX,
                                      &stream_->outgoing().buffer());
  if (status.ok()) status = stream_->outgoing().ChargeAppended();
  if (!status.ok()) return status;
  stream_->ResumeSend();
  return Status();
}

void EchoDispatcher::Call::ReleaseHeldMessages() {
  for (size_t bytes : held) stream_->ReleaseMessage(bytes);
  held.clear();
}

void EchoDispatcher::Call::OnHalfClose() {
  half_closed = true;
  if (echo_) Finish(Status());
}

void EchoDispatcher::Call::OnCancel() {
  cancelled = true;
  Release();
}

void EchoDispatcher::Call::Finish(const Status& status) {
  if (released) return;
  stream_->Finish(status, nullptr);
  Release();
}

void EchoDispatcher::Call::Release() {
  if (released) return;
  released = true;
  stream_->Release();
}

// ---------------------------------------------------------------------------
// RecordingCall

RecordingCall::RecordingCall() { stream.observer = this; }

void RecordingCall::OnInitialMetadata(Metadata& metadata) {
  got_initial_metadata = true;
}

Status RecordingCall::OnMessage(absl::string_view message, bool compressed) {
  messages.emplace_back(message);
  return Status();
}

bool RecordingCall::OnRefused() {
  refused = true;
  return false;
}

void RecordingCall::OnClose(const Status& close_status, Metadata& trailing) {
  closed = true;
  status = close_status;
}

}  // namespace h2rpc::transport::http2::testing
