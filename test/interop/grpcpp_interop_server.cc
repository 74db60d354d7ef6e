// The gRPC interop TestService (doc/interop-test-descriptions.md upstream),
// served by stock gRPC C++ over HTTP/2, plaintext or TLS: the reference peer
// that h2rpc's interop clients are checked against.
//
//   grpcpp_interop_server --port=0 [--use_tls=true]
//       [--tls_testdata_dir=test/interop/testdata]
//
// --use_tls=true serves TLS (grpc::SslServerCredentials) with gRPC's interop
// test key pair, server1.key and server1.pem from --tls_testdata_dir (see
// interop_peer_util.h), as gRPC's own interop server does; clients trust
// ca.pem and connect with --server_host_override=foo.test.google.fr.
//
// Once it is listening it prints exactly one line, "listening on port N", to
// stdout; logs go to stderr. SIGTERM or SIGINT shuts it down (in-flight calls
// get a short grace period, then are cancelled) and it exits 0.
//
// Server features, as the interop description names them: EmptyCall,
// UnaryCall, CacheableUnaryCall, StreamingOutputCall, StreamingInputCall,
// FullDuplexCall, HalfDuplexCall, CompressedRequest, CompressedResponse,
// Echo Status, Echo Metadata, Observe ResponseParameters.interval_us.
// UnimplementedCall answers UNIMPLEMENTED. Authentication features
// (fill_username, fill_oauth_scope) and ORCA reports are not implemented;
// those fields are ignored.
//
// Choices where the description leaves room:
// - expect_compressed: true requires the request message to arrive with the
//   compressed flag set (and a grpc-encoding on the call); an explicit false
//   requires the flag clear; unset checks nothing.
// - response_status on StreamingOutputCall: the responses are sent first, then
//   the call ends with the echoed status. On FullDuplexCall the call ends as
//   soon as a request carrying response_status is read (that request's
//   response_parameters are not answered), as gRPC's own server does; on
//   HalfDuplexCall the same happens when the buffered request is processed.
// - ResponseParameters.compressed on FullDuplexCall/HalfDuplexCall: honoured
//   only when decided before the first response (gRPC C++ fixes the call's
//   compression with the response headers).
// - CacheableUnaryCall behaves as UnaryCall, adds "cache-control: max-age=60,
//   public", and when no response_size is asked for returns the current time
//   in nanoseconds as the payload (as the description's server does).
#include <grpcpp/grpcpp.h>
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
#include "absl/strings/str_cat.h"
#include "proto/grpc/testing/test.grpc.pb.h"
#include "test/interop/grpcpp_call_inspector.h"
#include "test/interop/interop_peer_util.h"

ABSL_FLAG(int, port, 0, "TCP port to listen on; 0 picks a free port.");
ABSL_FLAG(std::string, host, "127.0.0.1",
          "Address to listen on (loopback by default).");
ABSL_FLAG(bool, use_tls, false,
          "Serve TLS with the interop test key pair (server1.key, "
          "server1.pem) instead of plaintext.");
ABSL_FLAG(std::string, tls_testdata_dir, h2rpc::testing::kDefaultTlsTestdataDir,
          "Directory holding server1.key and server1.pem, relative to the "
          "working directory unless absolute.");

namespace h2rpc::testing {
namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using grpc::testing::Empty;
using grpc::testing::Payload;
using grpc::testing::ResponseParameters;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

constexpr char kEchoInitialMetadataKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoTrailingBinMetadataKey[] = "x-grpc-test-echo-trailing-bin";

// Echo Metadata: copies the two magic client headers back, the first as
// initial metadata, the second as trailing metadata.
void EchoMetadata(ServerContext* context) {
  const auto& client_metadata = context->client_metadata();
  auto it = client_metadata.find(kEchoInitialMetadataKey);
  if (it != client_metadata.end()) {
    context->AddInitialMetadata(
        kEchoInitialMetadataKey,
        std::string(it->second.data(), it->second.size()));
  }
  it = client_metadata.find(kEchoTrailingBinMetadataKey);
  if (it != client_metadata.end()) {
    context->AddTrailingMetadata(
        kEchoTrailingBinMetadataKey,
        std::string(it->second.data(), it->second.size()));
  }
}

// Only COMPRESSABLE exists; anything else is rejected as the description
// requires for unsupported response types.
Status CheckResponseType(grpc::testing::PayloadType type) {
  if (type != grpc::testing::COMPRESSABLE) {
    return Status(
        StatusCode::INVALID_ARGUMENT,
        absl::StrCat("unsupported response_type ", static_cast<int>(type)));
  }
  return Status::OK;
}

// Fills `payload` with `size` zero bytes.
Status SetZeroPayload(int32_t size, Payload* payload) {
  if (size < 0) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("negative payload size ", size));
  }
  payload->set_type(grpc::testing::COMPRESSABLE);
  payload->set_body(std::string(static_cast<size_t>(size), '\0'));
  return Status::OK;
}

