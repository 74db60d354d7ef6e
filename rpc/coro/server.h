#ifndef H2RPC_RPC_CORO_SERVER_H_
#define H2RPC_RPC_CORO_SERVER_H_

// C++20 coroutine handlers for an h2rpc Server (//rpc/coro), for every call
// kind: a handler is a coroutine returning Task<Status>, registered on a
// Server::Builder with the functions below.
//
//   coro::RegisterBidiStreaming<Note, Note>(
//       builder, "/pkg.Svc/Chat",
//       [](ServerContext* context,
//          coro::ServerReaderWriter<Note, Note>* stream) -> coro::Task<Status>
//          {
//         Note note;
//         while (true) {
//           const bool read = co_await stream->Read(&note);
//           if (!read) break;
//           const bool written = co_await stream->Write(note);
//           if (!written) break;
//         }
//         co_return Status();
//       });
//
// Where a handler runs: it starts on the connection's event loop thread,
// when the call arrives, and resumes on the thread that completed what it
// awaited: the loop thread for this call's reads and writes, the channel's
// loop thread for a call it makes onward (rpc/coro/client.h). So, as the
// callback handlers, it must not block; blocking work moves to other
// threads with ResumeOn (rpc/coro/executor.h). The Status it returns ends
// the call (sent after every message written, with the ServerContext's
// trailing metadata). A cancelled call (the client cancelled, the deadline
// passed, the connection was lost, or the server shuts down) makes its
// reads and writes complete with false, and ServerContext::IsCancelled()
// true: a handler that awaits only its call's operations then returns, and
// Server::Shutdown waits for that. A handler that awaits something else
// must end once its call is cancelled, as a callback handler must call
// Finish.
//
// Allocation: the handler's frame and the call's state come from the
// recycling allocator (rpc/coro/frame_allocator.h): a warm call allocates
// nothing beyond what the callback form does.

#include <functional>
#include <string>
#include <utility>

#include "rpc/coro/frame_allocator.h"
#include "rpc/coro/op_slot.h"
#include "rpc/coro/task.h"
#include "rpc/server.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"
#include "rpc/unary_done.h"

namespace h2rpc::coro {

namespace internal {

// A coroutine streaming call's operations, as its handler's stream objects
// (below) reach them. Each operation starts when it is called, from any
// thread, one read and one write outstanding at a time, until the handler
// returns, and returns an awaitable that gives its result (false once the
// call is cancelled); see OpAwaitable.
class ServerCallOps {
 public:
  auto Read(h2rpc::internal::MessageRef request) {
    return OpAwaitable(&read_, false,
                       [this, request] { StartReadOp(request); });
  }
  auto Write(h2rpc::internal::ConstMessageRef response, WriteOptions options) {
    return OpAwaitable(&write_, false, [this, response, options] {
      StartWriteOp(response, options);
    });
  }
  auto SendInitialMetadata() {
    return OpAwaitable(&metadata_, false, [this] { StartMetadataOp(); });
  }

 protected:
  ~ServerCallOps() = default;
  virtual void StartReadOp(h2rpc::internal::MessageRef request) = 0;
  virtual void StartWriteOp(h2rpc::internal::ConstMessageRef response,
                            WriteOptions options) = 0;
  virtual void StartMetadataOp() = 0;

  OpSlot read_;
  OpSlot write_;
  OpSlot metadata_;
};

}  // namespace internal

// What a client-streaming handler reads from.
template <class Request>
class ServerReader {
 public:
  explicit ServerReader(internal::ServerCallOps* ops) : ops_(ops) {}
  // true with a message; false once the client half-closed (every message
  // read) or the call was cancelled.
  auto Read(Request* request) { return ops_->Read(request); }
  // Sends the initial metadata now (else it goes with the response).
  auto SendInitialMetadata() { return ops_->SendInitialMetadata(); }

 private:
  internal::ServerCallOps* ops_;
};

// What a server-streaming handler writes to.
template <class Response>
class ServerWriter {
 public:
  explicit ServerWriter(internal::ServerCallOps* ops) : ops_(ops) {}
  // true once the message is in the send buffer (and no more than
  // ServerOptions::stream_write_buffer bytes wait there); false when the
  // call was cancelled. The initial metadata goes with the first write.
  auto Write(const Response& response, WriteOptions options = WriteOptions()) {
    return ops_->Write(&response, options);
  }
  auto SendInitialMetadata() { return ops_->SendInitialMetadata(); }

