// The gRPC interop TestService (doc/interop-test-descriptions.md upstream),
// served by h2rpc over HTTP/2, plaintext (h2c) or TLS.
//
//   h2rpc_interop_server --port=0 [--use_tls=true]
//       [--tls_testdata_dir=test/interop/testdata]
//
// --use_tls=true serves TLS (ALPN h2) with gRPC's interop test key pair,
// server1.key and server1.pem from --tls_testdata_dir (see
// interop_peer_util.h), as gRPC's own interop servers do; clients trust
// ca.pem and connect with --server_host_override=foo.test.google.fr.
// Every call on a TLS port must carry the connection's PeerIdentity (a TLS
// protocol version, no client certificate) and every call on a plaintext
// port none; a call that does not fails with INTERNAL.
//
// Once it is listening it prints exactly one line, "listening on port N", to
// stdout; logs go to stderr. SIGTERM or SIGINT shuts it down (in-flight calls
// get a short grace period, then are cancelled) and it exits 0.
//
// Server features, as the interop description names them: EmptyCall,
// UnaryCall, CacheableUnaryCall, StreamingOutputCall, StreamingInputCall,
// FullDuplexCall, HalfDuplexCall, CompressedRequest, CompressedResponse,
// Echo Status, Echo Metadata, Observe ResponseParameters.interval_us.
// UnimplementedCall answers UNIMPLEMENTED explicitly. Authentication features
// (fill_username, fill_oauth_scope) and ORCA reports are not implemented;
// those fields are ignored.
//
// It also serves the admin services (h2rpc's AdminServices): gRPC's health
// checking service, grpc.health.v1.Health, with the server as a whole ("")
// and grpc.testing.TestService SERVING, so any gRPC health client can probe
// it; gRPC's server reflection service, grpc.reflection.v1alpha.
// ServerReflection, so grpc_cli and grpcurl can list and describe its
// services; and channelz, grpc.channelz.v1.Channelz, showing the server,
// its listening socket and its connections with their counts.
//
// The service derives from the generated grpc::testing::TestService::Service
// (test.h2rpc.pb.h), the synchronous flavour: the streaming methods use
// blocking ServerReader / ServerWriter / ServerReaderWriter, because
// interval_us is a blocking sleep, which a callback reactor could not do on
// the loop thread.
// Each streaming call holds a worker thread for its whole life; the server
// starts more as calls need them (ServerOptions::max_sync_threads).
//
// Choices where the description leaves room (the same as the gRPC C++
// interop server's, grpcpp_interop_server.cc):
// - Every method echoes metadata: x-grpc-test-echo-initial as initial
//   metadata, x-grpc-test-echo-trailing-bin as trailing metadata.
// - expect_compressed (UnaryCall, and each StreamingInputCall request): true
//   requires the message to have arrived with the compressed flag set
//   (ServerContext::last_message_compressed); an explicit false requires the
//   flag clear; unset checks nothing. Either mismatch is INVALID_ARGUMENT,
//   which is what the clients' feature probe expects. (gRPC C++'s server
//   also checks that the call announced a grpc-encoding; h2rpc's transport
//   already fails a compressed message without one with INTERNAL.)
// - response_compressed on UnaryCall: true compresses the response with gzip,
//   an explicit false sends it uncompressed (h2rpc compresses only with an
//   algorithm the client accepts; gRPC and h2rpc clients accept gzip).
// - ResponseParameters.compressed: the call compresses with gzip when any
//   response of the request deciding it asks for compression (on
//   StreamingOutputCall its request; on FullDuplexCall/HalfDuplexCall the
//   first request with response_parameters, since the encoding is fixed with
//   the response headers); every response not asking for compression is
//   written with WriteOptions::set_no_compression.
// - response_status on StreamingOutputCall: the responses are sent first, then
//   the call ends with the echoed status. On FullDuplexCall the call ends as
//   soon as a request carrying response_status is read (that request's
//   response_parameters are not answered), as gRPC's own server does; on
//   HalfDuplexCall the same happens when the buffered request is processed.
// - A call the client cancelled (or whose deadline passed) ends with
//   CANCELLED; the client never sees that status, its own side decides.
// - CacheableUnaryCall behaves as UnaryCall, adds "cache-control: max-age=60,
//   public", and when no response_size is asked for returns the current time
//   in nanoseconds as the payload (as the description's server does).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/admin_services.h"
#include "rpc/compression.h"
#include "rpc/credentials.h"
#include "rpc/metrics/prometheus_endpoint.h"
#include "rpc/peer_identity.h"
#include "rpc/server.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"
#include "test/interop/interop_peer_util.h"

