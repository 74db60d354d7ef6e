#ifndef H2RPC_RPC_REFLECTION_SERVICE_H_
#define H2RPC_RPC_REFLECTION_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "rpc/server.h"

namespace google::protobuf {
class DescriptorPool;
}  // namespace google::protobuf

namespace grpc::reflection::v1alpha {
class ServerReflectionRequest;
class ServerReflectionResponse;
}  // namespace grpc::reflection::v1alpha

namespace h2rpc {

// Settings of a ReflectionService. Every field: default, unit.
struct ReflectionServiceOptions {
  // Most ServerReflectionInfo calls open at once, over all connections; one
  // more fails at once with RESOURCE_EXHAUSTED naming the limit. The bound
  // on the whole (the connections are bounded by
  // ServerOptions::max_connections). An open call holds a server stream
  // (never a worker thread), its reactor (one object) and, while it answers
  // a request, that request and its response. Calls.
  size_t max_streams = 1000;
  // Most ServerReflectionInfo calls open at once on one connection
  // (ServerContext::connection_id()); one more on it fails at once with
  // RESOURCE_EXHAUSTED naming the limit, while other connections' calls go
  // on. So one client cannot take max_streams from the others without
  // opening max_streams / max_streams_per_connection connections (a tool
  // such as grpcurl or grpc_cli uses one call at a time). Calls.
  size_t max_streams_per_connection = 10;
  // Where files and symbols are looked up; must outlive the service. Null:
  // protobuf's generated pool (DescriptorPool::generated_pool(): every
  // .proto compiled into the binary), as gRPC C++ does.
  const google::protobuf::DescriptorPool* pool = nullptr;
};

// gRPC's server reflection service, grpc.reflection.v1alpha.ServerReflection
// (proto/grpc/reflection/v1alpha/reflection.proto), as gRPC C++'s
// ProtoServerReflection (what its ProtoServerReflectionPlugin adds): tools
// such as grpc_cli and grpcurl list a server's services and fetch the
// .proto descriptors they need to call them.
//
//   ReflectionService reflection;  // must outlive the server
//   Server::Builder builder;
//   builder.AddListeningPort("127.0.0.1:0", &port);
//   service.AddTo(builder);
//   reflection.AddTo(builder);  // before or after the other services
//   std::unique_ptr<Server> server = builder.BuildAndStart(&status);
//
// ServerReflectionInfo is a bidirectional stream; each request gets one
// response, in order, carrying the request (original_request) and its host
// (valid_host):
//   - list_services: the full names of the services registered on the
//     server (this one, grpc.reflection.v1alpha.ServerReflection, included),
//     sorted; the request's value is not checked.
//   - file_by_filename: the file of that name ("proto/grpc/testing/
//     test.proto": the name protoc was given).
//   - file_containing_symbol: the file declaring a fully-qualified service,
//     method, message (nested ones too), field, enum, enum value or
//     extension, as DescriptorPool::FindFileContainingSymbol finds it.
//   - file_containing_extension: the file declaring the extension of
//     containing_type numbered extension_number.
//   - all_extension_numbers_of_type: the numbers of every extension of the
//     type that the pool knows (in no particular order).
// A file is answered as serialized google.protobuf.FileDescriptorProtos: the
// file first, then its transitive dependencies, each once in the response;
// every response holds all a client needs to build the file, as gRPC C++
// does (responses are not trimmed of files an earlier response sent).
// A failed request is answered with error_response: NOT_FOUND naming the
// file, symbol, type or extension not found, UNIMPLEMENTED for a request
// that sets none of the fields above; the stream goes on. Every service in
// the pool is described, registered or not, as in gRPC.
//
// Bounds: a stream reads its next request only once the response to the
// previous one is written (flow control stalls a client that sends faster),
// so it holds at most one request and one response; both are freed once
// the response is written. A response larger than the server's
// ConnectionOptions::max_send_message_size fails the call with
// RESOURCE_EXHAUSTED.
//
// Threads. The stream runs on the server's loop threads as a callback
// reactor: it never holds a worker thread, and answers a request on the
// loop (lookups in the pool, which takes the pool's mutex, and serializing
// the files). Every method may be called from any thread, concurrently.
//
// Server shutdown. A stream ends when its client half-closes it (answered
// with OK), when it cancels it, or when the server shuts down: AddTo
// registers a shutdown callback (Server::Builder::AddShutdownCallback) that
// ends every open stream with UNAVAILABLE ("the server is shutting down"),
// as HealthCheckService ends its watches: at once if it waits for a
// request (a request arriving later is not answered), otherwise once the
// response being written is written. A stream arriving later (on a
// connection still draining) gets UNAVAILABLE at once. So open streams
// never keep Server::Shutdown waiting for its deadline (a stream whose
// client does not read its response still waits for flow control, up to
// the deadline).
//
// Lifetime. Register one service object on one server (AddTo once); it and
// the pool must outlive the server. Destroying it while streams are open is
// misuse (reported; a debug build aborts).
//
// Allocations: AddTo a few registration objects; BuildAndStart the service
// list (a copy of the names); a stream its reactor, its entry in the
// service's set of streams and, the first on its connection, the
// connection's count of streams; each request its response (the serialized
// files).
class ReflectionService {
 public:
  explicit ReflectionService(
      ReflectionServiceOptions options = ReflectionServiceOptions());
  ~ReflectionService();
  ReflectionService(const ReflectionService&) = delete;
  ReflectionService& operator=(const ReflectionService&) = delete;

  // Registers /grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo
  // (a callback handler), a service-list callback
  // (Server::Builder::AddServiceListCallback), which gives the service the
  // names list_services answers when the server is built, and the shutdown
  // callback on `builder`. Before BuildAndStart; once.
  Server::Builder& AddTo(Server::Builder& builder);

  // What list_services answers: the registered services' full names,
  // sorted (empty before BuildAndStart). Any thread.
  std::vector<std::string> services() const;

  // ServerReflectionInfo calls open now (refused ones never count). Any
  // thread; for tests and monitoring.
  size_t open_streams() const;

 private:
  class Stream;

  // Fills `response` with the answer to `request`, whose contents move into
  // it (original_request). Any thread; takes mu_ for list_services.
  void Answer(
      grpc::reflection::v1alpha::ServerReflectionRequest* request,
      grpc::reflection::v1alpha::ServerReflectionResponse* response) const;
  // Stream::Close on a stream of this service, whose state mu_ guards.
  void CloseStream(Stream* stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The shutdown callback: ends every stream.
  void OnServerShutdown();

  const ReflectionServiceOptions options_;
  const google::protobuf::DescriptorPool& pool_;
  // Also guards every Stream's state.
  mutable Mutex mu_;
  std::vector<std::string> services_ ABSL_GUARDED_BY(mu_);
  // The streams open (registered), from their start until OnDone.
  std::unordered_set<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  // Of those, how many per connection (ServerContext::connection_id()); a
  // connection without streams has no entry.
  std::unordered_map<uint64_t, size_t> connection_streams_ ABSL_GUARDED_BY(mu_);
  bool server_shut_down_ ABSL_GUARDED_BY(mu_) = false;  // the callback ran
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_REFLECTION_SERVICE_H_
