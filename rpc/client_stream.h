#ifndef H2RPC_RPC_CLIENT_STREAM_H_
#define H2RPC_RPC_CLIENT_STREAM_H_

#include <atomic>
#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "google/protobuf/message_lite.h"
#include "rpc/byte_buffer.h"
#include "rpc/compression.h"
#include "rpc/internal/message_ref.h"
#include "rpc/internal/op_waiter.h"
#include "rpc/status.h"

namespace h2rpc {

class ClientContext;
namespace internal {
class BlockingClientStream;
class ChannelCore;
class ClientReactorAccess;

// What a ClientStreamReactor's operations reach: the channel's streaming
// call. Any thread.
class ClientStreamOperations {
 public:
  virtual void StartCall() = 0;
  virtual void StartRead(MessageRef message) = 0;
  virtual void StartWrite(ConstMessageRef message, WriteOptions options) = 0;
  virtual void StartWritesDone() = 0;
  virtual void AddHold() = 0;
  virtual void RemoveHold() = 0;
  // For the blocking wrapper, which holds a reference to the call (taken
  // when the channel starts it) until ReleaseKeepAlive: cancels the call,
  // drops its unread messages so that it ends as soon as its status is
  // known.
  virtual void RequestCancel() = 0;
  virtual void DiscardUnread() = 0;
  virtual void ReleaseKeepAlive() = 0;

 protected:
  ~ClientStreamOperations() = default;
};
}  // namespace internal

// The events of a streaming call on the client, as in gRPC's callback API.
// They run on the channel's loop thread and must not block. Start the call
// with one of Channel's Async*StreamingCall methods, then StartCall(); the
// typed reactors below add StartRead/StartWrite/StartWritesDone, which may be
// called from any thread (before StartCall too) while the call is not done,
// with at most one read and one write outstanding.
//
// Reads: read until OnReadDone(false). The call is done only once every
// message the server sent before its status has been read, unless the call
// was cancelled or its deadline passed (unread messages are then dropped).
// Writes: OnWriteDone(true) means the message is in the transport's send
// buffer and no more than ChannelOptions::stream_write_buffer bytes wait
// there, so a writer that waits for it never runs ahead of the network.
class ClientStreamReactor {
 public:
  virtual ~ClientStreamReactor() = default;

  // The server's initial metadata arrived (ok) or never will (the call
  // ended first); it is in the ClientContext.
  virtual void OnReadInitialMetadataDone(bool ok) {}
  // A StartRead completed: true with a message, false at the end of the
  // stream or when the call failed.
  virtual void OnReadDone(bool ok) {}
  // A StartWrite completed: false when the call is over.
  virtual void OnWriteDone(bool ok) {}
  // StartWritesDone completed (the half-close is queued after the writes).
  virtual void OnWritesDoneDone(bool ok) {}
  // The last event, once the status is known and every operation has
  // completed. Trailing metadata is in the ClientContext. The reactor may
  // delete itself here.
  virtual void OnDone(const Status& status) = 0;

  void StartCall();

  // Holds keep the call from ending (OnDone) while the application may still
  // start operations from outside the reactor's own events, as gRPC's
  // AddHold/RemoveHold: a reactor whose StartRead/StartWrite come from
  // another thread or loop (a proxy feeding one call from another's
  // events) could otherwise start one on a call whose OnDone has already
  // run. Each AddHold (any thread, before the call is done: before
  // StartCall, or from a reactor event) needs one RemoveHold (any thread);
  // OnDone comes only once every hold is removed. Allocates nothing.
  void AddHold();
  void RemoveHold();

 protected:
  // `message`: a protobuf message or a ByteBuffer.
  void StartReadMessage(internal::MessageRef message);
  void StartWriteMessage(internal::ConstMessageRef message,
                         WriteOptions options);
  void StartWritesDone();