ABSL_FLAG(int, port, 0, "TCP port to listen on; 0 picks a free port.");
ABSL_FLAG(std::string, host, "127.0.0.1",
          "Address to listen on (loopback by default).");
ABSL_FLAG(bool, use_tls, false,
          "Serve TLS with the interop test key pair (server1.key, "
          "server1.pem) instead of plaintext h2c.");
ABSL_FLAG(int, metrics_port, -1,
          "Serve gRPC's standard call metrics for Prometheus at "
          "http://HOST:PORT/metrics on this port (0: a free one, printed as "
          "\"metrics on port N\"); -1: no metrics.");
ABSL_FLAG(bool, grpc_web, false,
          "Also answer gRPC-Web requests (ServerOptions::web.grpc_web).");
ABSL_FLAG(bool, connect, false,
          "Also answer the Connect protocol's unary requests, binary and "
          "JSON (ServerOptions::web.connect).");
ABSL_FLAG(std::vector<std::string>, cors_allowed_origins, {},
          "Origins whose browser pages may call, comma-separated "
          "(ServerOptions::web.cors_allowed_origins).");
ABSL_FLAG(std::string, tls_testdata_dir, h2rpc::testing::kDefaultTlsTestdataDir,
          "Directory holding server1.key and server1.pem, relative to the "
          "working directory unless absolute.");

namespace h2rpc::testing {
namespace {

using grpc::testing::Empty;
using grpc::testing::Payload;
using grpc::testing::ResponseParameters;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;

using ResponseWriter = ServerWriter<StreamingOutputCallResponse>;
using DuplexStream =
    ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>;

constexpr char kEchoInitialMetadataKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoTrailingBinMetadataKey[] = "x-grpc-test-echo-trailing-bin";

// Echo Metadata: copies the two magic client headers back, the first as
// initial metadata, the second as trailing metadata.
void EchoMetadata(ServerContext* context) {
  const Metadata& client_metadata = context->client_metadata();
  if (auto value = client_metadata.Get(kEchoInitialMetadataKey)) {
    context->AddInitialMetadata(kEchoInitialMetadataKey, *value);
  }
  if (auto value = client_metadata.Get(kEchoTrailingBinMetadataKey)) {
    context->AddTrailingMetadata(kEchoTrailingBinMetadataKey, *value);
  }
}

// Checks that the call's transport security is the port's: on a TLS port a
// PeerIdentity with a TLS protocol version and no client certificate (the
// server does not ask for one), on a plaintext port none.
Status CheckTransportSecurity(const ServerContext& context, bool tls) {
  const std::shared_ptr<const PeerIdentity>& identity = context.peer_identity();
  if (!tls) {
    if (identity == nullptr) return Status();
    return Status(StatusCode::kInternal,
                  absl::StrCat("call on the plaintext port has a PeerIdentity "
                               "(protocol \"",
                               identity->protocol, "\")"));
  }
  if (identity == nullptr) {
    return Status(StatusCode::kInternal,
                  "call on the TLS port has no PeerIdentity");
  }
  if (!absl::StartsWith(identity->protocol, "TLSv1.")) {
    return Status(
        StatusCode::kInternal,
        absl::StrCat("call on the TLS port: PeerIdentity protocol \"",
                     identity->protocol, "\", expected TLSv1.2 or TLSv1.3"));
  }
  if (identity->certificate_verified || !identity->subject.empty()) {
    return Status(
        StatusCode::kInternal,
        absl::StrCat("call on the TLS port: PeerIdentity names a client "
                     "certificate (subject \"",
                     identity->subject, "\"), but none was requested"));
  }
  return Status();
}

// What every TestService handler but UnimplementedCall does first: checks
// the call's transport security against --use_tls, then echoes metadata.
Status BeginCall(ServerContext* context) {
  Status status =
      CheckTransportSecurity(*context, absl::GetFlag(FLAGS_use_tls));
  if (!status.ok()) return status;
  EchoMetadata(context);
  return Status();
}

// Only COMPRESSABLE exists; anything else is rejected as the description
// requires for unsupported response types.
Status CheckResponseType(grpc::testing::PayloadType type) {
  if (type != grpc::testing::COMPRESSABLE) {
    return Status(
        StatusCode::kInvalidArgument,
        absl::StrCat("unsupported response_type ", static_cast<int>(type)));
  }
  return Status();
}

// Fills `payload` with `size` zero bytes.
Status SetZeroPayload(int32_t size, Payload* payload) {
  if (size < 0) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("negative payload size ", size));
  }
  payload->set_type(grpc::testing::COMPRESSABLE);
  payload->set_body(std::string(static_cast<size_t>(size), '\0'));
  return Status();
}

