#ifndef H2RPC_RPC_CHANNEL_H_
#define H2RPC_RPC_CHANNEL_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/credentials.h"
#include "rpc/name_resolver.h"
#include "rpc/status.h"

namespace h2rpc {

namespace internal {
class ChannelCore;
}  // namespace internal

// Settings of a Channel. Every field: default, unit.
struct ChannelOptions {
  // "user-agent" sent with every call.
  std::string user_agent = "h2rpc-cpp/0.1";
  // HTTP/2 settings and message size limits of the connection.
  ConnectionOptions connection;
  // Longest wait for a connection: resolving the target's host name and the
  // TCP connect together. Duration.
  absl::Duration connect_timeout = absl::Seconds(20);
  // Looks up the target's host name off the event loop (a target whose host
  // is an IP address needs no lookup). Null (default): the channel makes its
  // own, whose thread starts on the first lookup. A NameResolver may be
  // shared by several channels; they then look up one at a time.
  std::shared_ptr<NameResolver> resolver;
  // Reconnect backoff after a failed connect: first wait, growth factor,
  // longest wait. While backing off, calls fail fast with UNAVAILABLE.
  absl::Duration initial_backoff = absl::Seconds(1);
  double backoff_multiplier = 1.6;
  absl::Duration max_backoff = absl::Seconds(120);
  // TLS only: the name the server's certificate must match, sent as SNI
  // and as the default :authority of calls, instead of the target's host
  // (gRPC's GRPC_SSL_TARGET_NAME_OVERRIDE_ARG; for tests). Empty: none.
  std::string ssl_target_name_override;
  // CPU to pin the channel's event loop thread to; -1: not pinned.
  int loop_cpu = -1;
  // A streaming call's write completes once at most this many bytes wait
  // in its send buffer (see ClientStreamReactor). Bytes.
  size_t stream_write_buffer = 64 << 10;
  // How calls compress their messages unless their ClientContext says
  // otherwise (see rpc/compression.h).
  CompressionAlgorithm default_compression = CompressionAlgorithm::kIdentity;
};

class Channel;

// Makes a channel to `target` ("host:port", "[v6]:port"). It lives as long as
// a shared_ptr to it does (generated stubs hold one), so it outlives every
// stub that can still issue calls on it. Any thread.
//
// Dropping the last reference fails the calls still in flight with
// CANCELLED and stops the channel's event loop. When that happens on the
// loop thread itself (in a `done` callback or a reactor's OnDone), the
// channel is torn down on a detached thread of its own instead, which may
// still be running when the callback returns; a process that exits right
// then may do so before it has finished.
std::shared_ptr<Channel> CreateChannel(
    absl::string_view target, const ChannelOptions& options = ChannelOptions());
// The same with `credentials` securing the connection: TLS with
// SslCredentials() (the server's certificate must match the target's host,
// or ChannelOptions::ssl_target_name_override), plaintext with
// InsecureChannelCredentials() (what the form above uses). With unusable
// credentials (status() not OK) every call fails with UNAVAILABLE.
std::shared_ptr<Channel> CreateChannel(
    absl::string_view target, std::shared_ptr<ChannelCredentials> credentials,
    const ChannelOptions& options = ChannelOptions());

// A client's link to one server. Connects lazily on the first call, over one
// HTTP/2 connection that carries any number of concurrent calls, and
// reconnects (with backoff) after a failure. Owns an event loop thread on
// which the transport and completion callbacks run; host names are looked
// up on a resolver thread (ChannelOptions::resolver), never on the loop.
// Made by CreateChannel. Thread-safe.
class Channel final {
 public:
  // See CreateChannel for what the last reference's release does.
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  const std::string& target() const;

  // Blocking unary call: serializes `request`, waits for the response and
  // parses it into `response`. `method` is "/package.Service/Method".
  Status UnaryCall(ClientContext* context, absl::string_view method,
                   const google::protobuf::MessageLite& request,
                   google::protobuf::MessageLite* response);

  // Asynchronous unary call: returns at once (the request is serialized
  // and `method` copied before it does). `done` runs exactly once, on the
  // channel's loop thread, never on the caller's stack, even when the call
  // cannot start (past deadline, cancelled context, bad metadata, oversized
  // request): the caller may hold a lock that `done` takes. It must not
  // block. If the channel's loop could not start (ChannelOptions::loop_cpu
  // out of range), `done` runs on a thread of its own with the loop's
  // error. `context` and `response` must live until `done` runs.
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
  // and the reactor must live until OnDone; `method` is copied. Server
  // streaming sends `request` (serialized here) and half-closes; client
  // streaming puts the single response in `*response` before OnDone(OK).
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
  // must outlive the returned object; `method` is copied.
  template <class Request, class Response>
  std::unique_ptr<ClientReaderWriter<Request, Response>> BidiStreamingCall(
      ClientContext* context, absl::string_view method) {
    return std::make_unique<ClientReaderWriter<Request, Response>>(
        internal::BlockingStreamStart{core_.get(), context, method, nullptr,
                                      nullptr});
  }
  template <class Request, class Response>
  std::unique_ptr<ClientReader<Response>> ServerStreamingCall(
      ClientContext* context, absl::string_view method,
      const Request& request) {
    return std::make_unique<ClientReader<Response>>(
        internal::BlockingStreamStart{core_.get(), context, method, &request,
                                      nullptr});
  }
  template <class Request, class Response>
  std::unique_ptr<ClientWriter<Request>> ClientStreamingCall(
      ClientContext* context, absl::string_view method, Response* response) {
    return std::make_unique<ClientWriter<Request>>(
        internal::BlockingStreamStart{core_.get(), context, method, nullptr,
                                      response});
  }

 private:
  friend std::shared_ptr<Channel> CreateChannel(
      absl::string_view target, std::shared_ptr<ChannelCredentials> credentials,
      const ChannelOptions& options);
  explicit Channel(std::unique_ptr<internal::ChannelCore> core);

  void BindStreamingCall(ClientContext* context, absl::string_view method,
                         const google::protobuf::MessageLite* request,
                         google::protobuf::MessageLite* response,
                         ClientStreamReactor* reactor);

  std::unique_ptr<internal::ChannelCore> core_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CHANNEL_H_