// CompressedRequest: checks the message just read on `context`'s call.
Status CheckExpectedCompression(ServerContext* context, bool has_expectation,
                                bool expect_compressed) {
  if (!has_expectation) return Status::OK;
  grpc_call* call = context->c_call();
  const bool was_compressed = LastReceivedMessageWasCompressed(call);
  if (expect_compressed) {
    if (IncomingCompressionAlgorithm(call) == GRPC_COMPRESS_NONE) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "expected a compressed request, but the call announced no "
                    "grpc-encoding");
    }
    if (!was_compressed) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "expected a compressed request, but the message's "
                    "compressed flag was not set");
    }
  } else if (was_compressed) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "expected an uncompressed request, but the message's "
                  "compressed flag was set");
  }
  return Status::OK;
}

Status EchoedStatus(const grpc::testing::EchoStatus& echo) {
  return Status(static_cast<StatusCode>(echo.code()), echo.message());
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
  for (const ResponseParameters& p : request.response_parameters()) {
    if (p.compressed().value()) return true;
  }
  return false;
}

// Writes one response per ResponseParameters of `request`, observing
// interval_us and per-message compression. `compression_enabled` says
// whether the call's compression level was raised before the first response.
template <typename Writer>
Status WriteResponses(ServerContext* context,
                      const StreamingOutputCallRequest& request,
                      bool compression_enabled, Writer* writer) {
  for (const ResponseParameters& params : request.response_parameters()) {
    StreamingOutputCallResponse response;
    Status status = SetZeroPayload(params.size(), response.mutable_payload());
    if (!status.ok()) return status;
    if (!SleepUnlessCancelled(context, params.interval_us())) {
      return Status(StatusCode::CANCELLED, "call cancelled while sleeping");
    }
    grpc::WriteOptions options;
    if (compression_enabled && !params.compressed().value()) {
      options.set_no_compression();
    }
    if (!writer->Write(response, options)) {
      return Status(StatusCode::CANCELLED,
                    "client went away while responses were being written");
    }
  }
  return Status::OK;
}

class TestServiceImpl final : public grpc::testing::TestService::Service {
 public:
  Status EmptyCall(ServerContext* context, const Empty* /*request*/,
                   Empty* /*response*/) override {
    EchoMetadata(context);
    return Status::OK;
  }

  Status UnaryCall(ServerContext* context, const SimpleRequest* request,
                   SimpleResponse* response) override {
    return HandleUnary(context, *request, response);
  }

