// The gRPC interop test client (doc/interop-test-descriptions.md upstream)
// on h2rpc over HTTP/2, plaintext (h2c) or TLS.
//
//   h2rpc_interop_client --server_host=127.0.0.1 --server_port=N
//       --test_case=large_unary [--use_tls=true [--use_test_ca=true]
//       [--server_host_override=foo.test.google.fr]]
//       [--tls_testdata_dir=test/interop/testdata]
//
// TLS flags, as gRPC's interop client has them: --use_tls connects with
// SslCredentials, trusting the interop test CA (ca.pem from
// --tls_testdata_dir, see interop_peer_util.h) with --use_test_ca and the
// system's roots otherwise; --server_host_override is the name the server's
// certificate must match, the SNI and the calls' :authority
// (ChannelOptions::ssl_target_name_override). The interop servers'
// certificate names *.test.google.fr, so against them:
// --use_tls=true --use_test_ca=true
// --server_host_override=foo.test.google.fr. --use_test_ca and
// --server_host_override without --use_tls are bad flags.
//
// --connect_unary makes the unary calls with the Connect protocol's unary
// form instead of gRPC (ChannelOptions::connect_unary; plaintext), for
// Connect servers: the unary cases then run as they are; with
// --connect_json their messages are JSON (ChannelOptions::connect_json),
// with --connect_http1 they go over HTTP/1.1 (ChannelOptions::connect_http1).
//
// Runs one test case and exits 0 when every assertion of the description
// held, 1 (with the reason on stderr) when one did not, 2 for a bad command
// line or a test case it does not implement. Every RPC carries a deadline
// (--deadline_ms, 20 s by default, unless the case sets its own), so a hung
// server cannot hang the client.
//
// Cases: empty_unary, large_unary, client_streaming, server_streaming,
// ping_pong, empty_stream, cancel_after_begin, cancel_after_first_response,
// timeout_on_sleeping_server, custom_metadata (UnaryCall and FullDuplexCall),
// status_code_and_message (UnaryCall and FullDuplexCall),
// special_status_message, unimplemented_method, unimplemented_service,
// client_compressed_unary, server_compressed_unary,
// client_compressed_streaming, server_compressed_streaming and half_duplex.
// The calls go through the generated stubs (test.h2rpc.pb.h):
// grpc::testing::TestService::Stub, and UnimplementedService::Stub for
// unimplemented_service; the streaming calls use their blocking forms
// (ClientReader / ClientWriter / ClientReaderWriter).
//
// Compression: requests are compressed with gzip
// (ClientContext::set_compression_algorithm), one streaming message is sent
// uncompressed with WriteOptions::set_no_compression, and whether a response
// arrived compressed is ClientContext::last_message_compressed(). The
// client_compressed_* cases start with the description's feature probe (a
// request with expect_compressed=true sent uncompressed must get
// INVALID_ARGUMENT), as gRPC's C++ client does. Unlike gRPC C++'s client
// (grpcpp_interop_client.cc), a compressed response is not separately checked
// for a grpc-encoding header: h2rpc fails a compressed message without one
// with INTERNAL.
//
// half_duplex has no entry in the description; it follows gRPC's own C++
// client: four requests of sizes 31415, 9, 2653, 58979 on HalfDuplexCall,
// half-close, then exactly four responses of those sizes and OK.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/compression.h"
#include "rpc/credentials.h"
#include "rpc/metadata.h"
#include "rpc/status.h"
#include "test/interop/interop_peer_util.h"

ABSL_FLAG(std::string, server_host, "localhost", "Server host to connect to.");
ABSL_FLAG(int, server_port, 0, "Server port to connect to.");
ABSL_FLAG(std::string, test_case, "", "Name of the test case to run.");
ABSL_FLAG(int, deadline_ms, 20000,
          "Deadline of every RPC whose test case does not set its own, in "
          "milliseconds.");
ABSL_FLAG(bool, use_tls, false, "Connect with TLS instead of plaintext h2c.");
ABSL_FLAG(bool, connect_unary, false,
          "Make the unary calls with the Connect protocol's unary form "
          "(ChannelOptions::connect_unary), plaintext only.");
ABSL_FLAG(bool, connect_json, false,
          "With --connect_unary: the messages in protobuf's JSON mapping "
          "(ChannelOptions::connect_json).");
