#ifndef H2RPC_RPC_CHANNEL_H_
#define H2RPC_RPC_CHANNEL_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "rpc/byte_buffer.h"
#include "rpc/channel_options.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/connectivity_state.h"
#include "rpc/credentials.h"
#include "rpc/interceptor.h"
#include "rpc/name_resolver.h"
#include "rpc/status.h"
#include "rpc/version.h"

namespace h2rpc {

class Channel;

namespace transport::io {
class EventLoop;
}  // namespace transport::io
namespace internal {
class ChannelCore;
class ChannelCoreAccess;
transport::io::EventLoop& ChannelLoop(Channel& channel);
}  // namespace internal

// Makes a channel to `target`, in gRPC's naming syntax (gRPC's naming.md):
//   "host:port", "dns:///host:port", "dns:host:port": the host name's
//     addresses (port 443 if none is given);
//   "ipv4:10.0.0.1:50051,10.0.0.2:50051", "ipv6:[::1]:50051,...": these
//     addresses;
//   "unix:relative/path", "unix:/absolute/path", "unix:///absolute/path":
//     a unix-domain socket; "unix-abstract:name": one in the abstract
//     namespace.
// A target that is none of these (an unknown scheme, "dns://server/..." with
// a DNS server, a malformed address) makes a channel whose every call fails
// with INVALID_ARGUMENT saying why (GetState() says TRANSIENT_FAILURE).
// The channel lives as long as
// a shared_ptr to it does (generated stubs hold one), so it outlives every
// stub that can still issue calls on it. Any thread.
//
// Dropping the last reference moves the channel to SHUTDOWN (releasing
// threads in WaitForStateChange and WaitForConnected, see there), ends every
// call not yet over with CANCELLED, none retried, whether on a connection,
// waiting for one (wait_for_ready included) or between two attempts (each
// call's `done` or OnDone has run, once, when the destruction returns), and
// stops the channel's event loop. When
// that happens on the loop thread itself (in a `done` callback or a reactor's
// OnDone), the channel is torn down on a detached thread of its own instead,
// which may still be running when the callback returns; a process that exits
// right then may do so before it has finished.
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

// A client's link to the servers of one target. Connects lazily on the
// first call (or GetState(true)): resolves the target, and keeps an HTTP/2
// connection (carrying any number of concurrent calls) to one address or
// to each, as ChannelOptions::lb_policy says; reconnects with backoff after
// a failure, and drops its connections after ChannelOptions::idle_timeout
// without calls. Its connectivity state (rpc/connectivity_state.h)
// aggregates its connections' as the policy defines. Owns
// an event loop thread on which the transport and completion callbacks run;
// host names are looked up on a resolver thread (ChannelOptions::resolver),
// never on the loop. Made by CreateChannel. Thread-safe.
class Channel final {
 public:
  // See CreateChannel for what the last reference's release does.
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  const std::string& target() const;

  // The channel's connectivity state. With `try_to_connect`, an IDLE
  // channel starts connecting (the state returned is still IDLE; the
  // change follows on the loop). Any thread; never blocks, never allocates.
  ConnectivityState GetState(bool try_to_connect);
  // Blocks until the state is no longer `last_observed` (true; also when it
  // changed and changed back while waiting) or until `deadline` (false).
  // Any thread except the channel's loop thread (callbacks must not block).
  // A thread waiting here when the channel is destroyed (through a raw
  // pointer: a shared_ptr would keep it alive) sees SHUTDOWN: it returns
  // true before the destruction goes on, and must not touch the channel
  // afterwards.
  bool WaitForStateChange(ConnectivityState last_observed, absl::Time deadline);
  // Connects (GetState(true)) and blocks until the channel is READY (true)
  // or `deadline` passes or the channel is destroyed (false). Threads as
  // for WaitForStateChange.
  bool WaitForConnected(absl::Time deadline);

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

