#ifndef H2RPC_RPC_CORO_CLIENT_H_
#define H2RPC_RPC_CORO_CLIENT_H_

// C++20 coroutine calls on an h2rpc Channel (//rpc/coro), for every call
// kind:
//
//   Status status = co_await coro::UnaryCall(*channel, &context,
//                                            "/pkg.Svc/Get", request, &reply);
//
//   coro::BidiStreamingCall<Note, Note> call;
//   call.context().set_timeout(absl::Seconds(5));
//   call.Start(*channel, "/pkg.Svc/Chat");
//   bool ok = co_await call.Write(note);
//   ... ok = co_await call.Read(&reply); ...
//   co_await call.WritesDone();
//   Status status = co_await call.Finish();
//
// Where a coroutine resumes: on the thread that completed what it awaited,
// which for every operation here is the channel's event loop thread. So a
// coroutine that awaits a call goes on, from then on, on that loop thread,
// with the rules of the reactors' callbacks: it must not block (no blocking
// call, no SyncWait); to do blocking work it moves to other threads with
// ResumeOn (rpc/coro/executor.h). Misuse the calls can see (two reads or
// two writes outstanding, an operation on a call not started or already
// finished, Finish awaited twice) is reported as the reactors report it
// (rpc/internal/common/misuse.h: a debug build aborts); the operation then
// completes at once with false (Finish with INTERNAL).
//
// Allocation: a warm call allocates nothing beyond what the callback API
// does for it: the awaitables live in the awaiting coroutine's frame, and a
// streaming call's state (its ClientContext, reactor and bookkeeping) comes
// from the recycling allocator of rpc/coro/frame_allocator.h.

#include <atomic>
#include <coroutine>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "rpc/byte_buffer.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/coro/frame_allocator.h"
#include "rpc/coro/op_slot.h"
#include "rpc/server_context.h"
#include "rpc/status.h"

namespace h2rpc::coro {

namespace internal {

// A unary call awaited: Channel::AsyncUnaryCall for protobuf messages,
// AsyncGenericUnaryCall for ByteBuffers (serialized messages, any method).
template <class Request, class Response>
class UnaryCallOf {
 public:
  UnaryCallOf(Channel& channel, ClientContext* context,
              absl::string_view method, const Request& request,
              Response* response)
      : channel_(channel),
        context_(context),
        method_(method),
        request_(request),
        response_(response) {}

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> awaiting) {
    awaiting_ = awaiting;
    // Captures one pointer: no allocation.
    auto done = [this](const Status& status) {
      status_ = status;
      awaiting_.resume();
    };
    if constexpr (std::is_same_v<Request, ByteBuffer>) {
      channel_.AsyncGenericUnaryCall(context_, method_, request_, response_,
                                     std::move(done));
    } else {
      channel_.AsyncUnaryCall(context_, method_, request_, response_,
                              std::move(done));
    }
  }
  Status await_resume() { return std::move(status_); }

 private:
  Channel& channel_;
  ClientContext* context_;
  absl::string_view method_;
  const Request& request_;
  Response* response_;
  std::coroutine_handle<> awaiting_;
  Status status_;
};

}  // namespace internal

// `co_await UnaryCall(channel, &context, method, request, &response)` makes
// the call and gives its Status; the response is parsed into `*response`.
// As Channel::AsyncUnaryCall: the request is serialized and `method` copied
// when the call starts (at the co_await); `context` and `response` must live
// until it completes, which resumes the coroutine on the channel's loop
// thread.
using UnaryCall = internal::UnaryCallOf<google::protobuf::MessageLite,
                                        google::protobuf::MessageLite>;

// The same with serialized messages, for any method (the generic API of
// Channel::AsyncGenericUnaryCall).
using GenericUnaryCall = internal::UnaryCallOf<ByteBuffer, ByteBuffer>;

namespace internal {

// Reports misuse of a coroutine call (rpc/internal/common/misuse.h).
void ReportCallMisuse(absl::string_view what);

// What the client-streaming kind keeps besides its reactor: the single
// response. Nothing for the others.
struct NoResponse {};

// A coroutine streaming call's state: its context, its reactor (`Reactor`,
// one of rpc/client_stream.h's typed reactors) and the operations awaited on
// it. Owned by the call object and, from Start until OnDone, by the call
// itself: the last of the two to let go frees it (so a call object
// destroyed before Finish leaves its state to the call, which it cancels).
// While the call object has not awaited Finish, a hold keeps the call from
// ending, so every operation it starts has a call to go to.
template <class Reactor, class Single>
class ClientCallState final : public Reactor {
 public:
  static void* operator new(std::size_t bytes) { return AllocateFrame(bytes); }
  static void operator delete(void* state, std::size_t bytes) noexcept {
    FreeFrame(state, bytes);
  }

