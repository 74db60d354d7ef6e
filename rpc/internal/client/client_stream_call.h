#ifndef H2RPC_RPC_INTERNAL_CLIENT_CLIENT_STREAM_CALL_H_
#define H2RPC_RPC_INTERNAL_CLIENT_CLIENT_STREAM_CALL_H_

#include <atomic>

#include "google/protobuf/message_lite.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/internal/client/channel_call.h"
#include "rpc/internal/client/client_context_access.h"
#include "rpc/internal/common/stream_ops.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"

namespace h2rpc::internal {

// One streaming call on a Channel (client, server or bidi streaming),
// driving a ClientStreamReactor. Pooled by the channel: taken when a call is
// bound to its reactor, returned after OnDone (and after any cancel task
// still queued, and the blocking wrapper's release), its stream's buffers
// (header list, received header block, request frame, message queue)
// keeping their capacity, so a warm streaming call allocates nothing.
class ClientStreamCall final : public ChannelCall,
                               public ClientStreamOperations,
                               public StreamOps,
                               public transport::http2::ClientStream::Observer {
 public:
  explicit ClientStreamCall(ChannelCallHost* core);

  // User thread. The call drives `reactor` (bound to it already).
  // `request` (server streaming) is serialized now, sent as the
  // only message and followed by the half-close; `response` (client
  // streaming) receives the single response message. A problem found here
  // (past deadline, oversized request, cancelled context) ends the call
  // with it once started. `generic`: a call of the generic API.
  void Prepare(ClientStreamReactor* reactor, ClientContext* context,
               absl::string_view method, ConstMessageRef request,
               MessageRef response, bool generic);
  // The channel's pool, once the last reference is gone: the state of a
  // new call.
  void ResetForReuse();
  // ClientStreamOperations: any thread.
  void StartCall() override;
  void StartRead(MessageRef message) override { StreamOps::StartRead(message); }
  void StartWrite(ConstMessageRef message, WriteOptions options) override {
    StreamOps::StartWrite(message, options);
  }
  void StartWritesDone() override;
  // A hold counts as an outstanding operation until it is removed (through
  // a task on the loop, so the call is never freed under a caller).
  void AddHold() override { BeginOp(); }
  void RemoveHold() override;
  using ChannelCall::RequestCancel;  // the context's, with its cause
  void RequestCancel() override {
    ChannelCall::RequestCancel(CancelCause::kTryCancel);
  }
  // Unread messages are dropped, so the call ends as soon as its status is
  // known (the blocking Finish).
  void DiscardUnread() override;
  void ReleaseKeepAlive() override { Unref(); }
  // Any thread. An extra reference for a blocking wrapper, which may still
  // call DiscardUnread() and RequestCancel() after OnDone.
  void KeepAlive() { Ref(); }

 private:
  // StreamOps.
  transport::http2::OutgoingData& outgoing() override {
    return stream_.outgoing();
  }
  void ResumeSend() override { stream_.ResumeSend(); }
  // Both keep the context's count of held bytes too; only this call's loop
  // thread writes it, so no read-modify-write is needed.
  size_t HoldMessage() override {
    const size_t bytes = stream_.HoldMessage();
    std::atomic<size_t>& held = ClientContextAccess::HeldBytes(context_);
    held.store(held.load(std::memory_order_relaxed) + bytes,
               std::memory_order_relaxed);
    return bytes;
  }
  CompressionAlgorithm SendCompression() override { return send_compression_; }
  void ReleaseMessage(size_t held_bytes) override {
    std::atomic<size_t>& held = ClientContextAccess::HeldBytes(context_);
    held.store(held.load(std::memory_order_relaxed) - held_bytes,
               std::memory_order_relaxed);
    stream_.ReleaseMessage(held_bytes);
  }
  void FailCall(const Status& status) override { CancelOnLoop(status); }
  void OnWriteAppended(size_t bytes) override {
    InterceptSend(bytes);
    ChargeRetryBuffer();
  }
  void OnMessageRead(size_t bytes) override { InterceptReceive(bytes); }
  absl::string_view MethodName() const override {
    return stream_.description.method_path;
  }
  void ReadDone(bool ok) override {
    if (ok) {
      ClientContextAccess::SetLastMessageCompressed(context_,
                                                    last_read_compressed());
    }
    reactor_->OnReadDone(ok);
  }
  void WriteDone(bool ok) override { reactor_->OnWriteDone(ok); }
  void OpCompleted() override { MaybeDone(); }

  // ClientStream::Observer.
  void OnInitialMetadata(Metadata& metadata) override;
  Status OnMessage(absl::string_view message, bool compressed) override;
  // Messages a read does not take at once are queued compressed.
  bool DefersDecompression() const override {
    return !single_response_ && QueuesNextMessage();
  }
  Status OnCompressedMessage(absl::string_view wire,
                             CompressionAlgorithm encoding,
                             size_t max_size) override {
    return OnCompressedMessageReceived(wire, encoding, max_size);
  }
  bool OnRefused() override {
    EndRefusedAttempt();
    return RetryTransparently();
  }
  void OnClose(const Status& status, Metadata& trailing) override;

  // ChannelCall.
  void FailBeforeStream(const Status& status) override { Close(status); }
  void OnLastUnref() override { core_->ReturnCall(this); }

  void Close(const Status& status);
  void MaybeDone();
  void RunWritesDone();
  void RunDiscard();
  void RunDone();
  void RunRemoveHolds();

  ClientStreamReactor* reactor_ = nullptr;
  MessageRef single_response_;
  bool got_single_response_ = false;
  std::atomic<bool> discard_requested_{false};
  std::atomic<bool> writes_done_started_{false};
  // RemoveHold calls whose task has not run yet.
  std::atomic<int> holds_to_remove_{0};
  // Loop thread.
  bool initial_metadata_reported_ = false;
  bool closed_ = false;
  bool discard_unread_ = false;
  bool done_posted_ = false;
  Status status_;
  MemberTask<ClientStreamCall, &ClientStreamCall::RunWritesDone>
      writes_done_task_{this};
  MemberTask<ClientStreamCall, &ClientStreamCall::RunDiscard> discard_task_{
      this};
  MemberTask<ClientStreamCall, &ClientStreamCall::RunDone> done_task_{this};
  MemberTask<ClientStreamCall, &ClientStreamCall::RunRemoveHolds>
      remove_holds_task_{this};
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_CLIENT_STREAM_CALL_H_
