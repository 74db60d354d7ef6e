#ifndef H2RPC_RPC_SERVER_H_
#define H2RPC_RPC_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/message_lite.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/credentials.h"
#include "rpc/interceptor.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"

namespace h2rpc {

namespace internal {
class ServerCore;

// A port given to Server::Builder::AddListeningPort.
struct ListeningPort {
  std::string address;
  int* selected_port = nullptr;
  std::shared_ptr<ServerCredentials> credentials;  // never null
};

// What a UnaryDone completes: the server's unary call.
class UnaryCompletion {
 public:
  // Any thread, once per call: the handler finished with `status`.
  virtual void HandlerDone(const Status& status) = 0;

 protected:
  ~UnaryCompletion() = default;
};
}  // namespace internal

// Finishes a callback-style unary call: the handler fills the response, then
// calls done(status) exactly once, from any thread, then or later. Move-only
// (pass it on with std::move). Misuse is reported (see
// rpc/internal/misuse.h: a debug build aborts with the message, naming the
// call's method): calling it a second time (or after it was moved from)
// is ignored in optimized builds; destroying it without calling it fails
// the call with INTERNAL, so a dropped UnaryDone never leaves a call
// hanging (nor Server::Shutdown waiting for it).
class UnaryDone {
 public:
  // Made by the server, one per call, for the call's handler. `method` (the
  // server's copy of the path) names the call in misuse reports.
  UnaryDone(internal::UnaryCompletion& call, absl::string_view method)
      : call_(&call), method_(method) {}
  UnaryDone(UnaryDone&& other) noexcept
      : call_(other.call_), method_(other.method_) {
    other.call_ = nullptr;
  }
  // Reports a dropped UnaryDone if this one was not called yet.
  UnaryDone& operator=(UnaryDone&& other) noexcept;
  UnaryDone(const UnaryDone&) = delete;
  UnaryDone& operator=(const UnaryDone&) = delete;
  ~UnaryDone();

  void operator()(const Status& status);

 private:
  void Dropped();

  internal::UnaryCompletion* call_;  // null once called or moved from
  absl::string_view method_;         // the server's copy of the method path
};

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

}  // namespace internal

