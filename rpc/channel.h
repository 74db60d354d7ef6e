#ifndef H2RPC_RPC_CHANNEL_H_
#define H2RPC_RPC_CHANNEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/compression.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"
#include "transport/io/event_loop.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/mutex.h"
#include "transport/io/resolver.h"
#include "transport/io/socket_connection.h"

namespace h2rpc {

namespace internal {
class ChannelCall;
class ClientCall;
class ClientStreamCall;
class ChannelConnector;
}  // namespace internal

// Settings of a Channel. Every field: default, unit.
struct ChannelOptions {
  // "user-agent" sent with every call.
  std::string user_agent = "h2rpc-cpp/0.1";
  // HTTP/2 settings and message size limits of the connection.
  transport::http2::ConnectionOptions connection;
  // Longest wait for a connection: resolving the target's host name and the
  // TCP connect together. Duration.
  absl::Duration connect_timeout = absl::Seconds(20);
  // Looks up the target's host name off the event loop (a target whose host
  // is an IP address needs no lookup). Null (default): the channel makes its
  // own, whose thread starts on the first lookup. A Resolver may be shared
  // by several channels; they then look up one at a time.
  std::shared_ptr<transport::io::Resolver> resolver;
  // Reconnect backoff after a failed connect: first wait, growth factor,
  // longest wait. While backing off, calls fail fast with UNAVAILABLE.
  absl::Duration initial_backoff = absl::Seconds(1);
  double backoff_multiplier = 1.6;
  absl::Duration max_backoff = absl::Seconds(120);
  // CPU to pin the channel's event loop thread to; -1: not pinned.
  int loop_cpu = -1;
  // A streaming call's write completes once at most this many bytes wait
  // in its send buffer (see ClientStreamReactor). Bytes.
  size_t stream_write_buffer = 64 << 10;
  // How calls compress their messages unless their ClientContext says
  // otherwise (see rpc/compression.h).
  CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
};

// A client's link to one server ("host:port", "[v6]:port"). Connects lazily
// on the first call, over one HTTP/2 connection that carries any number of
// concurrent calls, and reconnects (with backoff) after a failure. Owns an
// event loop thread on which the transport and completion callbacks run;
// host names are looked up on a resolver thread (ChannelOptions::resolver),
// never on the loop. Thread-safe.
class Channel final : private transport::http2::ClientSession::Listener {
 public:
  explicit Channel(absl::string_view target,
                   const ChannelOptions& options = ChannelOptions());
  // Fails calls still in flight with CANCELLED, then stops the loop. Does
  // not wait for a host-name lookup under way (its result is dropped).
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  const std::string& target() const { return target_; }

  // Blocking unary call: serializes `request`, waits for the response and
  // parses it into `response`. `method` is "/package.Service/Method".
  Status UnaryCall(ClientContext* context, absl::string_view method,
                   const google::protobuf::MessageLite& request,
                   google::protobuf::MessageLite* response);

  // Asynchronous unary call: returns at once (the request is serialized
  // before it does). `done` runs exactly once, on the channel's loop thread,
  // never on the caller's stack, even when the call cannot start (past
  // deadline, cancelled context, bad metadata, oversized request): the
  // caller may hold a lock that `done` takes. It must not block. If the
  // channel's loop could not start (ChannelOptions::loop_cpu out of range),
  // `done` runs on a thread of its own with the loop's error. `context`,
  // `method` and `response` must live until `done` runs.
  void AsyncUnaryCall(ClientContext* context, absl::string_view method,
                      const google::protobuf::MessageLite& request,
                      google::protobuf::MessageLite* response,
                      absl::AnyInvocable<void(const Status&)> done);

  // The same with serialized messages (the generic layer stubs build on).
  Status GenericUnaryCall(ClientContext* context, absl::string_view method,
                          absl::string_view request, std::string* response);
  // `done` as for AsyncUnaryCall.
  void AsyncGenericUnaryCall(ClientContext* context, absl::string_view method,
                             absl::string_view request, std::string* response,
                             absl::AnyInvocable<void(const Status&)> done);