// CompressedRequest: checks the message just read on `context`'s call
// against its expect_compressed (see the file comment). `Request` is
// SimpleRequest or StreamingInputCallRequest.
template <class Request>
Status CheckExpectedCompression(const ServerContext& context,
                                const Request& request) {
  if (!request.has_expect_compressed()) return Status();
  const bool was_compressed = context.last_message_compressed();
  if (request.expect_compressed().value()) {
    if (!was_compressed) {
      return Status(StatusCode::kInvalidArgument,
                    "expected a compressed request, but the message's "
                    "compressed flag was not set");
    }
  } else if (was_compressed) {
    return Status(StatusCode::kInvalidArgument,
                  "expected an uncompressed request, but the message's "
                  "compressed flag was set");
  }
  return Status();
}

// The algorithm the server compresses with when a request asks for a
// compressed response (as gRPC's own interop server does).
constexpr CompressionAlgorithm kResponseCompression =
    CompressionAlgorithm::kGzip;

// UnaryCall semantics, shared with CacheableUnaryCall.
Status HandleUnary(ServerContext* context, const SimpleRequest& request,
                   SimpleResponse* response) {
  if (Status begun = BeginCall(context); !begun.ok()) return begun;
  if (request.has_response_compressed()) {
    context->set_compression_algorithm(request.response_compressed().value()
                                           ? kResponseCompression
                                           : CompressionAlgorithm::kIdentity);
  }
  Status status = CheckExpectedCompression(*context, request);
  if (!status.ok()) return status;
  status = CheckResponseType(request.response_type());
  if (!status.ok()) return status;
  if (request.response_size() != 0) {
    status =
        SetZeroPayload(request.response_size(), response->mutable_payload());
    if (!status.ok()) return status;
  }
  if (request.has_response_status()) {
    return Status(static_cast<StatusCode>(request.response_status().code()),
                  request.response_status().message());
  }
  return Status();
}

Status EchoedStatus(const grpc::testing::EchoStatus& echo) {
  return Status(static_cast<StatusCode>(echo.code()), echo.message());
}

Status CancelledStatus() {
  return Status(StatusCode::kCancelled, "call cancelled");
}

// Sleeps `interval_us` microseconds, waking early when the call is cancelled
// (or the server shuts down). Returns false when the call was cancelled.
bool SleepUnlessCancelled(ServerContext* context, int32_t interval_us) {
  if (interval_us <= 0) return !context->IsCancelled();
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::microseconds(interval_us);
  while (!context->IsCancelled()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        until - now, std::chrono::milliseconds(10)));
  }
  return false;
}

bool AnyCompressedResponse(const StreamingOutputCallRequest& request) {
  for (const ResponseParameters& params : request.response_parameters()) {
    if (params.compressed().value()) return true;
  }
  return false;
}

// Writes one response per ResponseParameters of `request` (`size` zero bytes
// each), sleeping interval_us before each; a response whose `compressed` is
// not true is written uncompressed. `Writer` is ServerWriter or
// ServerReaderWriter.
template <class Writer>
Status WriteResponses(ServerContext* context,
                      const StreamingOutputCallRequest& request,
                      Writer* writer) {
  StreamingOutputCallResponse response;
  for (const ResponseParameters& params : request.response_parameters()) {
    Status status = SetZeroPayload(params.size(), response.mutable_payload());
    if (!status.ok()) return status;
    if (!SleepUnlessCancelled(context, params.interval_us())) {
      return Status(StatusCode::kCancelled, "call cancelled while sleeping");
    }
    WriteOptions options;
    if (!params.compressed().value()) options.set_no_compression();
    if (!writer->Write(response, options)) {
      return Status(StatusCode::kCancelled,
                    "client went away while responses were being written");
    }
  }
  return Status();
}