// Settings of a Server. Every field: default, unit.
struct ServerOptions {
  // HTTP/2 settings and message size limits of every connection.
  ConnectionOptions connection;
  // Event loop threads; connections are spread over them. 0: one per core.
  int num_loops = 0;
  // CPUs to pin the loop threads to, in order; empty: not pinned.
  std::vector<int> loop_cpus;
  // Busy-polling of every loop (EventLoop::set_busy_poll in
  // transport/io/event_loop.h): whenever a loop runs out of work it polls
  // without blocking for up to this long before it sleeps, so a request
  // arriving meanwhile is handled without a wake-up from the kernel. Each
  // loop thread keeps its core busy that long after each idle moment.
  // 0: never. From 0 to 1,000,000 (one second); BuildAndStart refuses other
  // values with INVALID_ARGUMENT. Microseconds.
  int busy_poll_us = 0;
  // Interceptors of every call, outermost first (rpc/interceptor.h);
  // Builder::AddInterceptor appends to them.
  std::vector<std::shared_ptr<ServerInterceptor>> interceptors;
  // Threads running synchronous handlers; a synchronous streaming handler
  // holds its thread for the whole call. A call whose handler finds no idle
  // thread gets a new one, up to max_sync_threads; beyond that it fails at
  // once with RESOURCE_EXHAUSTED ("all 256 synchronous handler threads are
  // busy (ServerOptions::max_sync_threads)") rather than wait. Threads
  // beyond min_sync_threads exit after sync_thread_idle_time without work.
  //
  // Threads started with the server and kept even when idle. 0: max(4,
  // 2 x cores), at most max_sync_threads. Threads.
  int min_sync_threads = 0;
  // Most threads running synchronous handlers at once, so the most
  // synchronous calls in progress. At least 1. Threads.
  int max_sync_threads = 256;
  // Most synchronous handlers running at once for the calls of one
  // connection, so that one client cannot take every thread: a call beyond
  // it fails at once with RESOURCE_EXHAUSTED ("this connection's 192
  // synchronous handler threads are busy
  // (ServerOptions::max_sync_threads_per_connection)"). A handler still
  // running when its connection closes no longer counts against any
  // connection. 0: three quarters of max_sync_threads (at least 1); else
  // from 1 to max_sync_threads. Threads.
  int max_sync_threads_per_connection = 0;
  // How long a thread beyond min_sync_threads waits for work before it
  // exits. At least zero. Duration.
  absl::Duration sync_thread_idle_time = absl::Seconds(60);
  // A streaming call's write completes once at most this many bytes wait
  // in its send buffer (see ServerStreamReactor). Bytes.
  size_t stream_write_buffer = 64 << 10;
  // How responses are compressed unless the ServerContext says otherwise;
  // only used for clients that accept it (see rpc/compression.h).
  CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
  // Bytes the server holds on its peers' behalf, all connections together:
  // received messages being gathered (spanning DATA frames) and response
  // bytes not yet written to a connection. Each connection takes at most
  // connection.memory_quota_share of it (see there for how the bounds
  // combine with the flow-control windows). A received message that does
  // not fit waits, its sender stalled by flow control, until memory frees
  // up; a response that does not fit fails its call with
  // RESOURCE_EXHAUSTED; while less than 1/16 of it is free, new calls fail
  // at once with RESOURCE_EXHAUSTED. Bytes.
  size_t memory_quota = 256 << 20;
  // Most connections open at once; 0: unlimited. Connections. At the limit
  // the server stops accepting until one closes: new clients wait in the
  // listen backlog (1024) and are served in order as connections close,
  // their calls' deadlines bounding the wait. gRPC C++ accepts and closes
  // them instead; not accepting costs the server nothing per excess connect
  // (a flood of reconnects at the limit is not a loop of accept and close),
  // and a waiting client is served without a reconnect back-off.
  size_t max_connections = 0;
  // Once Shutdown's deadline has cancelled the calls left, how long it waits
  // for their handlers to return before it logs (to stderr) the methods of
  // the calls still running, and then again after every further period
  // while any runs (see Server::Shutdown). More than zero. Duration.
  absl::Duration shutdown_grace_period = absl::Seconds(5);

  // Connection management, with gRPC's names and defaults (gRPC's A8
  // keepalive and A9 connection idleness and age; the gRPC C++ channel
  // argument each corresponds to is named). Every connection applies them
  // on its own; BuildAndStart refuses values out of range with
  // INVALID_ARGUMENT naming the field.
  //
  // A graceful shutdown (max_connection_idle, max_connection_age, and
  // Shutdown) is gRPC's double GOAWAY: GOAWAY with last stream id 2^31-1
  // and a PING; streams the client opens meanwhile are served; once the
  // PING's ACK arrives (or after keepalive_timeout, 20 s at most, without
  // one) a second GOAWAY names the last stream accepted and later streams
  // are refused (clients retry them elsewhere). The connection closes when
  // its last call ends.
  //
  // Keepalive: after keepalive_time without a frame from the client, the
  // server sends a PING; if nothing arrives within keepalive_timeout of it,
  // the client is gone: the connection closes and its calls are cancelled
  // (handlers see IsCancelled()). Only while calls are open, unless
  // keepalive_permit_without_calls. InfiniteDuration: no PINGs. More than
  // zero. Duration. GRPC_ARG_KEEPALIVE_TIME_MS (2 hours).
  absl::Duration keepalive_time = absl::Hours(2);
  // More than zero. Duration. GRPC_ARG_KEEPALIVE_TIMEOUT_MS (20 seconds).
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // The server's keepalive PINGs go out on connections without calls too,
  // and PING enforcement applies keepalive_min_time to such connections
  // instead of two hours. GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS (false).
  bool keepalive_permit_without_calls = false;
  // PING enforcement: a client PING sooner than this after the previous
  // one (sooner than two hours while the connection has no call, unless
  // keepalive_permit_without_calls) is a strike; the server sending
  // HEADERS or DATA clears the strikes. More than max_ping_strikes strikes
  // end the connection: GOAWAY(ENHANCE_YOUR_CALM, debug data
  // "too_many_pings"; gRPC clients then double their keepalive time), and
  // its calls are cancelled. At least zero. Duration.
  // GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS (5 minutes;
  // grpc-go's EnforcementPolicy.MinTime).
  absl::Duration keepalive_min_time = absl::Minutes(5);
  // 0: any number of strikes. At least zero. PINGs.
  // GRPC_ARG_HTTP2_MAX_PING_STRIKES (2).
  int max_ping_strikes = 2;
  // A connection without calls for this long is shut down gracefully.
  // InfiniteDuration: never. More than zero. Duration.
  // GRPC_ARG_MAX_CONNECTION_IDLE_MS (infinite).
  absl::Duration max_connection_idle = absl::InfiniteDuration();
  // A connection this old (give or take 10%, at random, so that
  // connections opened together do not end together) is shut down
  // gracefully. InfiniteDuration: never. More than zero. Duration.
  // GRPC_ARG_MAX_CONNECTION_AGE_MS (infinite).
  absl::Duration max_connection_age = absl::InfiniteDuration();
  // Calls still open this long after max_connection_age are cancelled and
  // the connection closed. InfiniteDuration: they may run for ever. At least
  // zero. Duration. GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS (infinite).
  absl::Duration max_connection_age_grace = absl::InfiniteDuration();
};