  ClientCallState() = default;
  ClientCallState(const ServerContext& parent, PropagationOptions options)
      : context_(parent, options) {}

  ClientContext& context() { return context_; }
  Single& single() { return single_; }

  // Whether the call may be bound and started (not done before).
  bool CanStart() {
    if (started_) ReportCallMisuse("Start called twice");
    return !started_;
  }
  // Starts the call the channel has just bound to this reactor.
  void Started() {
    started_ = true;
    refs_.store(2, std::memory_order_relaxed);
    this->AddHold();
    this->StartCall();
  }
  // The call object lets go.
  void Release() {
    if (started_ && !hold_released_) {
      context_.TryCancel();
      hold_released_ = true;
      this->RemoveHold();
    }
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Whether an operation may start: the call started and not finished.
  bool Usable(const char* operation) {
    if (!started_) {
      ReportCallMisuse(std::string(operation) + " before Start");
      return false;
    }
    if (finish_called_) {
      ReportCallMisuse(std::string(operation) + " after Finish");
      return false;
    }
    return true;
  }

  auto ReadInitialMetadata() {
    struct Awaitable {
      ClientCallState* state;
      bool refused;
      bool await_ready() const noexcept {
        return refused || state->initial_metadata_.is_set();
      }
      bool await_suspend(std::coroutine_handle<> awaiting) {
        return state->initial_metadata_.Wait(awaiting);
      }
      bool await_resume() const noexcept {
        return !refused && state->initial_metadata_.ok();
      }
    };
    return Awaitable{this, !Usable("ReadInitialMetadata")};
  }

  template <class Response>
  auto Read(Response* response) {
    return OpAwaitable(&read_, !Usable("Read"),
                       [this, response] { this->StartRead(response); });
  }

  template <class Request>
  auto Write(const Request* request, WriteOptions options) {
    return OpAwaitable(&write_, !Usable("Write"), [this, request, options] {
      this->StartWrite(request, options);
    });
  }

  auto WritesDone() {
    const bool refused = !Usable("WritesDone");
    if (!refused) writes_done_called_ = true;
    return OpAwaitable(&writes_done_, refused,
                       [this] { this->StartWritesDone(); });
  }

  // `half_close`: half-close first if WritesDone was not called (the
  // client-streaming kind).
  auto Finish(bool half_close) {
    struct Awaitable {
      ClientCallState* state;
      bool refused;
      bool await_ready() const noexcept { return refused; }
      bool await_suspend(std::coroutine_handle<> awaiting) {
        ClientCallState* s = state;
        if (!s->done_.Wait(awaiting)) return false;
        // OnDone may resume the coroutine (and end this awaitable) as soon
        // as the hold is gone.
        s->RemoveHold();
        return true;
      }
      Status await_resume() {
        if (refused) {
          return Status(StatusCode::kInternal,
                        "API misuse: Finish on a call not started or "
                        "already finished");
        }
        return state->status_;
      }
    };
    if (!Usable("Finish")) return Awaitable{this, true};
    finish_called_ = true;
    hold_released_ = true;
    if (half_close && !writes_done_called_) {
      writes_done_called_ = true;
      if (writes_done_.TryBegin()) this->StartWritesDone();
    }
    return Awaitable{this, false};
  }

 private:
  void OnReadInitialMetadataDone(bool ok) override {
    initial_metadata_.Set(ok);
  }
  void OnReadDone(bool ok) override { read_.Complete(ok); }
  void OnWriteDone(bool ok) override { write_.Complete(ok); }
  void OnWritesDoneDone(bool ok) override { writes_done_.Complete(ok); }
  void OnDone(const Status& status) override {
    status_ = status;
    // Keeps the state while a coroutine resumed here lets go of the call.
    done_.Set(status.ok());
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  ClientContext context_;
  Single single_;
  OpSlot read_;
  OpSlot write_;
  OpSlot writes_done_;
  EventLatch initial_metadata_;
  EventLatch done_;
  Status status_;
  std::atomic<int> refs_{1};
  // The call object's side (the awaiting coroutine's thread).
  bool started_ = false;
  bool finish_called_ = false;
  bool hold_released_ = false;
  bool writes_done_called_ = false;
};

// The call objects' shared part: the state's ownership.
template <class State>
class CallHandle {
 public:
  CallHandle() : state_(new State()) {}
  CallHandle(const ServerContext& parent, PropagationOptions options)
      : state_(new State(parent, options)) {}
  CallHandle(CallHandle&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)) {}
  CallHandle& operator=(CallHandle&& other) noexcept {
    if (this != &other) {
      if (state_ != nullptr) state_->Release();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  ~CallHandle() {
    if (state_ != nullptr) state_->Release();
  }
  State* operator->() const { return state_; }
  State* get() const { return state_; }

 private:
  State* state_;
};

}  // namespace internal

// The coroutine forms of the streaming calls. Each one owns its
// ClientContext (set it up through context() before Start; read the
// server's metadata from it after ReadInitialMetadata or Finish) and is
// move-only. Start binds and starts the call on `channel` (`method` is
// copied). Every operation starts when it is called, from any thread, one
// read and one write outstanding at a time, and returns an awaitable that
// gives its result: false once the call is over (a read: also at the end of
// the stream). So one coroutine may keep a read outstanding while it writes:
//   auto read = call.Read(&reply);
//   const bool written = co_await call.Write(request);
//   const bool got_reply = co_await read;
// As with the reactors, a message read into or written must live until its
// operation has ended: a temporary does within `co_await call.Write(T(...))`,
// not beyond the statement that made the operation. Finish
// gives the status once every message the server sent has been read (as
// the reactors' OnDone: unread messages keep the call going until read,
// unless it was cancelled or its deadline passed). The object must outlive
// the operations awaited on it.
//
// Destroying a started call object before its Finish completed cancels the
// call (the server sees CANCELLED); its state is freed when the call ends.
// A call object made from a ServerContext (a handler calling onward)
// propagates that call's deadline and cancellation as
// ClientContext(parent, options) does.
template <class Request, class Response>
class BidiStreamingCall {
 public:
  BidiStreamingCall() = default;
  explicit BidiStreamingCall(const ServerContext& parent,
                             PropagationOptions options = PropagationOptions())
      : state_(parent, options) {}

  ClientContext& context() { return state_->context(); }
  void Start(Channel& channel, absl::string_view method) {
    if (!state_->CanStart()) return;
    channel.AsyncBidiStreamingCall(&state_->context(), method, state_.get());
    state_->Started();
  }

  auto ReadInitialMetadata() { return state_->ReadInitialMetadata(); }
  auto Read(Response* response) { return state_->Read(response); }
  auto Write(const Request& request, WriteOptions options = WriteOptions()) {
    return state_->Write(&request, options);
  }
  auto WritesDone() { return state_->WritesDone(); }
  auto Finish() { return state_->Finish(/*half_close=*/false); }

 private:
  internal::CallHandle<internal::ClientCallState<
      ClientBidiReactor<Request, Response>, internal::NoResponse>>
      state_;
};

// Server streaming: the request is given to Start (and serialized there).
template <class Request, class Response>
class ServerStreamingCall {
 public:
  ServerStreamingCall() = default;
  explicit ServerStreamingCall(
      const ServerContext& parent,
      PropagationOptions options = PropagationOptions())
      : state_(parent, options) {}

  ClientContext& context() { return state_->context(); }
  void Start(Channel& channel, absl::string_view method,
             const Request& request) {
    if (!state_->CanStart()) return;
    channel.AsyncServerStreamingCall<Request, Response>(
        &state_->context(), method, request, state_.get());
    state_->Started();
  }

  auto ReadInitialMetadata() { return state_->ReadInitialMetadata(); }
  auto Read(Response* response) { return state_->Read(response); }
  auto Finish() { return state_->Finish(/*half_close=*/false); }

 private:
  internal::CallHandle<internal::ClientCallState<ClientReadReactor<Response>,
                                                 internal::NoResponse>>
      state_;
};

// Client streaming: Finish half-closes first if WritesDone was not awaited,
// and the single response is in response() once Finish gave OK.
template <class Request, class Response>
class ClientStreamingCall {
 public:
  ClientStreamingCall() = default;
  explicit ClientStreamingCall(
      const ServerContext& parent,
      PropagationOptions options = PropagationOptions())
      : state_(parent, options) {}

  ClientContext& context() { return state_->context(); }
  void Start(Channel& channel, absl::string_view method) {
    if (!state_->CanStart()) return;
    channel.AsyncClientStreamingCall<Request, Response>(
        &state_->context(), method, &state_->single(), state_.get());
    state_->Started();
  }

  auto ReadInitialMetadata() { return state_->ReadInitialMetadata(); }
  auto Write(const Request& request, WriteOptions options = WriteOptions()) {
    return state_->Write(&request, options);
  }
  auto WritesDone() { return state_->WritesDone(); }
  auto Finish() { return state_->Finish(/*half_close=*/true); }
  const Response& response() const { return state_->single(); }
  Response* mutable_response() { return &state_->single(); }

 private:
  internal::CallHandle<
      internal::ClientCallState<ClientWriteReactor<Request>, Response>>
      state_;
};

}  // namespace h2rpc::coro

#endif  // H2RPC_RPC_CORO_CLIENT_H_