// TestService: the generated synchronous base class, every method
// overridden. UnaryCall is HandleUnary(); UnimplementedCall answers
// UNIMPLEMENTED itself.
class TestServiceImpl final : public TestService::Service {
 public:
  Status EmptyCall(ServerContext* context, const Empty* request,
                   Empty* response) override;
  Status UnaryCall(ServerContext* context, const SimpleRequest* request,
                   SimpleResponse* response) override {
    return HandleUnary(context, *request, response);
  }
  Status CacheableUnaryCall(ServerContext* context,
                            const SimpleRequest* request,
                            SimpleResponse* response) override;
  Status StreamingOutputCall(ServerContext* context,
                             const StreamingOutputCallRequest* request,
                             ResponseWriter* writer) override;
  Status StreamingInputCall(ServerContext* context,
                            ServerReader<StreamingInputCallRequest>* reader,
                            StreamingInputCallResponse* response) override;
  Status FullDuplexCall(ServerContext* context, DuplexStream* stream) override;
  Status HalfDuplexCall(ServerContext* context, DuplexStream* stream) override;
  Status UnimplementedCall(ServerContext* context, const Empty* request,
                           Empty* response) override;
};

Status TestServiceImpl::EmptyCall(ServerContext* context,
                                  const Empty* /*request*/,
                                  Empty* /*response*/) {
  if (Status begun = BeginCall(context); !begun.ok()) return begun;
  return Status();
}

