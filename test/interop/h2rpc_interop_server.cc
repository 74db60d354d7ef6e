// The gRPC interop TestService (doc/interop-test-descriptions.md upstream),
// served by h2rpc over plaintext HTTP/2: its unary methods only, as h2rpc has
// no streaming calls yet.
//
//   h2rpc_interop_server --port=0
//
// Once it is listening it prints exactly one line, "listening on port N", to
// stdout; logs go to stderr. SIGTERM or SIGINT shuts it down (in-flight calls
// get a short grace period, then are cancelled) and it exits 0.
//
// Server features, as the interop description names them: EmptyCall,
// UnaryCall, CacheableUnaryCall, Echo Status, Echo Metadata, and
// CompressedRequest as far as h2rpc can (see below). UnimplementedCall answers
// UNIMPLEMENTED explicitly. The streaming methods (StreamingOutputCall,
// StreamingInputCall, FullDuplexCall, HalfDuplexCall) are not registered, so
// the server answers them UNIMPLEMENTED. Authentication features
// (fill_username, fill_oauth_scope) and ORCA reports are not implemented;
// those fields are ignored.
//
// Compression: h2rpc has none yet. The transport refuses a call that
// announces a grpc-encoding with UNIMPLEMENTED before any handler runs, so a
// request that reaches a handler was never compressed: expect_compressed=true
// is answered INVALID_ARGUMENT (the feature probe's expected answer), false or
// unset checks nothing more. response_compressed is ignored: responses are
// always sent uncompressed.
//
// CacheableUnaryCall behaves as UnaryCall, adds "cache-control: max-age=60,
// public", and when no response_size is asked for returns the current time in
// nanoseconds as the payload (as the description's server does).
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "test/interop/interop_peer_util.h"

ABSL_FLAG(int, port, 0, "TCP port to listen on; 0 picks a free port.");
ABSL_FLAG(std::string, host, "127.0.0.1",
          "Address to listen on (loopback by default).");

namespace h2rpc::testing {
namespace {

using grpc::testing::Empty;
using grpc::testing::Payload;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr char kService[] = "/grpc.testing.TestService/";
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

// CompressedRequest: h2rpc cannot receive a compressed message (see the file
// comment), so only an expectation of compression can fail.
Status CheckExpectedCompression(const SimpleRequest& request) {
  if (request.has_expect_compressed() && request.expect_compressed().value()) {
    return Status(StatusCode::kInvalidArgument,
                  "expected a compressed request, but the message's "
                  "compressed flag was not set");
  }
  return Status();
}

// UnaryCall semantics, shared with CacheableUnaryCall.
Status HandleUnary(ServerContext* context, const SimpleRequest& request,
                   SimpleResponse* response) {
  EchoMetadata(context);
  Status status = CheckExpectedCompression(request);
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

Status EmptyCall(ServerContext* context, const Empty& /*request*/,
                 Empty* /*response*/) {
  EchoMetadata(context);
  return Status();
}

Status CacheableUnaryCall(ServerContext* context, const SimpleRequest& request,
                          SimpleResponse* response) {
  context->AddInitialMetadata("cache-control", "max-age=60, public");
  Status status = HandleUnary(context, request, response);
  if (status.ok() && request.response_size() == 0) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    response->mutable_payload()->set_body(absl::StrCat(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
  }
  return status;
}

Status UnimplementedCall(ServerContext* /*context*/, const Empty& /*request*/,
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

  int selected_port = 0;
  Status status;
  std::unique_ptr<Server> server =
      Server::Builder()
          .AddListeningPort(address, &selected_port)
          .RegisterUnary<Empty, Empty>(absl::StrCat(kService, "EmptyCall"),
                                       EmptyCall)
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              absl::StrCat(kService, "UnaryCall"), HandleUnary)
          .RegisterUnary<SimpleRequest, SimpleResponse>(
              absl::StrCat(kService, "CacheableUnaryCall"), CacheableUnaryCall)
          .RegisterUnary<Empty, Empty>(
              absl::StrCat(kService, "UnimplementedCall"), UnimplementedCall)
          .BuildAndStart(&status);
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