ABSL_FLAG(bool, connect_http1, false,
          "With --connect_unary: the calls over HTTP/1.1 "
          "(ChannelOptions::connect_http1).");
ABSL_FLAG(bool, use_test_ca, false,
          "With --use_tls: trust the interop test CA (ca.pem) instead of the "
          "system's roots.");
ABSL_FLAG(std::string, server_host_override, "",
          "With --use_tls: the name the server's certificate must match, also "
          "sent as SNI and :authority; empty: the host of --server_host.");
ABSL_FLAG(std::string, tls_testdata_dir, h2rpc::testing::kDefaultTlsTestdataDir,
          "Directory holding ca.pem, relative to the working directory unless "
          "absolute.");

namespace h2rpc::testing {
namespace {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;

using DuplexCall =
    ClientReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>;

constexpr int kLargeRequestSize = 271828;
constexpr int kLargeResponseSize = 314159;
const std::vector<int> kRequestStreamSizes = {27182, 8, 1828, 45904};
constexpr int kAggregatedRequestSize = 74922;  // their sum
const std::vector<int> kResponseStreamSizes = {31415, 9, 2653, 58979};

// What the compressed requests are compressed with (as gRPC's C++ client).
constexpr CompressionAlgorithm kRequestCompression =
    CompressionAlgorithm::kGzip;

constexpr char kEchoInitialMetadataKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoInitialMetadataValue[] = "test_initial_metadata_value";
constexpr char kEchoTrailingBinMetadataKey[] = "x-grpc-test-echo-trailing-bin";
constexpr absl::string_view kEchoTrailingBinMetadataValue = "\xab\xab\xab";

std::string Describe(const Status& status) {
  return absl::StrCat(StatusCodeName(status.code()), " (",
                      static_cast<int>(status.code()), ") \"", status.message(),
                      "\"");
}

// Reports a failed assertion on stderr; always returns false.
bool Fail(const std::string& what) {
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  return false;
}

// Checks that `status` has code `want`; `what` names the call.
bool ExpectCode(const Status& status, StatusCode want,
                const std::string& what) {
  if (status.code() == want) return true;
  return Fail(absl::StrCat(what, ": expected status ", StatusCodeName(want),
                           ", got ", Describe(status)));
}

bool ExpectOk(const Status& status, const std::string& what) {
  return ExpectCode(status, StatusCode::kOk, what);
}

bool ExpectStatus(const Status& status, StatusCode code,
                  const std::string& message, const std::string& what) {
  if (!ExpectCode(status, code, what)) return false;
  if (status.message() != message) {
    return Fail(absl::StrCat(what, ": status message \"", status.message(),
                             "\", expected \"", message, "\""));
  }
  return true;
}

// Checks that `body` is `size` zero bytes.
bool ExpectZeros(const std::string& body, size_t size,
                 const std::string& what) {
  if (body.size() != size) {
    return Fail(absl::StrCat(what, ": payload body is ", body.size(),
                             " bytes, expected ", size));
  }
  if (body.find_first_not_of('\0') != std::string::npos) {
    return Fail(absl::StrCat(what, ": payload body of ", size,
                             " bytes is not all zeros"));
  }
  return true;
}

// Checks that `metadata` holds `key` exactly once, with `value`.
bool ExpectMetadata(const Metadata& metadata, absl::string_view key,
                    absl::string_view value, const std::string& where) {
  int count = 0;
  for (const Metadata::Entry entry : metadata) {
    if (entry.key != key) continue;
    ++count;
    if (entry.value != value) {
      return Fail(absl::StrCat(where, ": metadata \"", key,
                               "\" has the wrong value (", entry.value.size(),
                               " bytes, expected ", value.size(), ")"));
    }
  }
  if (count == 0) {
    return Fail(absl::StrCat(where, ": metadata \"", key, "\" missing"));
  }
  if (count != 1) {
    return Fail(absl::StrCat(where, ": metadata \"", key, "\" received ", count,
                             " times, expected once"));
  }
  return true;
}

class InteropClient {
 public:
  explicit InteropClient(std::shared_ptr<Channel> channel)
      : channel_(std::move(channel)),
        stub_(channel_),
        unimplemented_stub_(channel_) {}

