#ifndef H2RPC_RPC_INTERNAL_CHANNEL_CORE_H_
#define H2RPC_RPC_INTERNAL_CHANNEL_CORE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/compression.h"
#include "rpc/internal/channel_connector.h"
#include "rpc/status.h"
#include "transport/http2/client_session.h"
#include "transport/http2/session.h"
#include "transport/io/event_loop.h"
#include "transport/io/monotonic_time.h"
#include "transport/io/mutex.h"
#include "transport/io/socket.h"
#include "transport/io/socket_connection.h"
#include "transport/tls/tls_context.h"

namespace h2rpc::internal {

class ChannelCall;
class ClientCall;

// Everything behind a Channel: the event loop, the connection (and those
// still draining), the connector, the calls waiting for a connection, the
// reconnect backoff and the pool of unary calls. Channel forwards to it; the
// calls (ChannelCall and its subclasses) hold a pointer to it, never to the
// Channel.
//
// Threads: the call-starting methods, ReturnCall and the accessors from any
// thread; StartOnLoop and the transport's callbacks on the loop thread.
class ChannelCore final : private transport::http2::ClientSession::Listener,
                          private ChannelConnector::Listener {
 public:
  // What every call on a channel needs from it to set itself up (fixed when
  // the channel is made).
  struct CallSettings {
    // "user-agent" of every call (ChannelOptions::user_agent).
    std::string user_agent;
    // ChannelOptions::default_compression.
    CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
    // ChannelOptions::connection.max_send_message_size. Bytes.
    size_t max_send_message_size = 0;
    // ChannelOptions::stream_write_buffer. Bytes.
    size_t stream_write_buffer = 0;
  };

  // `credentials` (null: every call fails) is read during construction.
  ChannelCore(absl::string_view target, const ChannelCredentials* credentials,
              const ChannelOptions& options);
  // Fails calls still in flight with CANCELLED, then stops the loop. Does
  // not wait for a host-name lookup under way (its result is dropped). Not
  // on the loop thread (see Destroy).
  ~ChannelCore();
  ChannelCore(const ChannelCore&) = delete;
  ChannelCore& operator=(const ChannelCore&) = delete;

  // Destroys `core` from any thread. On the core's own loop thread (the
  // last reference to its Channel dropped in a `done` callback or OnDone),
  // where the loop cannot stop itself, the destruction runs on a detached
  // thread of its own and may still be under way when this returns.
  static void Destroy(std::unique_ptr<ChannelCore> core);

  const std::string& target() const { return target_; }
  // The :authority of calls whose context sets none: the target, or
  // ChannelOptions::ssl_target_name_override.
  const std::string& default_authority() const { return default_authority_; }
  // The :scheme of calls: "https" over TLS, else "http".
  absl::string_view scheme() const { return scheme_; }
  transport::io::EventLoop& loop() { return loop_; }
  // Why the loop could not start, if it could not (OK otherwise).
  const Status& loop_status() const { return loop_status_; }
  const CallSettings& settings() const { return settings_; }

  // The Channel's calls (see there for their contracts).
  Status UnaryCall(ClientContext* context, absl::string_view method,
                   const google::protobuf::MessageLite& request,
                   google::protobuf::MessageLite* response);
  void AsyncUnaryCall(ClientContext* context, absl::string_view method,
                      const google::protobuf::MessageLite& request,
                      google::protobuf::MessageLite* response,
                      absl::AnyInvocable<void(const Status&)> done);
  Status GenericUnaryCall(ClientContext* context, absl::string_view method,
                          absl::string_view request, std::string* response);
  void AsyncGenericUnaryCall(ClientContext* context, absl::string_view method,
                             absl::string_view request, std::string* response,
                             absl::AnyInvocable<void(const Status&)> done);
  // Binds `reactor` to a new streaming call (not started).
  void BindStreamingCall(ClientContext* context, absl::string_view method,
                         const google::protobuf::MessageLite* request,
                         google::protobuf::MessageLite* response,
                         ClientStreamReactor* reactor);
  // Binds `stream` to a new streaming call and starts it.
  void StartBlockingStream(ClientContext* context, absl::string_view method,
                           const google::protobuf::MessageLite* request,
                           google::protobuf::MessageLite* response,
                           BlockingClientStream* stream);

  // Loop thread: puts `call` on a stream of the connection, connecting
  // first if there is none (the call waits), or fails it (backing off,
  // shutting down).
  void StartOnLoop(ChannelCall* call);
  // Any thread: a unary call is over; back to the pool.
  void ReturnCall(ClientCall* call);

 private:
  enum class State { kIdle, kConnecting, kReady, kBackoff };
  using Connection =
      transport::io::SocketConnection<transport::http2::ClientSession>;

  ClientCall* TakeCall();
  // A pooled call set up for `request` (or `request_bytes`), or null with
  // `*status` saying why the call cannot start.
  ClientCall* PrepareCall(ClientContext* context, absl::string_view method,
                          const google::protobuf::MessageLite* request,
                          absl::string_view request_bytes, Status* status);
  Status RunBlocking(ClientCall* call);
  // Runs `done(status)` for an asynchronous call that could not start: on
  // the loop thread, never on the caller's stack.
  void CompleteUnstarted(absl::AnyInvocable<void(const Status&)> done,
                         Status status);

  // Loop thread.
  void Connect();
  void OnConnected(transport::io::FileDescriptor socket,
                   std::string peer) override;
  void OnConnectFailed(const Status& why) override;
  void FailPending(const Status& why);
  void OnConnectionClosed(transport::http2::ClientSession* connection,
                          const Status& why) override;
  void OnConnectionDraining(
      transport::http2::ClientSession* connection) override;
  void Shutdown();

  const std::string target_;
  const ChannelOptions options_;
  // TLS context of the channel's connections; null: plaintext.
  std::shared_ptr<const transport::tls::TlsContext> tls_;
  // Unusable credentials: why every call fails.
  Status credentials_error_;
  // The name the server's certificate must match (TLS).
  std::string tls_server_name_;
  std::string default_authority_;
  absl::string_view scheme_ = "http";
  const transport::http2::ConnectionOptions transport_options_;
  const CallSettings settings_;
  transport::io::EventLoop loop_;
  Status loop_status_;  // why the loop could not start, if it could not

  // Loop thread only.
  State state_ = State::kIdle;
  std::unique_ptr<Connection> connection_;
  std::vector<std::unique_ptr<Connection>> draining_;
  std::unique_ptr<ChannelConnector> connector_;
  ChannelCall* pending_ = nullptr;  // waiting for a connection
  Status last_error_;
  transport::io::MonotonicTime backoff_until_ =
      transport::io::MonotonicTime::InfinitePast();
  absl::Duration next_backoff_;
  bool shut_down_ = false;

  // Idle unary calls, taken and returned from any thread.
  transport::io::Mutex pool_mu_;
  std::vector<ClientCall*> free_calls_ ABSL_GUARDED_BY(pool_mu_);
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CHANNEL_CORE_H_
