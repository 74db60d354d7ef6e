#ifndef H2RPC_RPC_CLIENT_CONTEXT_H_
#define H2RPC_RPC_CLIENT_CONTEXT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "base/mutex.h"
#include "rpc/call_credentials.h"
#include "rpc/compression.h"
#include "rpc/metadata.h"
#include "rpc/status.h"
#include "rpc/tracing.h"

namespace h2rpc {

class ServerContext;

namespace internal {
class ClientContextAccess;
class ContextLink;

// Why a client call is cancelled from outside: what its status says.
enum class CancelCause : uint8_t {
  kTryCancel,        // CANCELLED: ClientContext::TryCancel
  kParentCancelled,  // CANCELLED: the server call it was made for
  kParentDeadline,   // DEADLINE_EXCEEDED: that server call's deadline
  kParentEnded,      // CANCELLED: that server call is over
};
// The status a call cancelled for `cause` ends with. Allocates the message.
Status CancelStatus(CancelCause cause);

// What ClientContext::TryCancel reaches: the channel's call.
class CancellableClientCall {
 public:
  // Any thread, under the context's mutex.
  virtual void RequestCancel(CancelCause cause) = 0;

 protected:
  ~CancellableClientCall() = default;
};
}  // namespace internal

// What a ClientContext made from a ServerContext inherits (gRPC C++'s
// class of the same name; its census tracing option is the trace context).
// Default: the deadline, the cancellation and the trace context.
class PropagationOptions {
 public:
  PropagationOptions& enable_deadline_propagation() {
    deadline_ = true;
    return *this;
  }
  PropagationOptions& disable_deadline_propagation() {
    deadline_ = false;
    return *this;
  }
  PropagationOptions& enable_cancellation_propagation() {
    cancellation_ = true;
    return *this;
  }
  PropagationOptions& disable_cancellation_propagation() {
    cancellation_ = false;
    return *this;
  }
  // The trace context (rpc/tracing.h): the call continues the trace of
  // the server call, as the child of its span.
  PropagationOptions& enable_tracing_propagation() {
    tracing_ = true;
    return *this;
  }
  PropagationOptions& disable_tracing_propagation() {
    tracing_ = false;
    return *this;
  }
  bool is_deadline_propagated() const { return deadline_; }
  bool is_cancellation_propagated() const { return cancellation_; }
  bool is_tracing_propagated() const { return tracing_; }

 private:
  bool deadline_ = true;
  bool cancellation_ = true;
  bool tracing_ = true;
};

// Per-call settings and results on the client, as in gRPC C++: a deadline,
// metadata to send, and the server's initial and trailing metadata once the
// call is over. One context per call; not reusable. Methods are not
// thread-safe except TryCancel().
class ClientContext {
 public:
  ClientContext() = default;
  // A context for a call a server handler makes on behalf of the call
  // `parent` serves (a service calling another one). As grpc-go's handler
  // context and gRPC C++'s FromServerContext, by `options`:
  //   - deadline: the call's deadline is the earlier of the parent's and
  //     its own (set_deadline cannot extend it past the parent's);
  //   - cancellation: the call is cancelled when the parent call is, from
  //     whatever thread and channel it runs on, in that channel loop's next
  //     iteration: CANCELLED when the parent was cancelled (its client
  //     cancelled, its connection was lost, or its handler called
  //     TryCancel), DEADLINE_EXCEEDED when the parent's deadline passed. A
  //     call still running when the parent call ends (its handler returned,
  //     called UnaryDone, or its reactor's OnDone came), also normally, is
  //     cancelled too (CANCELLED), as in gRPC and grpc-go; a call that
  //     finished before is untouched. A context made from a parent already
  //     cancelled or over fails its call at once.
  // Made while the parent's handler runs (the ServerContext is valid), on
  // any thread. Allocates nothing; links this context to the parent's
  // (under one of a fixed set of mutexes) when it inherits cancellation,
  // until it is destroyed.
  explicit ClientContext(const ServerContext& parent,
                         PropagationOptions options = PropagationOptions());
  // The same on the heap: gRPC C++'s shape.
  static std::unique_ptr<ClientContext> FromServerContext(
      const ServerContext& parent,
      PropagationOptions options = PropagationOptions());
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;
  ~ClientContext();