 private:
  // The channel binds the call; the blocking stream reaches it to cancel
  // and release it.
  friend class internal::ClientReactorAccess;
  friend class internal::BlockingClientStream;
  internal::ClientStreamOperations* call_ = nullptr;
};

// Bidirectional streaming: the reactor sends and reads freely.
template <class Request, class Response>
class ClientBidiReactor : public ClientStreamReactor {
 public:
  void StartRead(Response* response) { StartReadMessage(response); }
  void StartWrite(const Request* request,
                  WriteOptions options = WriteOptions()) {
    StartWriteMessage(request, options);
  }
  using ClientStreamReactor::StartWritesDone;
};

// Server streaming: the request was given when the call was created.
template <class Response>
class ClientReadReactor : public ClientStreamReactor {
 public:
  void StartRead(Response* response) { StartReadMessage(response); }
};

// Client streaming: the single response lands in the message given when the
// call was created, before OnDone(OK).
template <class Request>
class ClientWriteReactor : public ClientStreamReactor {
 public:
  void StartWrite(const Request* request,
                  WriteOptions options = WriteOptions()) {
    StartWriteMessage(request, options);
  }
  using ClientStreamReactor::StartWritesDone;
};

namespace internal {

// How Channel starts a blocking streaming call: the wrappers below take one
// in their constructor and bind their stream with Run().
// Whether a streaming call with these message types is one of the generic
// API (serialized messages, any method).
template <class Request, class Response>
inline constexpr bool kGenericCall =
    std::is_same_v<Request, ByteBuffer> || std::is_same_v<Response, ByteBuffer>;

struct BlockingStreamStart {
  ChannelCore* core;
  ClientContext* context;
  absl::string_view method;
  ConstMessageRef request;  // server streaming
  MessageRef response;      // client streaming
  bool generic;             // a call of the generic API
  // Binds `stream` to a new call on `core` and starts it.
  void Run(BlockingClientStream* stream) const;
};

// The blocking form of a streaming call, on top of the reactor. One thread
// may read while another writes.
class BlockingClientStream final : public ClientStreamReactor {
 public:
  BlockingClientStream() = default;
  BlockingClientStream(const BlockingClientStream&) = delete;
  BlockingClientStream& operator=(const BlockingClientStream&) = delete;
  // Cancels the call if Finish() was not called, and waits for it to end.
  ~BlockingClientStream() override;

  bool Read(MessageRef message);
  bool Write(ConstMessageRef message, WriteOptions options);
  bool WritesDone();
  void WaitForInitialMetadata();
  Status Finish();

 private:
  void OnReadInitialMetadataDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnWritesDoneDone(bool ok) override;
  void OnDone(const Status& status) override;

  bool done();

  OpWaiter initial_metadata_;
  OpWaiter read_;
  OpWaiter write_;
  OpWaiter writes_done_;
  std::atomic<bool> writes_done_called_{false};
  // OnDone (loop thread) hands the status to Finish() and the destructor.
  Mutex mu_;
  CondVar changed_;  // done_ became true
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace internal

// Blocking streaming calls, as gRPC's ClientReaderWriter / ClientReader /
// ClientWriter. Read() returns false at the end of the stream (or when the
// call failed); Write() returns false once the call is over; WritesDone()
// half-closes; Finish() waits for the status (dropping unread messages) and
// fills the context's trailing metadata; it does not half-close (except on a
// ClientWriter), so a server still reading keeps waiting, as in gRPC.
// Destroying one before Finish() cancels the call.
template <class Request, class Response>
class ClientReaderWriter {
 public:
  // Made by Channel::BidiStreamingCall (and stubs).
  explicit ClientReaderWriter(const internal::BlockingStreamStart& start) {
    start.Run(&stream_);
  }
  bool Read(Response* response) { return stream_.Read(response); }
  bool Write(const Request& request, WriteOptions options = WriteOptions()) {
    return stream_.Write(&request, options);
  }
  bool WritesDone() { return stream_.WritesDone(); }
  void WaitForInitialMetadata() { stream_.WaitForInitialMetadata(); }
  Status Finish() { return stream_.Finish(); }

 private:
  internal::BlockingClientStream stream_;
};

template <class Response>
class ClientReader {
 public:
  // Made by Channel::ServerStreamingCall (and stubs).
  explicit ClientReader(const internal::BlockingStreamStart& start) {
    start.Run(&stream_);
  }
  bool Read(Response* response) { return stream_.Read(response); }
  void WaitForInitialMetadata() { stream_.WaitForInitialMetadata(); }
  Status Finish() { return stream_.Finish(); }

 private:
  internal::BlockingClientStream stream_;
};

// Finish() half-closes first if WritesDone() was not called, then waits for
// the response (written to the message given at creation) and the status.
template <class Request>
class ClientWriter {
 public:
  // Made by Channel::ClientStreamingCall (and stubs).
  explicit ClientWriter(const internal::BlockingStreamStart& start) {
    start.Run(&stream_);
  }
  bool Write(const Request& request, WriteOptions options = WriteOptions()) {
    return stream_.Write(&request, options);
  }
  bool WritesDone() { return stream_.WritesDone(); }
  void WaitForInitialMetadata() { stream_.WaitForInitialMetadata(); }
  Status Finish() {
    stream_.WritesDone();  // no-op (false) if already half-closed
    return stream_.Finish();
  }

 private:
  internal::BlockingClientStream stream_;
};

// Generic streaming calls: messages as serialized bytes (see
// rpc/byte_buffer.h), for any method.
using GenericClientBidiReactor = ClientBidiReactor<ByteBuffer, ByteBuffer>;
using GenericClientReadReactor = ClientReadReactor<ByteBuffer>;
using GenericClientWriteReactor = ClientWriteReactor<ByteBuffer>;
using GenericClientReaderWriter = ClientReaderWriter<ByteBuffer, ByteBuffer>;
using GenericClientReader = ClientReader<ByteBuffer>;
using GenericClientWriter = ClientWriter<ByteBuffer>;

}  // namespace h2rpc

#endif  // H2RPC_RPC_CLIENT_STREAM_H_
