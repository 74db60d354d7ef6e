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
#include "rpc/internal/common/listening_port.h"
#include "rpc/internal/common/method.h"
#include "rpc/server_context.h"
#include "rpc/server_options.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"
#include "rpc/unary_done.h"

namespace h2rpc {

namespace transport::io {
class EventLoop;
}  // namespace transport::io
namespace internal {
class ServerBuilderAccess;
class ServerCore;
}  // namespace internal

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

    // A generic service: serves every call no registered method claims (an
    // unknown service, or an unknown method of a known one), as gRPC C++'s
    // CallbackGenericService and grpc-go's UnknownServiceHandler do, as a
    // bidirectional stream of serialized messages (rpc/byte_buffer.h)
    // whatever the method's kind: a unary method's client sends one
    // message and half-closes, and expects one message before an OK
    // status. ServerContext::method() names the method. Server
    // interceptors run as for registered methods, and Shutdown waits for
    // its calls. At most one generic service, of either form.
    //
    // The callback form: `factory` creates the call's reactor on the loop
    // thread, as a registered bidi reactor factory does.
    Builder& RegisterCallbackGenericService(
        std::function<GenericServerBidiReactor*(ServerContext*)> factory);
    // The synchronous form: `handler` runs on a worker thread and may block.
    Builder& RegisterGenericService(
        std::function<Status(ServerContext*, GenericServerReaderWriter*)>
            handler);

    // Runs `callback` once, on the thread that first calls Server::Shutdown
    // (or ~Server), before the server stops accepting: for a service whose
    // calls never end by themselves (HealthCheckService's Watch) to end
    // them, so that Shutdown need not wait for its deadline. Callbacks run
    // in the order they were added; they must not block, nor call Shutdown.
    // Whatever they reach must outlive the server.
    Builder& AddShutdownCallback(std::function<void()> callback);

    // Registers the server (its listening sockets and connections) in
    // `channelz` (rpc/channelz.h), as ServerOptions::channelz does; set here
    // it holds whatever SetOptions says, before or after. Not null.
    Builder& SetChannelz(std::shared_ptr<Channelz> channelz);

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
    friend class internal::ServerBuilderAccess;

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
    Builder& RegisterGeneric(std::unique_ptr<internal::Method> handler);

    std::vector<internal::ListeningPort> ports_;
    ServerOptions options_;
    internal::MethodMap methods_;
    std::unique_ptr<internal::Method> generic_method_;
    Status error_;
    std::vector<std::function<void()>> shutdown_callbacks_;
    std::vector<std::shared_ptr<ServerInterceptor>> interceptors_;
    std::shared_ptr<Channelz> channelz_;  // SetChannelz
    std::vector<std::function<void(const std::vector<std::string>&)>>
        service_list_callbacks_;
    // Loops of another owner the server runs on (ServerBuilderAccess).
    std::vector<transport::io::EventLoop*> loops_;
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