  Status CacheableUnaryCall(ServerContext* context,
                            const SimpleRequest* request,
                            SimpleResponse* response) override {
    context->AddInitialMetadata("cache-control", "max-age=60, public");
    Status status = HandleUnary(context, *request, response);
    if (status.ok() && request->response_size() == 0) {
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      response->mutable_payload()->set_body(absl::StrCat(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    }
    return status;
  }

  Status StreamingOutputCall(
      ServerContext* context, const StreamingOutputCallRequest* request,
      grpc::ServerWriter<StreamingOutputCallResponse>* writer) override {
    EchoMetadata(context);
    Status status = CheckResponseType(request->response_type());
    if (!status.ok()) return status;
    const bool compress = AnyCompressedResponse(*request);
    if (compress) context->set_compression_level(GRPC_COMPRESS_LEVEL_HIGH);
    status = WriteResponses(context, *request, compress, writer);
    if (!status.ok()) return status;
    if (request->has_response_status()) {
      return EchoedStatus(request->response_status());
    }
    return Status::OK;
  }

  Status StreamingInputCall(
      ServerContext* context,
      grpc::ServerReader<StreamingInputCallRequest>* reader,
      StreamingInputCallResponse* response) override {
    EchoMetadata(context);
    StreamingInputCallRequest request;
    int64_t total = 0;
    while (reader->Read(&request)) {
      Status status =
          CheckExpectedCompression(context, request.has_expect_compressed(),
                                   request.expect_compressed().value());
      if (!status.ok()) return status;
      total += static_cast<int64_t>(request.payload().body().size());
    }
    if (context->IsCancelled()) {
      return Status(StatusCode::CANCELLED, "call cancelled");
    }
    response->set_aggregated_payload_size(static_cast<int32_t>(total));
    return Status::OK;
  }

  Status FullDuplexCall(
      ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse,
                               StreamingOutputCallRequest>* stream) override {
    EchoMetadata(context);
    StreamingOutputCallRequest request;
    bool first_response_pending = true;
    bool compression_enabled = false;
    while (stream->Read(&request)) {
      if (request.has_response_status()) {
        return EchoedStatus(request.response_status());
      }
      Status status = CheckResponseType(request.response_type());
      if (!status.ok()) return status;
      if (request.response_parameters_size() == 0) continue;
      if (first_response_pending) {
        first_response_pending = false;
        compression_enabled = AnyCompressedResponse(request);
        if (compression_enabled) {
          context->set_compression_level(GRPC_COMPRESS_LEVEL_HIGH);
        }
      }
      status = WriteResponses(context, request, compression_enabled, stream);
      if (!status.ok()) return status;
    }
    if (context->IsCancelled()) {
      return Status(StatusCode::CANCELLED, "call cancelled");
    }
    return Status::OK;
  }

  Status HalfDuplexCall(
      ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse,
                               StreamingOutputCallRequest>* stream) override {
    EchoMetadata(context);
    std::vector<StreamingOutputCallRequest> requests;
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) requests.push_back(request);
    if (context->IsCancelled()) {
      return Status(StatusCode::CANCELLED, "call cancelled");
    }
    bool compression_enabled = false;
    for (const StreamingOutputCallRequest& r : requests) {
      if (r.response_parameters_size() > 0) {
        compression_enabled = AnyCompressedResponse(r);
        break;
      }
    }
    if (compression_enabled) {
      context->set_compression_level(GRPC_COMPRESS_LEVEL_HIGH);
    }
    for (const StreamingOutputCallRequest& r : requests) {
      if (r.has_response_status()) return EchoedStatus(r.response_status());
      Status status = CheckResponseType(r.response_type());
      if (!status.ok()) return status;
      status = WriteResponses(context, r, compression_enabled, stream);
      if (!status.ok()) return status;
    }
    return Status::OK;
  }

  Status UnimplementedCall(ServerContext* /*context*/, const Empty* /*request*/,
                           Empty* /*response*/) override {
    return Status(StatusCode::UNIMPLEMENTED,
                  "UnimplementedCall is deliberately not implemented");
  }

 private:
  // UnaryCall semantics, shared with CacheableUnaryCall.
  static Status HandleUnary(ServerContext* context,
                            const SimpleRequest& request,
                            SimpleResponse* response) {
    EchoMetadata(context);
    if (request.has_response_compressed()) {
      context->set_compression_level(request.response_compressed().value()
                                         ? GRPC_COMPRESS_LEVEL_HIGH
                                         : GRPC_COMPRESS_LEVEL_NONE);
    }
    Status status =
        CheckExpectedCompression(context, request.has_expect_compressed(),
                                 request.expect_compressed().value());
    if (!status.ok()) return status;
    status = CheckResponseType(request.response_type());
    if (!status.ok()) return status;
    if (request.response_size() != 0) {
      status =
          SetZeroPayload(request.response_size(), response->mutable_payload());
      if (!status.ok()) return status;
    }
    if (request.has_response_status()) {
      return EchoedStatus(request.response_status());
    }
    return Status::OK;
  }
};

int Run() {
  // Block the shutdown signals before gRPC starts any thread, so that every
  // thread inherits the mask and only the sigwait() below receives them.
  sigset_t shutdown_signals;
  if (!BlockShutdownSignals(&shutdown_signals)) return 1;
  std::string address;
  if (const int bad = CheckServerFlags(absl::GetFlag(FLAGS_host),
                                       absl::GetFlag(FLAGS_port), &address)) {
    return bad;
  }

  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  if (absl::GetFlag(FLAGS_use_tls)) {
    const std::string dir = absl::GetFlag(FLAGS_tls_testdata_dir);
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    if (const int bad =
            ReadTestdataFile(dir, kServerKeyFile, &pair.private_key)) {
      return bad;
    }
    if (const int bad =
            ReadTestdataFile(dir, kServerCertFile, &pair.cert_chain)) {
      return bad;
    }
    grpc::SslServerCredentialsOptions ssl_options;
    ssl_options.pem_key_cert_pairs.push_back(std::move(pair));
    credentials = grpc::SslServerCredentials(ssl_options);
  }

  TestServiceImpl service;
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(address, credentials, &selected_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    std::fprintf(stderr, "could not listen on %s\n", address.c_str());
    return 1;
  }
  AnnounceListening(selected_port);
  const int signal_number = WaitForShutdownSignal(shutdown_signals);
  std::fprintf(stderr, "grpcpp_interop_server: signal %d, shutting down\n",
               signal_number);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server->Wait();
  return 0;
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::testing::Run();
}