  // Streaming calls with a reactor (callbacks on the channel's loop
  // thread): bind the call, then call reactor->StartCall(). `context`
  // and the reactor must live until OnDone. Server streaming sends `request`
  // (serialized here) and half-closes; client streaming puts the single
  // response in `*response` before OnDone(OK).
  template <class Request, class Response>
  void AsyncBidiStreamingCall(ClientContext* context, absl::string_view method,
                              ClientBidiReactor<Request, Response>* reactor) {
    BindStreamingCall(context, method, nullptr, nullptr, reactor);
  }
  template <class Request, class Response>
  void AsyncServerStreamingCall(ClientContext* context,
                                absl::string_view method,
                                const Request& request,
                                ClientReadReactor<Response>* reactor) {
    BindStreamingCall(context, method, &request, nullptr, reactor);
  }
  template <class Request, class Response>
  void AsyncClientStreamingCall(ClientContext* context,
                                absl::string_view method, Response* response,
                                ClientWriteReactor<Request>* reactor) {
    BindStreamingCall(context, method, nullptr, response, reactor);
  }

  // Blocking streaming calls, started at once. `context` (and `response`)
  // must outlive the returned object.
  template <class Request, class Response>
  std::unique_ptr<ClientReaderWriter<Request, Response>> BidiStreamingCall(
      ClientContext* context, absl::string_view method) {
    auto call = std::make_unique<ClientReaderWriter<Request, Response>>();
    StartBlockingStream(context, method, nullptr, nullptr, &call->stream_);
    return call;
  }
  template <class Request, class Response>
  std::unique_ptr<ClientReader<Response>> ServerStreamingCall(
      ClientContext* context, absl::string_view method,
      const Request& request) {
    auto call = std::make_unique<ClientReader<Response>>();
    StartBlockingStream(context, method, &request, nullptr, &call->stream_);
    return call;
  }
  template <class Request, class Response>
  std::unique_ptr<ClientWriter<Request>> ClientStreamingCall(
      ClientContext* context, absl::string_view method, Response* response) {
    auto call = std::make_unique<ClientWriter<Request>>();
    StartBlockingStream(context, method, nullptr, response, &call->stream_);
    return call;
  }

 private:
  friend class internal::ChannelCall;
  friend class internal::ClientCall;
  friend class internal::ClientStreamCall;
  friend class internal::ChannelConnector;

  enum class State { kIdle, kConnecting, kReady, kBackoff };

  void BindStreamingCall(ClientContext* context, absl::string_view method,
                         const google::protobuf::MessageLite* request,
                         google::protobuf::MessageLite* response,
                         ClientStreamReactor* reactor);
  void StartBlockingStream(ClientContext* context, absl::string_view method,
                           const google::protobuf::MessageLite* request,
                           google::protobuf::MessageLite* response,
                           internal::BlockingClientStream* stream);

  internal::ClientCall* TakeCall();
  // A pooled call set up for `request` (or `request_bytes`), or null with
  // `*status` saying why the call cannot start.
  internal::ClientCall* PrepareCall(
      ClientContext* context, absl::string_view method,
      const google::protobuf::MessageLite* request,
      absl::string_view request_bytes, Status* status);
  Status RunBlocking(internal::ClientCall* call);
  // Runs `done(status)` for an asynchronous call that could not start: on
  // the loop thread, never on the caller's stack.
  void CompleteUnstarted(absl::AnyInvocable<void(const Status&)> done,
                         Status status);
  void ReturnCall(internal::ClientCall* call);

  // Loop thread.
  void StartOnLoop(internal::ChannelCall* call);
  void Connect();
  void OnConnected(transport::io::FileDescriptor socket, std::string peer);
  void OnConnectFailed(const Status& why);
  void FailPending(const Status& why);
  void OnConnectionClosed(transport::http2::ClientSession* connection,
                          const Status& why) override;
  void OnConnectionDraining(
      transport::http2::ClientSession* connection) override;
  void Shutdown();

  const std::string target_;
  const ChannelOptions options_;
  transport::io::EventLoop loop_;
  Status loop_status_;  // why the loop could not start, if it could not

  // Loop thread only.
  State state_ = State::kIdle;
  using Connection =
      transport::io::SocketConnection<transport::http2::ClientSession>;
  std::unique_ptr<Connection> connection_;
  std::vector<std::unique_ptr<Connection>> draining_;
  std::unique_ptr<internal::ChannelConnector> connector_;
  internal::ChannelCall* pending_ = nullptr;  // waiting for a connection
  Status last_error_;
  transport::io::MonotonicTime backoff_until_ =
      transport::io::MonotonicTime::InfinitePast();
  absl::Duration next_backoff_;
  bool shut_down_ = false;

  // Idle unary calls, taken and returned from any thread.
  transport::io::Mutex pool_mu_;
  std::vector<internal::ClientCall*> free_calls_ ABSL_GUARDED_BY(pool_mu_);
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CHANNEL_H_