  // The same with serialized messages (the generic layer stubs build on):
  // calls of any method, the request sent as given and the response
  // copied into `*response` (whose capacity is kept: a warm call allocates
  // nothing).
  Status GenericUnaryCall(ClientContext* context, absl::string_view method,
                          absl::string_view request, std::string* response);
  Status GenericUnaryCall(ClientContext* context, absl::string_view method,
                          const ByteBuffer& request, ByteBuffer* response);
  // `done` as for AsyncUnaryCall.
  void AsyncGenericUnaryCall(ClientContext* context, absl::string_view method,
                             absl::string_view request, std::string* response,
                             absl::AnyInvocable<void(const Status&)> done);
  void AsyncGenericUnaryCall(ClientContext* context, absl::string_view method,
                             const ByteBuffer& request, ByteBuffer* response,
                             absl::AnyInvocable<void(const Status&)> done);

  // Streaming calls with a reactor (callbacks on the channel's loop
  // thread): bind the call, then call reactor->StartCall(). With ByteBuffer
  // as Request and Response (GenericClientBidiReactor and the others of
  // rpc/client_stream.h), calls of any method with serialized messages.
  // `context` and the reactor must live until OnDone; `method` is copied.
  // Server streaming sends `request` (serialized here) and half-closes; client
  // streaming puts the single response in `*response` before OnDone(OK).
  template <class Request, class Response>
  void AsyncBidiStreamingCall(ClientContext* context, absl::string_view method,
                              ClientBidiReactor<Request, Response>* reactor) {
    BindStreamingCall(context, method, nullptr, nullptr, reactor,
                      internal::kGenericCall<Request, Response>);
  }
  template <class Request, class Response>
  void AsyncServerStreamingCall(ClientContext* context,
                                absl::string_view method,
                                const Request& request,
                                ClientReadReactor<Response>* reactor) {
    BindStreamingCall(context, method, &request, nullptr, reactor,
                      internal::kGenericCall<Request, Response>);
  }
  template <class Request, class Response>
  void AsyncClientStreamingCall(ClientContext* context,
                                absl::string_view method, Response* response,
                                ClientWriteReactor<Request>* reactor) {
    BindStreamingCall(context, method, nullptr, response, reactor,
                      internal::kGenericCall<Request, Response>);
  }

  // Blocking streaming calls, started at once. `context` (and `response`)
  // must outlive the returned object; `method` is copied.
  template <class Request, class Response>
  std::unique_ptr<ClientReaderWriter<Request, Response>> BidiStreamingCall(
      ClientContext* context, absl::string_view method) {
    return std::make_unique<ClientReaderWriter<Request, Response>>(
        internal::BlockingStreamStart{
            core_.get(), context, method, nullptr, nullptr,
            internal::kGenericCall<Request, Response>});
  }
  template <class Request, class Response>
  std::unique_ptr<ClientReader<Response>> ServerStreamingCall(
      ClientContext* context, absl::string_view method,
      const Request& request) {
    return std::make_unique<ClientReader<Response>>(
        internal::BlockingStreamStart{
            core_.get(), context, method, &request, nullptr,
            internal::kGenericCall<Request, Response>});
  }
  template <class Request, class Response>
  std::unique_ptr<ClientWriter<Request>> ClientStreamingCall(
      ClientContext* context, absl::string_view method, Response* response) {
    return std::make_unique<ClientWriter<Request>>(
        internal::BlockingStreamStart{
            core_.get(), context, method, nullptr, response,
            internal::kGenericCall<Request, Response>});
  }

 private:
  friend class internal::ChannelCoreAccess;  // tests
  friend transport::io::EventLoop& internal::ChannelLoop(Channel& channel);
  friend std::shared_ptr<Channel> CreateChannel(
      absl::string_view target, std::shared_ptr<ChannelCredentials> credentials,
      const ChannelOptions& options);
  explicit Channel(std::unique_ptr<internal::ChannelCore> core);

  // `generic`: a call of the generic API (CallMetrics records its method
  // as "other").
  void BindStreamingCall(ClientContext* context, absl::string_view method,
                         internal::ConstMessageRef request,
                         internal::MessageRef response,
                         ClientStreamReactor* reactor, bool generic);

  std::unique_ptr<internal::ChannelCore> core_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_CHANNEL_H_