// A gRPC server: listens on ports, routes each call by its method path to a
// registered handler, and answers UNIMPLEMENTED for anything else.
//
//   int port = 0;
//   std::unique_ptr<Server> server =
//       Server::Builder()
//           .AddListeningPort("127.0.0.1:0", &port)
//           .RegisterUnary<EchoRequest, EchoResponse>(
//               "/echo.Echo/Say",
//               [](ServerContext*, const EchoRequest& in, EchoResponse* out) {
//                 out->set_text(in.text());
//                 return Status();
//               })
//           .BuildAndStart(&status);
class Server {
 public:
  class Builder {
   public:
    // "host:port" or "[v6]:port"; port 0 picks a free port, written to
    // `*selected_port` by BuildAndStart. Or a unix-domain socket, as gRPC
    // names them: "unix:path" (relative to the working directory unless it
    // starts with '/'), "unix:///absolute/path", or "unix-abstract:name" (a
    // name in Linux's abstract namespace: every byte after the colon; no
    // file). A path or name has at most 107 bytes (sun_path), taken as
    // written (no percent-decoding); `*selected_port` gets 0. Before binding
    // a path, BuildAndStart removes a socket file left there (as gRPC C++
    // does; a server still listening on it loses new clients to this one)
    // but fails with UNAVAILABLE if another kind of file is there; the file
    // it binds is removed when the server shuts down (unless it has been
    // replaced by then). Plaintext (h2c).
    Builder& AddListeningPort(std::string address,
                              int* selected_port = nullptr);
    // The same, with `credentials` securing the port's connections (TLS
    // with SslServerCredentials()). BuildAndStart fails with the
    // credentials' status() if they are unusable.
    Builder& AddListeningPort(std::string address,
                              std::shared_ptr<ServerCredentials> credentials,
                              int* selected_port = nullptr);
    Builder& SetOptions(const ServerOptions& options);

    // A synchronous handler: runs on a worker thread and may block.
    template <class Request, class Response>
    Builder& RegisterUnary(
        std::string method,
        std::function<Status(ServerContext*, const Request&, Response*)>
            handler) {
      return Register(
          std::move(method),
          std::make_unique<internal::SyncUnaryMethod<Request, Response>>(
              std::move(handler)));
    }

    // A callback handler: runs on the connection's loop thread and must not
    // block; it fills the response and calls `done(status)`, then or later,
    // from any thread.
    template <class Request, class Response>
    Builder& RegisterCallbackUnary(
        std::string method, std::function<void(ServerContext*, const Request*,
                                               Response*, UnaryDone)>
                                handler) {
      return Register(
          std::move(method),
          std::make_unique<internal::CallbackUnaryMethod<Request, Response>>(
              std::move(handler)));
    }