  // Absolute deadline on the wall clock. Default: none (InfiniteFuture).
  // Converted here, once, to the monotonic clock that every timer inside
  // h2rpc uses: a later step of the wall clock does not move it. A deadline
  // already past when the call starts fails it with DEADLINE_EXCEEDED
  // without opening a stream.
  void set_deadline(absl::Time deadline);
  // Deadline = now + timeout, on the monotonic clock (the wall clock is not
  // read).
  void set_timeout(absl::Duration timeout);
  // The deadline on the wall clock, converted back when called (it differs
  // from what set_deadline() was given by any wall-clock step since): the
  // earlier of this context's and an inherited one.
  absl::Time deadline() const;

  // Metadata sent with the call. Keys must be lowercase [0-9a-z_.-] and not
  // reserved (grpc-*, te, content-type, user-agent...); a bad key fails the
  // call with INTERNAL naming it. Values of "-bin" keys may hold any bytes.
  void AddMetadata(absl::string_view key, absl::string_view value) {
    send_metadata_.Add(key, value);
  }
  const Metadata& send_metadata() const { return send_metadata_; }

  // Compresses the call's messages with `algorithm` (sent as grpc-encoding;
  // see rpc/compression.h). Default: ChannelOptions::default_compression.
  // A server that does not take it answers UNIMPLEMENTED.
  void set_compression_algorithm(CompressionAlgorithm algorithm) {
    compression_ = algorithm;
  }
  absl::optional<CompressionAlgorithm> compression_algorithm() const {
    return compression_;
  }
  // Whether the response message last received (the unary response, or the
  // message of the last successful read) arrived compressed.
  bool last_message_compressed() const { return last_message_compressed_; }
  // The algorithm the server compresses its messages with (its
  // grpc-encoding), once its response headers arrived
  // (OnReadInitialMetadataDone, or the call's end); identity before and when it
  // sent none.
  CompressionAlgorithm server_compression_algorithm() const {
    return server_compression_;
  }

  // Whether the call waits for the channel to connect (gRPC's
  // wait_for_ready). Default false: a call made while the channel is in
  // TRANSIENT_FAILURE (its last connection attempt failed, and it waits out
  // the reconnect backoff) fails at once with UNAVAILABLE and that attempt's
  // error, as does a call waiting for an attempt that fails. True: the call
  // waits across failed attempts until the channel is READY, its deadline
  // passes (DEADLINE_EXCEEDED) or it is cancelled (CANCELLED). Either way a
  // call that reached a connection is not retried when that connection
  // fails (unless its retryPolicy says so). A stream the server refused
  // before processing it (REFUSED_STREAM, or past a GOAWAY's last stream
  // id) is started again at once, up to 3 times; after that a call fails
  // with UNAVAILABLE, while a wait_for_ready one waits through refusals as
  // through failed connection attempts: started again after each reconnect
  // backoff (ChannelOptions::initial_backoff and on) until its deadline.
  // Unless set here, a service config's waitForReady for the method applies
  // (ChannelOptions::service_config).
  void set_wait_for_ready(bool wait_for_ready) {
    wait_for_ready_ = wait_for_ready;
    wait_for_ready_set_ = true;
  }
  bool wait_for_ready() const { return wait_for_ready_; }

  // Call credentials for this call (gRPC C++'s set_credentials): their
  // metadata is sent after the channel's own call credentials, if it has
  // any (rpc/call_credentials.h, also for the security level they need).
  // Default: none.
  void set_credentials(std::shared_ptr<CallCredentials> credentials) {
    credentials_ = std::move(credentials);
  }
  const std::shared_ptr<CallCredentials>& credentials() const {
    return credentials_;
  }

