#ifndef H2RPC_RPC_INTERNAL_COMMON_METHOD_H_
#define H2RPC_RPC_INTERNAL_COMMON_METHOD_H_

// The server's registered methods with their message types erased: what
// Server::Builder's Register* calls make and the server's calls run.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "google/protobuf/arena.h"
#include "google/protobuf/message_lite.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"
#include "rpc/unary_done.h"

namespace h2rpc {

class ServerContext;

namespace internal {

enum class MethodKind {
  kUnary,
  kClientStreaming,
  kServerStreaming,
  kBidiStreaming
};

// A registered method, with its message types erased. `sync` methods run on
// a worker thread; the others run on the loop (callbacks, reactors).
class Method {
 public:
  Method(MethodKind kind, bool sync) : kind_(kind), sync_(sync) {}
  virtual ~Method() = default;
  MethodKind kind() const { return kind_; }
  bool sync() const { return sync_; }
  // A new message of the method's type: on `arena` (which owns it), or on
  // the heap for the caller to delete when `arena` is null.
  virtual google::protobuf::MessageLite* NewRequest(
      google::protobuf::Arena* arena) const = 0;
  virtual google::protobuf::MessageLite* NewResponse(
      google::protobuf::Arena* arena) const = 0;

  // Unary.
  virtual Status RunSync(ServerContext* context,
                         const google::protobuf::MessageLite& request,
                         google::protobuf::MessageLite* response) const {
    return Status(StatusCode::kUnimplemented, "no synchronous handler");
  }
  virtual void RunCallback(ServerContext* context,
                           const google::protobuf::MessageLite* request,
                           google::protobuf::MessageLite* response,
                           UnaryDone done) const {
    done(Status(StatusCode::kUnimplemented, "no callback handler"));
  }

  // Streaming. `request` is the single request of a server-streaming call,
  // `response` the single response of a client-streaming one (null
  // otherwise).
  virtual Status RunSyncStream(ServerContext* context,
                               BlockingServerStream* stream,
                               const google::protobuf::MessageLite* request,
                               google::protobuf::MessageLite* response) const {
    return Status(StatusCode::kUnimplemented, "no synchronous handler");
  }
  virtual ServerStreamReactor* CreateReactor(
      ServerContext* context, const google::protobuf::MessageLite* request,
      google::protobuf::MessageLite* response) const {
    return nullptr;
  }

  // The server's count of the method's calls dispatched and not yet ended.
  // Any thread. CallEnded returns true when the count dropped to zero; it
  // and live_calls() are sequentially consistent (Server::Shutdown pairs
  // them with its own flag).
  void CallStarted() const {
    live_calls_.fetch_add(1, std::memory_order_relaxed);
  }
  bool CallEnded() const {
    return live_calls_.fetch_sub(1, std::memory_order_seq_cst) == 1;
  }
  int live_calls() const { return live_calls_.load(std::memory_order_seq_cst); }

 private:
  const MethodKind kind_;
  const bool sync_;
  mutable std::atomic<int> live_calls_{0};
};

// Creates the method's message types.
template <class Request, class Response>
class TypedMethod : public Method {
 public:
  using Method::Method;
  google::protobuf::MessageLite* NewRequest(
      google::protobuf::Arena* arena) const override {
    return google::protobuf::Arena::CreateMessage<Request>(arena);
  }
  google::protobuf::MessageLite* NewResponse(
      google::protobuf::Arena* arena) const override {
    return google::protobuf::Arena::CreateMessage<Response>(arena);
  }
};

template <class Request, class Response>
class SyncUnaryMethod final : public TypedMethod<Request, Response> {
 public:
  using Handler =
      std::function<Status(ServerContext*, const Request&, Response*)>;
  explicit SyncUnaryMethod(Handler handler)
      : TypedMethod<Request, Response>(MethodKind::kUnary, /*sync=*/true),
        handler_(std::move(handler)) {}
  Status RunSync(ServerContext* context,
                 const google::protobuf::MessageLite& request,
                 google::protobuf::MessageLite* response) const override {
    return handler_(context, static_cast<const Request&>(request),
                    static_cast<Response*>(response));
  }