  bool EmptyUnary() {
    ClientContext context;
    SetDeadline(&context);
    Empty request;
    Empty response;
    if (!ExpectOk(stub_.EmptyCall(&context, request, &response), "EmptyCall")) {
      return false;
    }
    if (response.ByteSizeLong() != 0) {
      return Fail("EmptyCall: response is not an empty message");
    }
    return true;
  }

  bool LargeUnary() {
    ClientContext context;
    SetDeadline(&context);
    const SimpleRequest request = LargeUnaryRequest();
    SimpleResponse response;
    if (!ExpectOk(stub_.UnaryCall(&context, request, &response), "UnaryCall")) {
      return false;
    }
    return ExpectZeros(response.payload().body(), kLargeResponseSize,
                       "UnaryCall response");
  }

  bool ClientStreaming() {
    ClientContext context;
    SetDeadline(&context);
    StreamingInputCallResponse response;
    auto stream = stub_.StreamingInputCall(&context, &response);
    StreamingInputCallRequest request;
    for (int size : kRequestStreamSizes) {
      request.mutable_payload()->set_body(std::string(size, '\0'));
      if (!stream->Write(request)) {
        return Fail(absl::StrCat("StreamingInputCall: writing the ", size,
                                 "-byte request failed; call ended with ",
                                 Describe(stream->Finish())));
      }
    }
    stream->WritesDone();
    if (!ExpectOk(stream->Finish(), "StreamingInputCall")) return false;
    if (response.aggregated_payload_size() != kAggregatedRequestSize) {
      return Fail(absl::StrCat("StreamingInputCall: aggregated_payload_size ",
                               response.aggregated_payload_size(),
                               ", expected ", kAggregatedRequestSize));
    }
    return true;
  }

  bool ServerStreaming() {
    ClientContext context;
    SetDeadline(&context);
    StreamingOutputCallRequest request;
    for (int size : kResponseStreamSizes) {
      request.add_response_parameters()->set_size(size);
    }
    auto stream = stub_.StreamingOutputCall(&context, request);
    return ReadSizedResponses(stream.get(), kResponseStreamSizes,
                              "StreamingOutputCall") &&
           ExpectOk(stream->Finish(), "StreamingOutputCall");
  }

  bool PingPong() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = StartFullDuplex(&context);
    for (size_t i = 0; i < kRequestStreamSizes.size(); ++i) {
      StreamingOutputCallRequest request;
      request.add_response_parameters()->set_size(kResponseStreamSizes[i]);
      request.mutable_payload()->set_body(
          std::string(kRequestStreamSizes[i], '\0'));
      const std::string what = absl::StrCat("FullDuplexCall message ", i + 1);
      if (!stream->Write(request)) {
        return Fail(absl::StrCat(what, ": write failed; call ended with ",
                                 Describe(stream->Finish())));
      }
      StreamingOutputCallResponse response;
      if (!stream->Read(&response)) {
        return Fail(absl::StrCat(what, ": no response; call ended with ",
                                 Describe(stream->Finish())));
      }
      if (!ExpectZeros(response.payload().body(), kResponseStreamSizes[i],
                       what + " response")) {
        return false;
      }
    }
    stream->WritesDone();
    StreamingOutputCallResponse extra;
    if (stream->Read(&extra)) {
      return Fail("FullDuplexCall: a fifth response arrived after half-close");
    }
    return ExpectOk(stream->Finish(), "FullDuplexCall");
  }

  bool EmptyStream() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = StartFullDuplex(&context);
    stream->WritesDone();
    StreamingOutputCallResponse response;
    if (stream->Read(&response)) {
      return Fail("FullDuplexCall: got a response on an empty stream");
    }
    return ExpectOk(stream->Finish(), "FullDuplexCall");
  }

  bool CancelAfterBegin() {
    ClientContext context;
    SetDeadline(&context);
    StreamingInputCallResponse response;
    auto stream = stub_.StreamingInputCall(&context, &response);
    context.TryCancel();
    return ExpectCode(stream->Finish(), StatusCode::kCancelled,
                      "StreamingInputCall cancelled after begin");
  }

