#ifndef H2RPC_RPC_SERVER_STREAM_H_
#define H2RPC_RPC_SERVER_STREAM_H_

#include "google/protobuf/message_lite.h"
#include "rpc/byte_buffer.h"
#include "rpc/compression.h"
#include "rpc/internal/message_ref.h"
#include "rpc/internal/op_waiter.h"
#include "rpc/status.h"

namespace h2rpc {

namespace internal {
class BlockingServerStream;

// What a ServerStreamReactor's operations reach: the server's streaming
// call. Any thread, until the reactor's OnDone.
class ServerStreamOperations {
 public:
  virtual void StartSendInitialMetadata() = 0;
  virtual void Finish(const Status& status) = 0;
  virtual void StartRead(MessageRef message) = 0;
  virtual void StartWrite(ConstMessageRef message, WriteOptions options) = 0;

 protected:
  ~ServerStreamOperations() = default;
};

// The call whose reactor the current thread's factory is creating, if any
// (see ServerStreamReactor's constructor): the server sets it around the
// factory's run.
ServerStreamOperations* BindingServerStream();
void SetBindingServerStream(ServerStreamOperations* call);
}  // namespace internal

// The events of a streaming call on the server, as in gRPC's callback API.
// A registered factory creates the reactor on the connection's loop thread;
// its events run there too and must not block. The Start* methods and
// Finish may be called from any thread until OnDone, with at most one read
// and one write outstanding.
//
// Initial metadata (from the ServerContext) goes out with the first write,
// with StartSendInitialMetadata(), or with Finish. Finish(status) sends the
// trailers (status and the context's trailing metadata) after every
// message written; it must be called exactly once, even after OnCancel.
// Misuse (a second Finish; a read, write or StartSendInitialMetadata while
// another is outstanding) is reported naming the method: a debug build
// aborts, an optimized one fails the call with INTERNAL ("API misuse: ...")
// if its status is not out yet. So neither sends the first Finish's status
// as if nothing happened when the second came before it took effect (on the
// loop, after the call to Finish returned); once the trailers are out, a
// second Finish is only reported. The call still ends, with OnDone.
class ServerStreamReactor {
 public:
  // Inside a registered factory the reactor binds to the call being
  // created, so its constructor may already start operations.
  ServerStreamReactor();
  virtual ~ServerStreamReactor() = default;

  virtual void OnSendInitialMetadataDone(bool ok) {}
  // A StartRead completed: true with a message, false once the client has
  // half-closed (and every message was read), the call was cancelled, or
  // Finish has taken effect (a read outstanding then completes with false).
  virtual void OnReadDone(bool ok) {}
  // A StartWrite completed: true once the message is in the send buffer and
  // no more than ServerOptions::stream_write_buffer bytes wait there; false
  // when the call was cancelled.
  virtual void OnWriteDone(bool ok) {}
  // The call ended without Finish taking effect: the client cancelled, the
  // deadline passed, or the connection was lost. Reads and writes fail from
  // now on.
  virtual void OnCancel() {}
  // The last event, after Finish and every operation completed. The reactor
  // may delete itself here.
  virtual void OnDone() = 0;

  void StartSendInitialMetadata();
  void Finish(const Status& status);

 protected:
  // Bound to `call` (the blocking stream of a synchronous handler).
  explicit ServerStreamReactor(internal::ServerStreamOperations* call)
      : call_(call) {}

  // `message`: a protobuf message or a ByteBuffer.
  void StartReadMessage(internal::MessageRef message);
  void StartWriteMessage(internal::ConstMessageRef message,
                         WriteOptions options);

 private:
  internal::ServerStreamOperations* call_ = nullptr;
};

// Bidirectional streaming.
template <class Request, class Response>
class ServerBidiReactor : public ServerStreamReactor {
 public:
  void StartRead(Request* request) { StartReadMessage(request); }
  void StartWrite(const Response* response,
                  WriteOptions options = WriteOptions()) {
    StartWriteMessage(response, options);
  }
};

// Client streaming: reads the requests; the response (given to the factory)
// must be filled before Finish(OK), which sends it.
template <class Request>
class ServerReadReactor : public ServerStreamReactor {
 public:
  void StartRead(Request* request) { StartReadMessage(request); }
};

// Server streaming: the request was given to the factory.
template <class Response>
class ServerWriteReactor : public ServerStreamReactor {
 public:
  void StartWrite(const Response* response,
                  WriteOptions options = WriteOptions()) {
    StartWriteMessage(response, options);
  }
};

namespace internal {

// The reactor behind synchronous streaming handlers: blocking Read and
// Write for a handler running on a worker thread.
class BlockingServerStream final : public ServerStreamReactor {
 public:
  explicit BlockingServerStream(ServerStreamOperations* call)
      : ServerStreamReactor(call) {}

  bool Read(MessageRef message);
  bool Write(ConstMessageRef message, WriteOptions options);
  void SendInitialMetadata();

 private:
  void OnSendInitialMetadataDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override {}

  OpWaiter metadata_;
  OpWaiter read_;
  OpWaiter write_;
};

}  // namespace internal

// What a synchronous streaming handler reads from and writes to, as in gRPC
// C++. Read() returns false once the client has half-closed and every
// message was read, or the call was cancelled; Write() returns false when
// the call was cancelled and blocks while the send buffer is full (the
// client reads slowly). Initial metadata goes with the first Write unless
// SendInitialMetadata() sent it before. The handler's returned Status ends
// the call.
template <class Request>
class ServerReader {
 public:
  explicit ServerReader(internal::BlockingServerStream* stream)
      : stream_(stream) {}
  bool Read(Request* request) { return stream_->Read(request); }
  void SendInitialMetadata() { stream_->SendInitialMetadata(); }

 private:
  internal::BlockingServerStream* stream_;
};

template <class Response>
class ServerWriter {
 public:
  explicit ServerWriter(internal::BlockingServerStream* stream)
      : stream_(stream) {}
  bool Write(const Response& response, WriteOptions options = WriteOptions()) {
    return stream_->Write(&response, options);
  }
  void SendInitialMetadata() { stream_->SendInitialMetadata(); }

 private:
  internal::BlockingServerStream* stream_;
};

// Template arguments in gRPC's order: what is written, then what is read.
template <class Response, class Request>
class ServerReaderWriter {
 public:
  explicit ServerReaderWriter(internal::BlockingServerStream* stream)
      : stream_(stream) {}
  bool Read(Request* request) { return stream_->Read(request); }
  bool Write(const Response& response, WriteOptions options = WriteOptions()) {
    return stream_->Write(&response, options);
  }
  void SendInitialMetadata() { stream_->SendInitialMetadata(); }

 private:
  internal::BlockingServerStream* stream_;
};

// A generic service's calls (Server::Builder::RegisterCallbackGenericService
// and RegisterGenericService): messages as serialized bytes.
using GenericServerBidiReactor = ServerBidiReactor<ByteBuffer, ByteBuffer>;
using GenericServerReaderWriter = ServerReaderWriter<ByteBuffer, ByteBuffer>;

}  // namespace h2rpc

#endif  // H2RPC_RPC_SERVER_STREAM_H_