    // Synchronous streaming handlers: run on a worker thread (for the whole
    // call) with blocking reads and writes; the returned Status ends the
    // call. A client-streaming handler fills `*response`, sent if the
    // status is OK.
    template <class Request, class Response>
    Builder& RegisterClientStreaming(
        std::string method,
        std::function<Status(ServerContext*, ServerReader<Request>*, Response*)>
            handler) {
      return RegisterSyncStream<Request, Response>(
          std::move(method), internal::MethodKind::kClientStreaming,
          std::move(handler),
          [](const auto& h, ServerContext* context,
             internal::BlockingServerStream* stream, const Request*,
             Response* response) {
            ServerReader<Request> reader(stream);
            return h(context, &reader, response);
          });
    }
    template <class Request, class Response>
    Builder& RegisterServerStreaming(
        std::string method, std::function<Status(ServerContext*, const Request&,
                                                 ServerWriter<Response>*)>
                                handler) {
      return RegisterSyncStream<Request, Response>(
          std::move(method), internal::MethodKind::kServerStreaming,
          std::move(handler),
          [](const auto& h, ServerContext* context,
             internal::BlockingServerStream* stream, const Request* request,
             Response*) {
            ServerWriter<Response> writer(stream);
            return h(context, *request, &writer);
          });
    }
    template <class Request, class Response>
    Builder& RegisterBidiStreaming(
        std::string method,
        std::function<Status(ServerContext*,
                             ServerReaderWriter<Response, Request>*)>
            handler) {
      return RegisterSyncStream<Request, Response>(
          std::move(method), internal::MethodKind::kBidiStreaming,
          std::move(handler),
          [](const auto& h, ServerContext* context,
             internal::BlockingServerStream* stream, const Request*,
             Response*) {
            ServerReaderWriter<Response, Request> stream_rw(stream);
            return h(context, &stream_rw);
          });
    }

    // Callback streaming handlers: the factory runs on the loop thread and
    // returns the call's reactor (owned by the caller, typically deleting
    // itself in OnDone); null fails the call with INTERNAL.
    template <class Request, class Response>
    Builder& RegisterCallbackClientStreaming(
        std::string method,
        std::function<ServerReadReactor<Request>*(ServerContext*, Response*)>
            factory) {
      return RegisterCallbackStream<Request, Response>(
          std::move(method), internal::MethodKind::kClientStreaming,
          std::move(factory),
          [](const auto& f, ServerContext* context, const Request*,
             Response* response) -> ServerStreamReactor* {
            return f(context, response);
          });
    }
    template <class Request, class Response>
    Builder& RegisterCallbackServerStreaming(
        std::string method,
        std::function<ServerWriteReactor<Response>*(ServerContext*,
                                                    const Request*)>
            factory) {
      return RegisterCallbackStream<Request, Response>(
          std::move(method), internal::MethodKind::kServerStreaming,
          std::move(factory),
          [](const auto& f, ServerContext* context, const Request* request,
             Response*) -> ServerStreamReactor* {
            return f(context, request);
          });
    }
    template <class Request, class Response>
    Builder& RegisterCallbackBidiStreaming(
        std::string method,
        std::function<ServerBidiReactor<Request, Response>*(ServerContext*)>
            factory) {
      return RegisterCallbackStream<Request, Response>(
          std::move(method), internal::MethodKind::kBidiStreaming,
          std::move(factory),
          [](const auto& f, ServerContext* context, const Request*,
             Response*) -> ServerStreamReactor* { return f(context); });
    }

    // Runs `callback` once, on the thread that first calls Server::Shutdown
    // (or ~Server), before the server stops accepting: for a service whose
    // calls never end by themselves (HealthCheckService's Watch) to end
    // them, so that Shutdown need not wait for its deadline. Callbacks run
    // in the order they were added; they must not block, nor call Shutdown.
    // Whatever they reach must outlive the server.
    Builder& AddShutdownCallback(std::function<void()> callback);

    // Adds an interceptor of every call (rpc/interceptor.h), inside those
    // added before and those of ServerOptions::interceptors. Not null.
    Builder& AddInterceptor(std::shared_ptr<ServerInterceptor> interceptor);

