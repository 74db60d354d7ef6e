#ifndef H2RPC_RPC_SERVER_CONTEXT_H_
#define H2RPC_RPC_SERVER_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "rpc/auth_context.h"
#include "rpc/compression.h"
#include "rpc/metadata.h"
#include "rpc/peer_identity.h"
#include "rpc/tracing.h"

namespace h2rpc {

class ClientContext;

namespace internal {
class ContextLink;
class ServerContextAccess;

// What ServerContext::TryCancel reaches: the call the context belongs to.
class CancellableServerCall {
 public:
  virtual void RequestCancel() = 0;

 protected:
  ~CancellableServerCall() = default;
};
}  // namespace internal

// Per-call facts and settings on the server: what the client sent (metadata,
// deadline, peer) and the metadata to send back. Valid while the handler
// runs: until a synchronous handler returns, a callback handler calls its
// UnaryDone, or a reactor's OnDone. Accessors and setters are for the
// handler's thread (or the loop thread, for reactors); IsCancelled() and
// TryCancel() are safe from any thread in that time, also when they race the
// handler's end.
class ServerContext {
 public:
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  // The client's metadata (user-agent included; transport headers removed).
  const Metadata& client_metadata() const { return *client_metadata_; }
  // From the client's grpc-timeout, on the wall clock (converted from the
  // server's monotonic deadline when called); InfiniteFuture when it sent
  // none.
  absl::Time deadline() const;
  // How many attempts of this call the client made before this one (its
  // grpc-previous-rpc-attempts: a call retried by its retryPolicy); 0 for
  // a first attempt.
  int previous_rpc_attempts() const { return previous_rpc_attempts_; }
  // "/package.Service/Method".
  absl::string_view method() const { return method_; }
  // On a server with a Tracer (rpc/tracing.h): the call's span (its trace
  // id is the client's when the request carried a valid traceparent), and
  // the request's tracestate; an invalid TraceContext and empty otherwise.
  // A ClientContext made from this context continues the trace.
  const TraceContext& trace_context() const { return trace_context_; }
  absl::string_view trace_state() const { return trace_state_; }
  absl::string_view authority() const { return authority_; }
  // The client's address: "127.0.0.1:54321", "[::1]:54321". On a
  // unix-domain port, the client's socket address if it bound one
  // ("unix:/path", "unix-abstract:name"), else (the usual case) the
  // server's own, as gRPC C++ reports it: "unix:/path/of/the/server" or
  // "unix-abstract:name".
  const std::string& peer() const { return peer_; }
  // What TLS established about the client (its verified certificate's
  // subject and subject alternative names, for authorization); null on a
  // plaintext port. On a TLS port without a client certificate it is not
  // null but has an empty subject and certificate_verified false.
  const std::shared_ptr<const PeerIdentity>& peer_identity() const {
    return peer_identity_;
  }
  // Who is calling, as properties (rpc/auth_context.h): the transport's,
  // and what the server's AuthMetadataProcessor added. Built on the first
  // call (which allocates it) unless the processor did; by the handler's
  // thread (not thread-safe).
  const AuthContext& auth_context() const;
  // The connection the call arrived on: never 0, the same for every call on
  // one connection, and never that of another connection of the process
  // (not even of one closed before). For limits per connection (as
  // HealthCheckServiceOptions::max_watches_per_connection), where peer()
  // would not do: on a unix-domain port every client usually shares one.
  uint64_t connection_id() const { return connection_id_; }
  // True once the call cannot complete normally any more: the client
  // cancelled, the deadline passed, the connection was lost, or TryCancel()
  // was called. Any thread: an atomic flag, set on the loop thread (and by
  // TryCancel), never a look at the call's transport stream.
  bool IsCancelled() const {
    return cancelled_.load(std::memory_order_acquire);
  }
  // Cancels the call from the server's side: the client sees CANCELLED
  // (RST_STREAM(CANCEL)), the handler's reads and writes fail, and the
  // response and status are not sent. Any thread, while the handler runs.
  // A TryCancel racing the handler's end (done(), Finish) either cancels
  // this call or does nothing: it never reaches another call, even when the
  // server reuses this call's objects for the next one.
  void TryCancel() { call_->RequestCancel(); }

  // Compresses the response messages with `algorithm` if the client accepts
  // it (lists it in grpc-accept-encoding), else sends them uncompressed (see
  // rpc/compression.h). Default: ServerOptions::default_compression. Takes
  // effect when called before the response headers go out (the first write,
  // SendInitialMetadata, or the end of a unary handler).
  void set_compression_algorithm(CompressionAlgorithm algorithm) {
    compression_ = algorithm;
  }
  // The encodings the client accepts for the response (identity always).
  CompressionAlgorithmSet client_accepted_compression() const {
    return client_accepted_;
  }
  // The algorithm the client compresses its messages with (its
  // grpc-encoding; identity when it sent none): each message arrives
  // compressed with it or uncompressed (last_message_compressed()).
  CompressionAlgorithm client_compression_algorithm() const {
    return client_compression_;
  }
  // Whether the request message last received (the unary or
  // server-streaming request, or the message of the last successful read)
  // arrived compressed.
  bool last_message_compressed() const { return last_message_compressed_; }

  // Metadata sent with the response headers and trailers. Keys follow the
  // same rules as on the client; an invalid one is dropped from the reply.
  // The one "grpc-" key allowed is the trailer "grpc-retry-pushback-ms"
  // (gRPC's A6): a client retrying the call by its retryPolicy waits that
  // many milliseconds before the next attempt, or does not retry for a
  // negative value.
  void AddInitialMetadata(absl::string_view key, absl::string_view value) {
    initial_metadata_.Add(key, value);
  }
  void AddTrailingMetadata(absl::string_view key, absl::string_view value) {
    trailing_metadata_.Add(key, value);
  }

 private:
  // The server's calls make contexts and reach the fields below through
  // it; client contexts made from this one link to it through ContextLink.
  friend class internal::ContextLink;
  friend class internal::ServerContextAccess;
  ServerContext() = default;

  // Copied from the call's transport stream when the context is bound to
  // it (views into the stream, valid while the handler runs).
  const Metadata* client_metadata_ = nullptr;
  // The call's span (ServerOptions::tracer) and the tracestate it carries;
  // invalid and empty untraced.
  TraceContext trace_context_;
  absl::string_view trace_state_;
  absl::string_view method_;
  absl::string_view authority_;
  // On the monotonic clock (time since its epoch); InfiniteDuration: none.
  int previous_rpc_attempts_ = 0;
  absl::Duration monotonic_deadline_ = absl::InfiniteDuration();
  CompressionAlgorithmSet client_accepted_;
  CompressionAlgorithm client_compression_ = CompressionAlgorithm::kIdentity;

  internal::CancellableServerCall* call_ = nullptr;
  uint64_t connection_id_ = 0;
  std::string peer_;
  std::shared_ptr<const PeerIdentity> peer_identity_;
  mutable std::unique_ptr<AuthContext> auth_context_;  // see auth_context()
  absl::optional<CompressionAlgorithm> compression_;
  bool last_message_compressed_ = false;  // written on the loop thread
  std::atomic<bool> cancelled_{false};
  // The call is over (set at its end, cleared for the next one).
  mutable std::atomic<bool> ended_{false};
  // The first of the client contexts made from this one that inherit its
  // cancellation (internal/context_link.h): written under the link's
  // mutex, read without it to skip that mutex when there are none.
  mutable std::atomic<ClientContext*> first_child_{nullptr};
  Metadata initial_metadata_;
  Metadata trailing_metadata_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_SERVER_CONTEXT_H_