  // ":authority" for this call. Default: the channel's target.
  void set_authority(std::string authority) {
    authority_ = std::move(authority);
  }
  const std::string& authority() const { return authority_; }

  // The span the call's spans are children of, and its W3C tracestate, on
  // a channel with a Tracer (rpc/tracing.h): the trace continues there
  // (sampled or not as `parent` says). Default: none (an invalid
  // TraceContext), and the call starts a trace; a context made from a
  // ServerContext has the server call's span. A tracestate W3C would not
  // accept (ValidTracestate) is not sent.
  void set_trace_parent(const TraceContext& parent,
                        std::string trace_state = std::string()) {
    trace_parent_ = parent;
    trace_state_ = std::move(trace_state);
  }
  const TraceContext& trace_parent() const { return trace_parent_; }
  const std::string& trace_state() const { return trace_state_; }

  // The server's metadata, filled in when the call completes.
  const Metadata& GetServerInitialMetadata() const { return initial_metadata_; }
  const Metadata& GetServerTrailingMetadata() const {
    return trailing_metadata_;
  }

  // Cancels the call if it is in progress: the server sees RST_STREAM(CANCEL)
  // and the call ends with CANCELLED; before the call starts, it fails at
  // once with CANCELLED when started. Thread-safe. Does nothing once the
  // call is over (its status known), also to a call the context is used for
  // afterwards.
  void TryCancel();

 private:
  // The channel's calls reach the fields below through it.
  friend class internal::ClientContextAccess;
  friend class internal::ContextLink;

  // The call (or the next one) is cancelled for `cause`; a cancellation
  // already recorded stays.
  void Cancel(internal::CancelCause cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The deadline on the monotonic clock (time since its epoch);
  // InfiniteDuration: none.
  absl::Duration monotonic_deadline_ = absl::InfiniteDuration();
  // The parent call's (see the constructor from a ServerContext), the same
  // way.
  absl::Duration inherited_deadline_ = absl::InfiniteDuration();
  absl::optional<CompressionAlgorithm> compression_;
  bool last_message_compressed_ = false;      // written on the loop thread
  CompressionAlgorithm server_compression_ =  // written on the loop thread
      CompressionAlgorithm::kIdentity;
  bool wait_for_ready_ = false;
  bool wait_for_ready_set_ = false;  // by set_wait_for_ready
  Metadata send_metadata_;
  std::shared_ptr<CallCredentials> credentials_;
  std::string authority_;
  TraceContext trace_parent_;
  std::string trace_state_;
  Metadata initial_metadata_;
  Metadata trailing_metadata_;
  // Bytes of response messages a streaming call holds unread (queued with
  // no read waiting), counted against the server's flow-control window.
  // Written on the loop thread; read by tests (test/util/client_call_peer.h).
  std::atomic<size_t> held_bytes_{0};

  // Links TryCancel (any thread) to the call while it runs (see
  // ClientContextAccess::Bind and Unbind).
  Mutex mu_;
  internal::CancellableClientCall* call_ ABSL_GUARDED_BY(mu_) = nullptr;
  // TryCancel (or the parent's cancellation) came before any call was
  // linked, for cancel_cause_.
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  internal::CancelCause cancel_cause_ ABSL_GUARDED_BY(mu_) =
      internal::CancelCause::kTryCancel;
  // A call linked here has ended: TryCancel does nothing unless another is
  // linked.
  bool call_ended_ ABSL_GUARDED_BY(mu_) = false;

  // The link to a parent ServerContext whose cancellation this context
  // inherits (internal/context_link.h). All guarded by link_stripe_, one
  // of a fixed set of mutexes chosen by the parent's address (the analysis
  // cannot name a mutex chosen at run time): null while not linked.
  Mutex* link_stripe_ = nullptr;  // set before linking, then constant
  const ServerContext* parent_ = nullptr;
  ClientContext* prev_sibling_ = nullptr;
  ClientContext* next_sibling_ = nullptr;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CLIENT_CONTEXT_H_