  bool CancelAfterFirstResponse() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = StartFullDuplex(&context);
    StreamingOutputCallRequest request;
    request.add_response_parameters()->set_size(31415);
    request.mutable_payload()->set_body(std::string(27182, '\0'));
    if (!stream->Write(request)) {
      return Fail(absl::StrCat("FullDuplexCall: write failed; call ended with ",
                               Describe(stream->Finish())));
    }
    StreamingOutputCallResponse response;
    if (!stream->Read(&response)) {
      return Fail(absl::StrCat("FullDuplexCall: no response; call ended with ",
                               Describe(stream->Finish())));
    }
    if (!ExpectZeros(response.payload().body(), 31415,
                     "FullDuplexCall response")) {
      return false;
    }
    context.TryCancel();
    return ExpectCode(stream->Finish(), StatusCode::kCancelled,
                      "FullDuplexCall cancelled after first response");
  }

  bool TimeoutOnSleepingServer() {
    ClientContext context;
    context.set_timeout(absl::Milliseconds(1));
    auto stream = StartFullDuplex(&context);
    StreamingOutputCallRequest request;
    request.mutable_payload()->set_body(std::string(27182, '\0'));
    stream->Write(request);  // may already fail: the deadline is 1 ms
    // Finish() does not half-close, so the server keeps reading until the
    // deadline ends the call.
    return ExpectCode(stream->Finish(), StatusCode::kDeadlineExceeded,
                      "FullDuplexCall with a 1 ms deadline");
  }

  bool CustomMetadata() {
    {
      ClientContext context;
      SetDeadline(&context);
      AddEchoMetadata(&context);
      const SimpleRequest request = LargeUnaryRequest();
      SimpleResponse response;
      if (!ExpectOk(stub_.UnaryCall(&context, request, &response),
                    "UnaryCall with custom metadata") ||
          !ExpectZeros(response.payload().body(), kLargeResponseSize,
                       "UnaryCall response") ||
          !ExpectEchoedMetadata(context, "UnaryCall")) {
        return false;
      }
    }
    ClientContext context;
    SetDeadline(&context);
    AddEchoMetadata(&context);
    auto stream = StartFullDuplex(&context);
    StreamingOutputCallRequest request;
    request.add_response_parameters()->set_size(kLargeResponseSize);
    request.mutable_payload()->set_body(std::string(kLargeRequestSize, '\0'));
    if (!stream->Write(request)) {
      return Fail(absl::StrCat("FullDuplexCall: write failed; call ended with ",
                               Describe(stream->Finish())));
    }
    stream->WritesDone();
    StreamingOutputCallResponse response;
    if (!stream->Read(&response)) {
      return Fail(absl::StrCat("FullDuplexCall: no response; call ended with ",
                               Describe(stream->Finish())));
    }
    if (!ExpectZeros(response.payload().body(), kLargeResponseSize,
                     "FullDuplexCall response")) {
      return false;
    }
    if (stream->Read(&response)) {
      return Fail("FullDuplexCall: a second response arrived");
    }
    return ExpectOk(stream->Finish(), "FullDuplexCall with custom metadata") &&
           ExpectEchoedMetadata(context, "FullDuplexCall");
  }

  bool StatusCodeAndMessage() {
    const std::string message = "test status message";
    if (!EchoStatus(message)) return false;
    ClientContext context;
    SetDeadline(&context);
    auto stream = StartFullDuplex(&context);
    StreamingOutputCallRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(message);
    stream->Write(request);  // the server may already have ended the call
    stream->WritesDone();
    StreamingOutputCallResponse response;
    while (stream->Read(&response)) {
    }
    return ExpectStatus(stream->Finish(), StatusCode::kUnknown, message,
                        "FullDuplexCall");
  }

  bool SpecialStatusMessage() {
    return EchoStatus(
        "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP "
        "\U0001F608\t\n");
  }

  bool UnimplementedMethod() {
    ClientContext context;
    SetDeadline(&context);
    Empty request;
    Empty response;
    return ExpectCode(stub_.UnimplementedCall(&context, request, &response),
                      StatusCode::kUnimplemented,
                      "TestService/UnimplementedCall");
  }

  bool UnimplementedService() {
    ClientContext context;
    SetDeadline(&context);
    Empty request;
    Empty response;
    return ExpectCode(
        unimplemented_stub_.UnimplementedCall(&context, request, &response),
        StatusCode::kUnimplemented, "UnimplementedService/UnimplementedCall");
  }

  bool ClientCompressedUnary() {
    {
      // Feature probe: claims compression but sends the message plain.
      ClientContext context;
      SetDeadline(&context);
      context.set_compression_algorithm(CompressionAlgorithm::kIdentity);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(true);
      SimpleResponse response;
      if (!ExpectCode(
              stub_.UnaryCall(&context, request, &response),
              StatusCode::kInvalidArgument,
              "UnaryCall probe (expect_compressed=true, sent uncompressed)")) {
        return false;
      }
    }
    for (bool compressed : {true, false}) {
      const std::string what = absl::StrCat(
          "UnaryCall (expect_compressed=", compressed ? "true" : "false", ")");
      ClientContext context;
      SetDeadline(&context);
      context.set_compression_algorithm(
          compressed ? kRequestCompression : CompressionAlgorithm::kIdentity);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(compressed);
      SimpleResponse response;
      if (!ExpectOk(stub_.UnaryCall(&context, request, &response), what) ||
          !ExpectZeros(response.payload().body(), kLargeResponseSize,
                       what + " response")) {
        return false;
      }
    }
    return true;
  }

  bool ServerCompressedUnary() {
    for (bool compressed : {true, false}) {
      const std::string what = absl::StrCat("UnaryCall (response_compressed=",
                                            compressed ? "true" : "false", ")");
      ClientContext context;
      SetDeadline(&context);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_response_compressed()->set_value(compressed);
      SimpleResponse response;
      if (!ExpectOk(stub_.UnaryCall(&context, request, &response), what) ||
          !ExpectResponseCompression(context, compressed, what) ||
          !ExpectZeros(response.payload().body(), kLargeResponseSize,
                       what + " response")) {
        return false;
      }
    }
    return true;
  }

  bool ClientCompressedStreaming() {
    {
      // Feature probe: claims compression but sends the message plain.
      ClientContext context;
      SetDeadline(&context);
      context.set_compression_algorithm(CompressionAlgorithm::kIdentity);
      StreamingInputCallResponse response;
      auto stream = stub_.StreamingInputCall(&context, &response);
      StreamingInputCallRequest request;
      request.mutable_expect_compressed()->set_value(true);
      request.mutable_payload()->set_body(std::string(27182, '\0'));
      stream->Write(request);  // the server may end the call at once
      stream->WritesDone();
      if (!ExpectCode(stream->Finish(), StatusCode::kInvalidArgument,
                      "StreamingInputCall probe (expect_compressed=true, "
                      "sent uncompressed)")) {
        return false;
      }
    }
    ClientContext context;
    SetDeadline(&context);
    context.set_compression_algorithm(kRequestCompression);
    StreamingInputCallResponse response;
    auto stream = stub_.StreamingInputCall(&context, &response);
    StreamingInputCallRequest request;
    request.mutable_expect_compressed()->set_value(true);
    request.mutable_payload()->set_body(std::string(27182, '\0'));
    if (!stream->Write(request)) {
      return Fail(absl::StrCat(
          "StreamingInputCall: writing the compressed message failed; call "
          "ended with ",
          Describe(stream->Finish())));
    }
    request.mutable_expect_compressed()->set_value(false);
    request.mutable_payload()->set_body(std::string(45904, '\0'));
    if (!stream->Write(request, WriteOptions().set_no_compression())) {
      return Fail(absl::StrCat(
          "StreamingInputCall: writing the uncompressed message failed; call "
          "ended with ",
          Describe(stream->Finish())));
    }
    stream->WritesDone();
    if (!ExpectOk(stream->Finish(),
                  "StreamingInputCall (compressed, then uncompressed "
                  "message)")) {
      return false;
    }
    if (response.aggregated_payload_size() != 73086) {
      return Fail(absl::StrCat("StreamingInputCall: aggregated_payload_size ",
                               response.aggregated_payload_size(),
                               ", expected 73086"));
    }
    return true;
  }

  bool ServerCompressedStreaming() {
    const std::vector<bool> compressed = {true, false};
    const std::vector<int> sizes = {31415, 92653};
    ClientContext context;
    SetDeadline(&context);
    StreamingOutputCallRequest request;
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto* params = request.add_response_parameters();
      params->mutable_compressed()->set_value(compressed[i]);
      params->set_size(sizes[i]);
    }
    auto stream = stub_.StreamingOutputCall(&context, request);
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (stream->Read(&response)) {
      const std::string what =
          absl::StrCat("StreamingOutputCall response ", count + 1);
      if (count >= sizes.size()) {
        return Fail(
            absl::StrCat(what, ": more than ", sizes.size(), " responses"));
      }
      if (!ExpectZeros(response.payload().body(), sizes[count], what) ||
          !ExpectResponseCompression(context, compressed[count], what)) {
        return false;
      }
      ++count;
    }
    const Status status = stream->Finish();
    if (count < sizes.size()) {
      return Fail(absl::StrCat("StreamingOutputCall: got ", count,
                               " responses, expected ", sizes.size(),
                               "; call ended with ", Describe(status)));
    }
    return ExpectOk(status, "StreamingOutputCall");
  }

  bool HalfDuplex() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_.HalfDuplexCall(&context);
    for (int size : kResponseStreamSizes) {
      StreamingOutputCallRequest request;
      request.add_response_parameters()->set_size(size);
      if (!stream->Write(request)) {
        return Fail(absl::StrCat("HalfDuplexCall: write failed; call ended ",
                                 "with ", Describe(stream->Finish())));
      }
    }
    stream->WritesDone();
    return ReadSizedResponses(stream.get(), kResponseStreamSizes,
                              "HalfDuplexCall") &&
           ExpectOk(stream->Finish(), "HalfDuplexCall");
  }

 private:
  static void SetDeadline(ClientContext* context) {
    context->set_timeout(absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms)));
  }

  static SimpleRequest LargeUnaryRequest() {
    SimpleRequest request;
    request.set_response_size(kLargeResponseSize);
    request.mutable_payload()->set_body(std::string(kLargeRequestSize, '\0'));
    return request;
  }

  static void AddEchoMetadata(ClientContext* context) {
    context->AddMetadata(kEchoInitialMetadataKey, kEchoInitialMetadataValue);
    context->AddMetadata(kEchoTrailingBinMetadataKey,
                         kEchoTrailingBinMetadataValue);
  }

  // Checks the metadata echoed on a finished call.
  static bool ExpectEchoedMetadata(const ClientContext& context,
                                   const std::string& call) {
    return ExpectMetadata(context.GetServerInitialMetadata(),
                          kEchoInitialMetadataKey, kEchoInitialMetadataValue,
                          call + " initial metadata") &&
           ExpectMetadata(
               context.GetServerTrailingMetadata(), kEchoTrailingBinMetadataKey,
               kEchoTrailingBinMetadataValue, call + " trailing metadata");
  }

  // Checks whether the last response message received on `context` arrived
  // compressed.
  static bool ExpectResponseCompression(const ClientContext& context, bool want,
                                        const std::string& what) {
    const bool was_compressed = context.last_message_compressed();
    if (want && !was_compressed) {
      return Fail(what +
                  ": compression requested, but the response's compressed "
                  "flag is not set");
    }
    if (!want && was_compressed) {
      return Fail(what +
                  ": compression not requested, but the response's "
                  "compressed flag is set");
    }
    return true;
  }

  std::unique_ptr<DuplexCall> StartFullDuplex(ClientContext* context) {
    return stub_.FullDuplexCall(context);
  }

  // Reads exactly sizes.size() responses of those sizes (all zeros), then
  // the end of the stream. `Reader` is ClientReader or ClientReaderWriter.
  template <class Reader>
  static bool ReadSizedResponses(Reader* stream, const std::vector<int>& sizes,
                                 const std::string& call) {
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (stream->Read(&response)) {
      const std::string what = absl::StrCat(call, " response ", count + 1);
      if (count >= sizes.size()) {
        return Fail(
            absl::StrCat(call, ": more than ", sizes.size(), " responses"));
      }
      if (!ExpectZeros(response.payload().body(), sizes[count], what)) {
        return false;
      }
      ++count;
    }
    if (count < sizes.size()) {
      return Fail(absl::StrCat(call, ": got ", count, " responses, expected ",
                               sizes.size(), "; call ended with ",
                               Describe(stream->Finish())));
    }
    return true;
  }

  // UnaryCall asking for status UNKNOWN with `message`.
  bool EchoStatus(const std::string& message) {
    ClientContext context;
    SetDeadline(&context);
    SimpleRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(message);
    SimpleResponse response;
    return ExpectStatus(stub_.UnaryCall(&context, request, &response),
                        StatusCode::kUnknown, message, "UnaryCall");
  }

  std::shared_ptr<Channel> channel_;
  TestService::Stub stub_;
  grpc::testing::UnimplementedService::Stub unimplemented_stub_;
};

