#ifndef H2RPC_RPC_INTERNAL_CHANNEL_CORE_H_
#define H2RPC_RPC_INTERNAL_CHANNEL_CORE_H_

#include <cstddef>
#include <cstdint>
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
#include "rpc/connectivity_state.h"
#include "rpc/internal/channel_connector.h"
#include "rpc/internal/connection_backoff.h"
#include "rpc/internal/connectivity_watch.h"
#include "rpc/internal/member_task.h"
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
// still draining), the connector and its backoff, the connectivity state,
// the calls waiting for a connection, the idle timer and the pool of unary
// calls. Channel forwards to it; the calls (ChannelCall and its subclasses)
// hold a pointer to it, never to the Channel.
//
// The connection lifecycle (docs/design.md, "Connection lifecycle"), all on
// the loop thread:
//   IDLE --call or GetState(true)--> CONNECTING (an attempt: resolve, TCP
//     connect, TLS, HTTP/2 handshake, until its deadline)
//   CONNECTING --server's SETTINGS--> READY (backoff reset; waiting calls go)
//   CONNECTING --attempt failed--> TRANSIENT_FAILURE (waiting calls fail
//     with UNAVAILABLE, except wait_for_ready ones)
//   TRANSIENT_FAILURE --backoff passed--> CONNECTING
//   READY --GOAWAY or connection closed--> IDLE
//   any --idle_timeout without calls--> IDLE (connection dropped gracefully)
//   any --channel destroyed--> SHUTDOWN
//
// Threads: the call-starting methods, ReturnCall, GetState, the waits and
// the accessors from any thread; StartOnLoop, OnCallEnded and the
// transport's callbacks on the loop thread.
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
  // Invalid `options` (CheckChannelOptions) make every call fail.
  ChannelCore(absl::string_view target, const ChannelCredentials* credentials,
              const ChannelOptions& options);
  // Fails calls still in flight with CANCELLED, then stops the loop. Does
  // not wait for a host-name lookup under way (its result is dropped). Not
  // on the loop thread (see Destroy). ShutdownWatch() must have run.
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

  // The Channel's connectivity (see there). Any thread; the waits block.
  ConnectivityState GetState(bool try_to_connect);
  bool WaitForStateChange(ConnectivityState last_observed, absl::Time deadline);
  bool WaitForConnected(absl::Time deadline);
  // Any thread, once, before the core is destroyed (by ~Channel, while
  // threads may still wait through a raw Channel pointer): SHUTDOWN,
  // waiters released; returns once none is left.
  void ShutdownWatch() { watch_.Shutdown(); }

  // Loop thread: puts `call` on a stream of the connection, or makes it
  // wait for one (connecting first if the channel is idle), or fails it
  // (TRANSIENT_FAILURE without wait_for_ready, unusable channel, shutting
  // down).
  void StartOnLoop(ChannelCall* call);
  // Loop thread: a call counted by StartOnLoop has its result.
  void OnCallEnded();
  // Loop thread: the status of a call whose deadline passed while it
  // waited for a connection.
  Status PendingDeadlineStatus() const;
  // Any thread: a unary call is over; back to the pool.
  void ReturnCall(ClientCall* call);

  // For tests, any thread: the state's history and waiters; the keepalive
  // time the channel's next connection gets.
  const ConnectivityWatch& connectivity() const { return watch_; }
  absl::Duration keepalive_time() const;

 private:
  using Connection =
      transport::io::SocketConnection<transport::http2::ClientSession>;
  // A timer that calls a member function on the loop thread.
  template <void (ChannelCore::*kFire)()>
  class MemberTimer final : public transport::io::Timer {
   public:
    explicit MemberTimer(ChannelCore* core) : core_(core) {}
    void OnTimer() override { (core_->*kFire)(); }

   private:
    ChannelCore* const core_;
  };

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
  void SetState(ConnectivityState state);
  // Leaves IDLE: connects, or waits out a backoff still running.
  void ExitIdle();
  // From GetState(true) and WaitForConnected.
  void ConnectIfIdle();
  // Starts an attempt now.
  void Connect();
  void OnConnected(transport::io::FileDescriptor socket,
                   std::string peer) override;
  void OnConnectFailed(const Status& why) override;
  // The attempt's deadline passed during the TLS or HTTP/2 handshake.
  void OnAttemptDeadline();
  // The attempt failed with `why`: TRANSIENT_FAILURE until the backoff has
  // passed.
  void EnterTransientFailure(const Status& why);
  void OnBackoffDone();
  // Fails the calls waiting for a connection with `why`; wait_for_ready
  // ones stay when `keep_wait_for_ready`.
  void FailPending(const Status& why, bool keep_wait_for_ready);
  // Schedules the idle check once no call is in progress.
  void ArmIdleTimer();
  void OnIdleTimer();
  void EnterIdle();
  void OnConnectionReady(transport::http2::ClientSession* connection) override;
  void OnGoAwayReceived(transport::http2::ClientSession* connection,
                        uint32_t error_code,
                        absl::string_view debug_data) override;
  void OnConnectionClosed(transport::http2::ClientSession* connection,
                          const Status& why) override;
  void OnConnectionDraining(
      transport::http2::ClientSession* connection) override;
  void Shutdown();

  const std::string target_;
  const ChannelOptions options_;
  // TLS context of the channel's connections; null: plaintext.
  std::shared_ptr<const transport::tls::TlsContext> tls_;
  // Unusable credentials or options: why every call fails.
  Status channel_error_;
  // The name the server's certificate must match (TLS).
  std::string tls_server_name_;
  std::string default_authority_;
  absl::string_view scheme_ = "http";
  const CallSettings settings_;
  transport::io::EventLoop loop_;
  Status loop_status_;  // why the loop could not start, if it could not
  ConnectivityWatch watch_;

  // Loop thread only.
  // Options of new connections; keepalive.time doubles on GOAWAY
  // ENHANCE_YOUR_CALM "too_many_pings".
  transport::http2::ConnectionOptions transport_options_;
  ConnectivityState state_;  // what watch_ publishes
  // The connection: under way (handshake) in CONNECTING, established in
  // READY, null otherwise.
  std::unique_ptr<Connection> connection_;
  std::vector<std::unique_ptr<Connection>> draining_;
  std::unique_ptr<ChannelConnector> connector_;
  ConnectionBackoff backoff_;
  transport::io::MonotonicTime attempt_deadline_;
  absl::Duration attempt_timeout_;  // the current attempt's allowance
  ChannelCall* pending_ = nullptr;  // waiting for a connection
  Status last_error_;               // UNAVAILABLE: why the last attempt failed
  int active_calls_ = 0;            // counted by StartOnLoop, not yet ended
  transport::io::MonotonicTime idle_since_;  // active_calls_ last became 0
  // The connection that last reported "too_many_pings" (one doubling per
  // connection).
  transport::http2::ClientSession* calmed_connection_ = nullptr;
  bool shut_down_ = false;
  MemberTimer<&ChannelCore::OnAttemptDeadline> attempt_timer_{this};
  MemberTimer<&ChannelCore::OnBackoffDone> backoff_timer_{this};
  MemberTimer<&ChannelCore::OnIdleTimer> idle_timer_{this};
  MemberTask<ChannelCore, &ChannelCore::ConnectIfIdle> connect_task_{this};

  // keepalive_time() for tests.
  mutable transport::io::Mutex keepalive_mu_;
  absl::Duration keepalive_time_ ABSL_GUARDED_BY(keepalive_mu_);

  // Idle unary calls, taken and returned from any thread.
  transport::io::Mutex pool_mu_;
  std::vector<ClientCall*> free_calls_ ABSL_GUARDED_BY(pool_mu_);
};

// Tests reach a Channel's core through it.
class ChannelCoreAccess {
 public:
  static ChannelCore& Core(Channel& channel) { return *channel.core_; }
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CHANNEL_CORE_H_