 private:
  internal::ServerCallOps* ops_;
};

// Template arguments in gRPC's order: what is written, then what is read.
template <class Response, class Request>
class ServerReaderWriter {
 public:
  explicit ServerReaderWriter(internal::ServerCallOps* ops) : ops_(ops) {}
  auto Read(Request* request) { return ops_->Read(request); }
  auto Write(const Response& response, WriteOptions options = WriteOptions()) {
    return ops_->Write(&response, options);
  }
  auto SendInitialMetadata() { return ops_->SendInitialMetadata(); }

 private:
  internal::ServerCallOps* ops_;
};

namespace internal {

// The reactor of a coroutine streaming handler's call (`Reactor`, one of
// rpc/server_stream.h's typed reactors), with the stream object the handler
// gets (`Stream`). Made by the registered factory (so it binds to the call
// being created), which runs the handler; the handler's Status finishes the
// call; freed at OnDone.
template <class Reactor, class Stream>
class ServerCallState final : public Reactor, public ServerCallOps {
 public:
  static void* operator new(std::size_t bytes) { return AllocateFrame(bytes); }
  static void operator delete(void* state, std::size_t bytes) noexcept {
    FreeFrame(state, bytes);
  }

  Stream* stream() { return &stream_; }
  // Runs `handler` (from this call's factory) until it first suspends.
  void Run(Task<Status> handler) {
    Spawn(std::move(handler),
          [this](const Status& status) { this->Finish(status); });
  }

 private:
  void StartReadOp(h2rpc::internal::MessageRef request) override {
    this->StartReadMessage(request);
  }
  void StartWriteOp(h2rpc::internal::ConstMessageRef response,
                    WriteOptions options) override {
    this->StartWriteMessage(response, options);
  }
  void StartMetadataOp() override { this->StartSendInitialMetadata(); }

  void OnSendInitialMetadataDone(bool ok) override { metadata_.Complete(ok); }
  void OnReadDone(bool ok) override { read_.Complete(ok); }
  void OnWriteDone(bool ok) override { write_.Complete(ok); }
  void OnDone() override { delete this; }

  Stream stream_{this};
};

}  // namespace internal

// Unary: the handler fills `*response` (sent if the Status is OK).
template <class Request, class Response>
Server::Builder& RegisterUnary(
    Server::Builder& builder, std::string method,
    std::function<Task<Status>(ServerContext*, const Request*, Response*)>
        handler) {
  return builder.RegisterCallbackUnary<Request, Response>(
      std::move(method), [handler = std::move(handler)](
                             ServerContext* context, const Request* request,
                             Response* response, UnaryDone done) {
        Spawn(handler(context, request, response),
              [done = std::move(done)](const Status& status) mutable {
                done(status);
              });
      });
}

// Client streaming: the handler reads the requests and fills `*response`
// (sent if the Status is OK).
template <class Request, class Response>
Server::Builder& RegisterClientStreaming(
    Server::Builder& builder, std::string method,
    std::function<Task<Status>(ServerContext*, ServerReader<Request>*,
                               Response*)>
        handler) {
  return builder.RegisterCallbackClientStreaming<Request, Response>(
      std::move(method),
      [handler = std::move(handler)](ServerContext* context, Response* response)
          -> ServerReadReactor<Request>* {
        auto* state = new internal::ServerCallState<ServerReadReactor<Request>,
                                                    ServerReader<Request>>();
        state->Run(handler(context, state->stream(), response));
        return state;
      });
}

// Server streaming: the handler writes the responses to the one request.
template <class Request, class Response>
Server::Builder& RegisterServerStreaming(
    Server::Builder& builder, std::string method,
    std::function<Task<Status>(ServerContext*, const Request*,
                               ServerWriter<Response>*)>
        handler) {
  return builder.RegisterCallbackServerStreaming<Request, Response>(
      std::move(method),
      [handler = std::move(handler)](
          ServerContext* context,
          const Request* request) -> ServerWriteReactor<Response>* {
        auto* state =
            new internal::ServerCallState<ServerWriteReactor<Response>,
                                          ServerWriter<Response>>();
        state->Run(handler(context, request, state->stream()));
        return state;
      });
}

// Bidirectional streaming.
template <class Request, class Response>
Server::Builder& RegisterBidiStreaming(
    Server::Builder& builder, std::string method,
    std::function<Task<Status>(ServerContext*,
                               ServerReaderWriter<Response, Request>*)>
        handler) {
  return builder.RegisterCallbackBidiStreaming<Request, Response>(
      std::move(method),
      [handler = std::move(handler)](
          ServerContext* context) -> ServerBidiReactor<Request, Response>* {
        auto* state = new internal::ServerCallState<
            ServerBidiReactor<Request, Response>,
            ServerReaderWriter<Response, Request>>();
        state->Run(handler(context, state->stream()));
        return state;
      });
}

}  // namespace h2rpc::coro

#endif  // H2RPC_RPC_CORO_SERVER_H_
