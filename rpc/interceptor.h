#ifndef H2RPC_RPC_INTERCEPTOR_H_
#define H2RPC_RPC_INTERCEPTOR_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/client_context.h"
#include "rpc/metadata.h"
#include "rpc/server_context.h"
#include "rpc/status.h"

namespace h2rpc {

// Interceptors see every call of a channel (ChannelOptions::interceptors)
// or a server (Server::Builder::AddInterceptor) at gRPC C++'s hook points:
// the start (where they may add or read metadata, or fail the call early),
// each message sent and received, the initial metadata received, and the
// end with its status and how long the call took. They run in the order
// installed; a call without interceptors pays nothing for the feature.
//
// An interceptor is one object shared by all calls: its hooks run on many
// threads at once (the caller's thread for OnStart on a channel, the
// handler's or the loop's for the rest) and must be thread-safe and must
// not block. A hook sees the call through a CallInfo that lives only during
// the hook. Per-call state, if any, is the interceptor's to keep (the call's
// start time is given to OnFinish). Interceptors must outlive the channel or
// server that holds them.

// What a client interceptor sees of a call.
struct ClientCallInfo {
  // "/package.Service/Method".
  absl::string_view method;
  // The call's context: OnStart may add metadata (AddMetadata) or change
  // its settings; later hooks may read it.
  ClientContext* context;
};

class ClientInterceptor {
 public:
  virtual ~ClientInterceptor() = default;

  // Before the call is sent, on the thread that starts it. A non-OK status
  // fails the call with it (later interceptors and the transport are
  // skipped; OnFinish still runs for the interceptors whose OnStart ran).
  virtual Status OnStart(const ClientCallInfo& call) { return Status(); }
  // A request message of `bytes` bytes (serialized, before compression) is
  // sent. The caller's thread (unary) or the loop thread (streaming).
  virtual void OnSendMessage(const ClientCallInfo& call, size_t bytes) {}
  // The server's response headers arrived. Loop thread.
  virtual void OnReceiveInitialMetadata(const ClientCallInfo& call,
                                        const Metadata& metadata) {}
  // A response message of `bytes` bytes (serialized, decompressed)
  // arrived. Loop thread.
  virtual void OnReceiveMessage(const ClientCallInfo& call, size_t bytes) {}
  // The call ended with `status` (and the server's `trailing` metadata),
  // `elapsed` after OnStart. Loop thread (or the starting thread, for a
  // call that failed before it was sent).
  virtual void OnFinish(const ClientCallInfo& call, const Status& status,
                        const Metadata& trailing, absl::Duration elapsed) {}
};

// What a server interceptor sees of a call.
struct ServerCallInfo {
  // "/package.Service/Method".
  absl::string_view method;
  // The call's context: client metadata, deadline, peer; OnStart may add
  // initial or trailing metadata.
  ServerContext* context;
};

class ServerInterceptor {
 public:
  virtual ~ServerInterceptor() = default;

  // The call's request headers arrived and it is about to reach its
  // handler. A non-OK status ends the call with it instead (the handler
  // never runs; OnFinish still runs for the interceptors whose OnStart
  // ran). Loop thread.
  virtual Status OnStart(const ServerCallInfo& call) { return Status(); }
  // A request message of `bytes` bytes (serialized, decompressed) arrived.
  virtual void OnReceiveMessage(const ServerCallInfo& call, size_t bytes) {}
  // A response message of `bytes` bytes (serialized, before compression) is
  // sent.
  virtual void OnSendMessage(const ServerCallInfo& call, size_t bytes) {}
  // The call ended with `status`, `elapsed` after OnStart (a cancelled call
  // ends with CANCELLED). Loop thread.
  virtual void OnFinish(const ServerCallInfo& call, const Status& status,
                        absl::Duration elapsed) {}
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_INTERCEPTOR_H_