Status TestServiceImpl::CacheableUnaryCall(ServerContext* context,
                                           const SimpleRequest* request,
                                           SimpleResponse* response) {
  context->AddInitialMetadata("cache-control", "max-age=60, public");
  Status status = HandleUnary(context, *request, response);
  if (status.ok() && request->response_size() == 0) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    response->mutable_payload()->set_body(absl::StrCat(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
  }
  return status;
}

// Server streaming: one response per response_parameters entry, then the
// echoed status, if any.
Status TestServiceImpl::StreamingOutputCall(
    ServerContext* context, const StreamingOutputCallRequest* request,
    ResponseWriter* writer) {
  if (Status begun = BeginCall(context); !begun.ok()) return begun;
  Status status = CheckResponseType(request->response_type());
  if (!status.ok()) return status;
  if (AnyCompressedResponse(*request)) {
    context->set_compression_algorithm(kResponseCompression);
  }
  status = WriteResponses(context, *request, writer);
  if (!status.ok()) return status;
  if (request->has_response_status()) {
    return EchoedStatus(request->response_status());
  }
  return Status();
}

// Client streaming: the total size of the request payloads.
Status TestServiceImpl::StreamingInputCall(
    ServerContext* context, ServerReader<StreamingInputCallRequest>* reader,
    StreamingInputCallResponse* response) {
  if (Status begun = BeginCall(context); !begun.ok()) return begun;
  StreamingInputCallRequest request;
  int64_t total = 0;
  while (reader->Read(&request)) {
    Status status = CheckExpectedCompression(*context, request);
    if (!status.ok()) return status;
    total += static_cast<int64_t>(request.payload().body().size());
  }
  if (context->IsCancelled()) return CancelledStatus();
  response->set_aggregated_payload_size(static_cast<int32_t>(total));
  return Status();
}

// Full duplex: answers each request as it arrives, until the client
// half-closes; a request with response_status ends the call with it. The
// first request with response_parameters decides the call's compression.
Status TestServiceImpl::FullDuplexCall(ServerContext* context,
                                       DuplexStream* stream) {
  if (Status begun = BeginCall(context); !begun.ok()) return begun;
  StreamingOutputCallRequest request;
  bool first_response_pending = true;
  while (stream->Read(&request)) {
    if (request.has_response_status()) {
      return EchoedStatus(request.response_status());
    }
    Status status = CheckResponseType(request.response_type());
    if (!status.ok()) return status;
    if (request.response_parameters_size() == 0) continue;
    if (first_response_pending) {
      first_response_pending = false;
      if (AnyCompressedResponse(request)) {
        context->set_compression_algorithm(kResponseCompression);
      }
    }
    status = WriteResponses(context, request, stream);
    if (!status.ok()) return status;
  }
  if (context->IsCancelled()) return CancelledStatus();
  return Status();
}

// Half duplex: buffers every request until the client half-closes, then
// answers them in order. The first request with response_parameters decides
// the call's compression.
Status TestServiceImpl::HalfDuplexCall(ServerContext* context,
                                       DuplexStream* stream) {
  if (Status begun = BeginCall(context); !begun.ok()) return begun;
  std::vector<StreamingOutputCallRequest> requests;
  StreamingOutputCallRequest request;
  while (stream->Read(&request)) requests.push_back(request);
  if (context->IsCancelled()) return CancelledStatus();
  for (const StreamingOutputCallRequest& r : requests) {
    if (r.response_parameters_size() == 0) continue;
    if (AnyCompressedResponse(r)) {
      context->set_compression_algorithm(kResponseCompression);
    }
    break;
  }
  for (const StreamingOutputCallRequest& r : requests) {
    if (r.has_response_status()) return EchoedStatus(r.response_status());
    Status status = CheckResponseType(r.response_type());
    if (!status.ok()) return status;
    status = WriteResponses(context, r, stream);
    if (!status.ok()) return status;
  }
  return Status();
}

// Answered explicitly (the base class would answer UNIMPLEMENTED too, with
// its own message).
Status TestServiceImpl::UnimplementedCall(ServerContext* /*context*/,
                                          const Empty* /*request*/,
                                          Empty* /*response*/) {
  return Status(StatusCode::kUnimplemented,
                "UnimplementedCall is deliberately not implemented");
}

int Run() {
  // Block the shutdown signals before h2rpc starts any thread, so that every
  // thread inherits the mask and only the sigwait() below receives them.
  sigset_t shutdown_signals;
  if (!BlockShutdownSignals(&shutdown_signals)) return 1;
  std::string address;
  if (const int bad = CheckServerFlags(absl::GetFlag(FLAGS_host),
                                       absl::GetFlag(FLAGS_port), &address)) {
    return bad;
  }

  std::shared_ptr<ServerCredentials> credentials = InsecureServerCredentials();
  if (absl::GetFlag(FLAGS_use_tls)) {
    const std::string dir = absl::GetFlag(FLAGS_tls_testdata_dir);
    SslServerCredentialsOptions::PemKeyCertPair pair;
    if (const int bad =
            ReadTestdataFile(dir, kServerKeyFile, &pair.private_key)) {
      return bad;
    }
    if (const int bad =
            ReadTestdataFile(dir, kServerCertFile, &pair.cert_chain)) {
      return bad;
    }
    SslServerCredentialsOptions ssl_options;
    ssl_options.pem_key_cert_pairs.push_back(std::move(pair));
    credentials = SslServerCredentials(ssl_options);
  }

  ServerOptions options;
  options.web.grpc_web = absl::GetFlag(FLAGS_grpc_web);
  options.web.connect = absl::GetFlag(FLAGS_connect);
  options.web.cors_allowed_origins = absl::GetFlag(FLAGS_cors_allowed_origins);
  std::unique_ptr<PrometheusEndpoint> metrics_endpoint;
  if (absl::GetFlag(FLAGS_metrics_port) >= 0) {
    options.metrics = std::make_shared<CallMetrics>();
    PrometheusEndpoint::Options endpoint_options;
    endpoint_options.host = absl::GetFlag(FLAGS_host);
    endpoint_options.port = absl::GetFlag(FLAGS_metrics_port);
    Status started;
    metrics_endpoint =
        PrometheusEndpoint::Start(options.metrics, endpoint_options, &started);
    if (metrics_endpoint == nullptr) {
      std::fprintf(stderr, "%s\n", started.ToString().c_str());
      return 1;
    }
    std::printf("metrics on port %d\n", metrics_endpoint->port());
  }
  int selected_port = 0;
  Status status;
  TestServiceImpl service;  // outlives the server
  AdminServices admin;      // outlives the server
  admin.health().SetServingStatus("", true);
  admin.health().SetServingStatus(TestService::kServiceName, true);
  Server::Builder builder;
  builder.AddListeningPort(address, credentials, &selected_port)
      .SetOptions(options);
  service.AddTo(builder);
  admin.AddTo(builder);
  std::unique_ptr<Server> server = builder.BuildAndStart(&status);
  if (server == nullptr || selected_port == 0) {
    std::fprintf(stderr, "could not listen on %s: %s\n", address.c_str(),
                 status.ToString().c_str());
    return 1;
  }
  AnnounceListening(selected_port);
  const int signal_number = WaitForShutdownSignal(shutdown_signals);
  std::fprintf(stderr, "h2rpc_interop_server: signal %d, shutting down\n",
               signal_number);
  server->Shutdown(absl::Now() + absl::Seconds(2));
  server->Wait();
  return 0;
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::testing::Run();
}