 private:
  Handler handler_;
};

template <class Request, class Response>
class CallbackUnaryMethod final : public TypedMethod<Request, Response> {
 public:
  using Handler =
      std::function<void(ServerContext*, const Request*, Response*, UnaryDone)>;
  explicit CallbackUnaryMethod(Handler handler)
      : TypedMethod<Request, Response>(MethodKind::kUnary, /*sync=*/false),
        handler_(std::move(handler)) {}
  void RunCallback(ServerContext* context,
                   const google::protobuf::MessageLite* request,
                   google::protobuf::MessageLite* response,
                   UnaryDone done) const override {
    handler_(context, static_cast<const Request*>(request),
             static_cast<Response*>(response), std::move(done));
  }

 private:
  Handler handler_;
};

// A synchronous streaming method: `Run` adapts the blocking stream to the
// handler's typed signature.
template <class Request, class Response, class Handler, class Run>
class SyncStreamMethod final : public TypedMethod<Request, Response> {
 public:
  SyncStreamMethod(MethodKind kind, Handler handler, Run run)
      : TypedMethod<Request, Response>(kind, /*sync=*/true),
        handler_(std::move(handler)),
        run_(run) {}
  Status RunSyncStream(ServerContext* context, BlockingServerStream* stream,
                       const google::protobuf::MessageLite* request,
                       google::protobuf::MessageLite* response) const override {
    return run_(handler_, context, stream, static_cast<const Request*>(request),
                static_cast<Response*>(response));
  }

 private:
  Handler handler_;
  Run run_;
};

// A callback streaming method: `Create` calls the factory with the
// arguments its kind takes.
template <class Request, class Response, class Factory, class Create>
class CallbackStreamMethod final : public TypedMethod<Request, Response> {
 public:
  CallbackStreamMethod(MethodKind kind, Factory factory, Create create)
      : TypedMethod<Request, Response>(kind, /*sync=*/false),
        factory_(std::move(factory)),
        create_(create) {}
  ServerStreamReactor* CreateReactor(
      ServerContext* context, const google::protobuf::MessageLite* request,
      google::protobuf::MessageLite* response) const override {
    return create_(factory_, context, static_cast<const Request*>(request),
                   static_cast<Response*>(response));
  }

 private:
  Factory factory_;
  Create create_;
};

// A generic service's handlers: every call a bidi stream of ByteBuffers, so
// the server never asks them for a message.
class GenericMethod : public Method {
 public:
  explicit GenericMethod(bool sync)
      : Method(MethodKind::kBidiStreaming, sync) {}
  google::protobuf::MessageLite* NewRequest(
      google::protobuf::Arena*) const final {
    return nullptr;
  }
  google::protobuf::MessageLite* NewResponse(
      google::protobuf::Arena*) const final {
    return nullptr;
  }
};

class SyncGenericMethod final : public GenericMethod {
 public:
  using Handler =
      std::function<Status(ServerContext*, GenericServerReaderWriter*)>;
  explicit SyncGenericMethod(Handler handler)
      : GenericMethod(/*sync=*/true), handler_(std::move(handler)) {}
  Status RunSyncStream(ServerContext* context, BlockingServerStream* stream,
                       const google::protobuf::MessageLite*,
                       google::protobuf::MessageLite*) const override {
    GenericServerReaderWriter reader_writer(stream);
    return handler_(context, &reader_writer);
  }

 private:
  Handler handler_;
};

class CallbackGenericMethod final : public GenericMethod {
 public:
  using Factory = std::function<GenericServerBidiReactor*(ServerContext*)>;
  explicit CallbackGenericMethod(Factory factory)
      : GenericMethod(/*sync=*/false), factory_(std::move(factory)) {}
  ServerStreamReactor* CreateReactor(
      ServerContext* context, const google::protobuf::MessageLite*,
      google::protobuf::MessageLite*) const override {
    return factory_(context);
  }

 private:
  Factory factory_;
};

// The registered methods by path.
using MethodMap = std::map<std::string, std::unique_ptr<Method>, std::less<>>;

}  // namespace internal
}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERNAL_COMMON_METHOD_H_