    // Runs `callback` once, on the thread calling BuildAndStart, before any
    // port is bound or call served, with the full names ("package.Service")
    // of the services that have a registered method, sorted, each once: for
    // a service that describes the server (ReflectionService's
    // list_services). Not run if a registration failed; run even if
    // BuildAndStart fails later (options out of range, a port that cannot
    // be bound). It must not block nor use the builder; whatever it reaches
    // must outlive the server. Allocates the names (one vector) once.
    Builder& AddServiceListCallback(
        std::function<void(const std::vector<std::string>& services)> callback);

    // Binds the ports and starts serving. Returns null and sets `*status`
    // (UNAVAILABLE naming the address) if a port cannot be bound, or
    // INVALID_ARGUMENT for a malformed address (a unix path that is empty or
    // too long, naming it), a method registered twice or not of the form
    // "/package.Service/Method", or for ServerOptions out of range (naming
    // the field and its value).
    std::unique_ptr<Server> BuildAndStart(Status* status);

   private:
    template <class Request, class Response, class Handler, class Run>
    Builder& RegisterSyncStream(std::string method, internal::MethodKind kind,
                                Handler handler, Run run) {
      return Register(
          std::move(method),
          std::make_unique<
              internal::SyncStreamMethod<Request, Response, Handler, Run>>(
              kind, std::move(handler), run));
    }
    template <class Request, class Response, class Factory, class Create>
    Builder& RegisterCallbackStream(std::string method,
                                    internal::MethodKind kind, Factory factory,
                                    Create create) {
      return Register(
          std::move(method),
          std::make_unique<internal::CallbackStreamMethod<Request, Response,
                                                          Factory, Create>>(
              kind, std::move(factory), create));
    }
    Builder& Register(std::string method,
                      std::unique_ptr<internal::Method> handler);

    std::vector<internal::ListeningPort> ports_;
    ServerOptions options_;
    std::map<std::string, std::unique_ptr<internal::Method>, std::less<>>
        methods_;
    Status error_;
    std::vector<std::function<void()>> shutdown_callbacks_;
    std::vector<std::shared_ptr<ServerInterceptor>> interceptors_;
    std::vector<std::function<void(const std::vector<std::string>&)>>
        service_list_callbacks_;
  };

  ~Server();  // Shutdown(now) and Wait().
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Runs the Builder's shutdown callbacks (the first time only), then stops
  // accepting connections and shuts every connection down gracefully
  // (the double GOAWAY, see ServerOptions): calls in flight go on, new ones
  // are refused (clients see UNAVAILABLE, or retry elsewhere). At
  // `deadline` the calls still in flight are cancelled (handlers see
  // IsCancelled(), their reads and writes fail, reactors get OnCancel) and
  // the connections closed. From then on Shutdown waits only for handlers
  // to return: a synchronous handler to return, a callback handler to call
  // its UnaryDone or its reactor's Finish (and get OnDone).
  //
  // Returns once every connection is closed and every call has ended, so no
  // handler can touch the server any more; never earlier. A handler that
  // ignores cancellation therefore keeps Shutdown waiting: every
  // ServerOptions::shutdown_grace_period past the deadline, Shutdown logs to
  // stderr the methods (and counts) of the calls still running. Misuse (a
  // second Finish, UnaryDone dropped or called twice) cannot keep it
  // waiting.
  //
  // Any thread but the server's own (a loop or a handler thread: Shutdown
  // would wait for itself). Idempotent: a second call waits for the first
  // to complete.
  void Shutdown(absl::Time deadline);
  // Blocks until Shutdown() has completed.
  void Wait();

  // Calls dispatched to a handler and not yet ended (the handler has not
  // finished, or the call is still being completed on its loop). Any
  // thread; for tests and monitoring.
  int live_calls() const;

 private:
  Server(std::unique_ptr<internal::ServerCore> core,
         std::vector<std::function<void()>> shutdown_callbacks);

  std::unique_ptr<internal::ServerCore> core_;
  // Builder::AddShutdownCallback's, run once by the first Shutdown.
  std::vector<std::function<void()>> shutdown_callbacks_;
  std::once_flag shutdown_callbacks_run_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_SERVER_H_