using TestCase = bool (InteropClient::*)();

const std::map<std::string, TestCase>& TestCases() {
  static const auto* cases = new std::map<std::string, TestCase>{
      {"empty_unary", &InteropClient::EmptyUnary},
      {"large_unary", &InteropClient::LargeUnary},
      {"client_streaming", &InteropClient::ClientStreaming},
      {"server_streaming", &InteropClient::ServerStreaming},
      {"ping_pong", &InteropClient::PingPong},
      {"empty_stream", &InteropClient::EmptyStream},
      {"cancel_after_begin", &InteropClient::CancelAfterBegin},
      {"cancel_after_first_response", &InteropClient::CancelAfterFirstResponse},
      {"timeout_on_sleeping_server", &InteropClient::TimeoutOnSleepingServer},
      {"custom_metadata", &InteropClient::CustomMetadata},
      {"status_code_and_message", &InteropClient::StatusCodeAndMessage},
      {"special_status_message", &InteropClient::SpecialStatusMessage},
      {"unimplemented_method", &InteropClient::UnimplementedMethod},
      {"unimplemented_service", &InteropClient::UnimplementedService},
      {"client_compressed_unary", &InteropClient::ClientCompressedUnary},
      {"server_compressed_unary", &InteropClient::ServerCompressedUnary},
      {"client_compressed_streaming",
       &InteropClient::ClientCompressedStreaming},
      {"server_compressed_streaming",
       &InteropClient::ServerCompressedStreaming},
      {"half_duplex", &InteropClient::HalfDuplex},
  };
  return *cases;
}

int Run() {
  const std::string test_case = absl::GetFlag(FLAGS_test_case);
  const auto& cases = TestCases();
  auto it = cases.find(test_case);
  if (it == cases.end()) {
    std::vector<std::string> names;
    for (const auto& entry : cases) names.push_back(entry.first);
    std::fprintf(stderr,
                 "unsupported --test_case=\"%s\"; this client implements: %s\n",
                 test_case.c_str(), absl::StrJoin(names, ", ").c_str());
    return 2;
  }
  std::string target;
  if (const int bad = CheckClientFlags(
          absl::GetFlag(FLAGS_server_host), absl::GetFlag(FLAGS_server_port),
          absl::GetFlag(FLAGS_deadline_ms), &target)) {
    return bad;
  }

  const bool use_tls = absl::GetFlag(FLAGS_use_tls);
  const bool use_test_ca = absl::GetFlag(FLAGS_use_test_ca);
  const std::string server_host_override =
      absl::GetFlag(FLAGS_server_host_override);
  if (const int bad =
          CheckClientTlsFlags(use_tls, use_test_ca, server_host_override)) {
    return bad;
  }
  std::shared_ptr<Channel> channel;
  if (use_tls) {
    SslCredentialsOptions ssl_options;
    if (use_test_ca) {
      if (const int bad =
              ReadTestdataFile(absl::GetFlag(FLAGS_tls_testdata_dir),
                               kTestCaFile, &ssl_options.pem_root_certs)) {
        return bad;
      }
    }
    std::shared_ptr<ChannelCredentials> credentials =
        SslCredentials(ssl_options);
    if (!credentials->status().ok()) {
      std::fprintf(stderr, "unusable TLS credentials: %s\n",
                   credentials->status().ToString().c_str());
      return 2;
    }
    ChannelOptions options;
    options.ssl_target_name_override = server_host_override;
    channel = CreateChannel(target, std::move(credentials), options);
  } else {
    ChannelOptions options;
    options.connect_unary = absl::GetFlag(FLAGS_connect_unary);
    options.connect_json = absl::GetFlag(FLAGS_connect_json);
    options.connect_http1 = absl::GetFlag(FLAGS_connect_http1);
    channel = CreateChannel(target, options);
  }

  bool passed;
  {
    InteropClient client(std::move(channel));
    passed = (client.*(it->second))();
  }
  std::fprintf(stderr, "%s: %s against %s (%s)\n", test_case.c_str(),
               passed ? "PASSED" : "FAILED", target.c_str(),
               use_tls ? "TLS" : "plaintext");
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace h2rpc::testing

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return h2rpc::testing::Run();
}
