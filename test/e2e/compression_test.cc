// Message compression end to end: an h2rpc client and server negotiating
// grpc-encoding for unary and streaming calls (per-call choices, defaults,
// per-message opt-out, what each side accepts), and a raw HTTP/2 client
// checking the server's wire format and its limit on inflated size.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/raw_h2_client.h"
#include "test/util/stub_server.h"
#include "test/util/zlib_reference.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::AllocationsByRole;
using ::h2rpc::testing::GrpcFrame;
using ::h2rpc::testing::GrpcRequestHeaders;
using ::h2rpc::testing::ParseGrpcFrames;
using ::h2rpc::testing::PercentDecode;
using ::h2rpc::testing::RawH2Client;
using ::h2rpc::testing::RawRequest;
using ::h2rpc::testing::RawResponse;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::ThreadRole;
using ::h2rpc::testing::ZlibCompress;
using ::h2rpc::testing::ZlibCompressZeros;
using ::h2rpc::testing::ZlibInflate;
using ::testing::HasSubstr;

constexpr char kEcho[] = "/h2rpc.test.Compression/Echo";
constexpr char kCallbackEcho[] = "/h2rpc.test.Compression/CallbackEcho";
constexpr char kBidi[] = "/h2rpc.test.Compression/Bidi";
constexpr char kCallbackBidi[] = "/h2rpc.test.Compression/CallbackBidi";
constexpr char kUpload[] = "/h2rpc.test.Compression/Upload";
constexpr char kDownload[] = "/h2rpc.test.Compression/Download";

// What the server saw of a request message, echoed back in the response.
constexpr char kSawCompressed[] = "compressed";
constexpr char kSawPlain[] = "plain";

const char* Saw(const ServerContext* context) {
  return context->last_message_compressed() ? kSawCompressed : kSawPlain;
}

// Highly compressible bytes.
std::string Compressible(size_t size) { return std::string(size, 'a'); }

// The response encoding a test asks for with "x-respond-with: gzip".
void RespondAsAsked(ServerContext* context) {
  const absl::optional<absl::string_view> name =
      context->client_metadata().Get("x-respond-with");
  if (!name.has_value()) return;
  const absl::optional<CompressionAlgorithm> algorithm =
      ParseCompressionAlgorithm(*name);
  if (algorithm.has_value()) context->set_compression_algorithm(*algorithm);
}

Status Echo(ServerContext* context, const SimpleRequest& request,
            SimpleResponse* response) {
  RespondAsAsked(context);
  response->mutable_payload()->set_body(request.payload().body());
  response->set_username(Saw(context));
  return Status();
}

// A bidi response: what the server saw, then the request's body; sent
// uncompressed when the request's first response parameter says
// compressed = false.
void BidiReply(const ServerContext* context,
               const StreamingOutputCallRequest& request,
               StreamingOutputCallResponse* response, WriteOptions* options) {
  response->mutable_payload()->set_body(
      absl::StrCat(Saw(context), ":", request.payload().body()));
  *options = WriteOptions();
  if (request.response_parameters_size() > 0 &&
      !request.response_parameters(0).compressed().value()) {
    options->set_no_compression();
  }
}

class CallbackBidi final
    : public ServerBidiReactor<StreamingOutputCallRequest,
                               StreamingOutputCallResponse> {
 public:
  explicit CallbackBidi(ServerContext* context) : context_(context) {
    RespondAsAsked(context);
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(Status());
      return;
    }
    WriteOptions options;
    BidiReply(context_, request_, &response_, &options);
    StartWrite(&response_, options);
  }
  void OnWriteDone(bool ok) override {
    if (ok) {
      StartRead(&request_);
    } else {
      Finish(Status(StatusCode::kCancelled, "write failed"));
    }
  }
  void OnDone() override { delete this; }

 private:
  ServerContext* const context_;
  StreamingOutputCallRequest request_;
  StreamingOutputCallResponse response_;
};

// Starts `server` with the methods above and `options`.
void StartServer(StubServer* server, const ServerOptions& options) {
  server->builder()
      .SetOptions(options)
      .RegisterUnary<SimpleRequest, SimpleResponse>(kEcho, Echo)
      .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
          kCallbackEcho,
          [](ServerContext* context, const SimpleRequest* request,
             SimpleResponse* response,
             UnaryDone done) { done(Echo(context, *request, response)); })
      .RegisterBidiStreaming<StreamingOutputCallRequest,
                             StreamingOutputCallResponse>(
          kBidi,
          [](ServerContext* context,
             ServerReaderWriter<StreamingOutputCallResponse,
                                StreamingOutputCallRequest>* stream) {
            RespondAsAsked(context);
            StreamingOutputCallRequest request;
            StreamingOutputCallResponse response;
            WriteOptions options;
            while (stream->Read(&request)) {
              BidiReply(context, request, &response, &options);
              if (!stream->Write(response, options)) break;
            }
            return Status();
          })
      .RegisterCallbackBidiStreaming<StreamingOutputCallRequest,
                                     StreamingOutputCallResponse>(
          kCallbackBidi,
          [](ServerContext* context) { return new CallbackBidi(context); })
      .RegisterClientStreaming<StreamingInputCallRequest,
                               StreamingInputCallResponse>(
          kUpload,
          [](ServerContext* context,
             ServerReader<StreamingInputCallRequest>* reader,
             StreamingInputCallResponse* response) {
            // Counts bytes, and fails unless every message arrived
            // compressed exactly when it said it would.
            StreamingInputCallRequest request;
            int total = 0;
            while (reader->Read(&request)) {
              if (request.expect_compressed().value() !=
                  context->last_message_compressed()) {
                return Status(StatusCode::kInvalidArgument,
                              "compression not as expected");
              }
              total += static_cast<int>(request.payload().body().size());
            }
            response->set_aggregated_payload_size(total);
            return Status();
          })
      .RegisterServerStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
          kDownload,
          [](ServerContext* context, const StreamingOutputCallRequest& request,
             ServerWriter<StreamingOutputCallResponse>* writer) {
            RespondAsAsked(context);
            StreamingOutputCallResponse response;
            for (const auto& parameters : request.response_parameters()) {
              response.mutable_payload()->set_body(
                  Compressible(parameters.size()));
              WriteOptions options;
              if (!parameters.compressed().value()) {
                options.set_no_compression();
              }
              if (!writer->Write(response, options)) break;
            }
            return Status();
          });
  const Status status = server->Start();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

class CompressionTest : public ::testing::TestWithParam<CompressionAlgorithm> {
 protected:
  void SetUp() override { StartServer(&server_, ServerOptions()); }

  CompressionAlgorithm algorithm() const { return GetParam(); }
  std::string algorithm_name() const {
    return std::string(CompressionAlgorithmName(GetParam()));
  }

  StubServer server_;
};

TEST_P(CompressionTest, UnaryCompressedBothWays) {
  std::shared_ptr<Channel> channel = server_.NewChannel();
  for (const char* method : {kEcho, kCallbackEcho}) {
    ClientContext context;
    context.set_compression_algorithm(algorithm());
    context.AddMetadata("x-respond-with", algorithm_name());
    SimpleRequest request;
    request.mutable_payload()->set_body(Compressible(64 << 10));
    SimpleResponse response;
    const Status status =
        channel->UnaryCall(&context, method, request, &response);
    ASSERT_TRUE(status.ok()) << method << ": " << status.ToString();
    EXPECT_EQ(response.username(), kSawCompressed) << method;
    EXPECT_TRUE(response.payload().body() == request.payload().body())
        << method;
    EXPECT_TRUE(context.last_message_compressed()) << method;
  }
}

TEST_P(CompressionTest, ChannelAndServerDefaults) {
  ServerOptions server_options;
  server_options.default_compression = algorithm();
  StubServer server;
  StartServer(&server, server_options);
  ChannelOptions channel_options;
  channel_options.default_compression = algorithm();
  std::shared_ptr<Channel> channel = server.NewChannel(channel_options);

  ClientContext context;
  SimpleRequest request;
  request.mutable_payload()->set_body(Compressible(4096));
  SimpleResponse response;
  ASSERT_TRUE(channel->UnaryCall(&context, kEcho, request, &response).ok());
  EXPECT_EQ(response.username(), kSawCompressed);
  EXPECT_TRUE(context.last_message_compressed());

  // A call's own choice overrides the channel's default.
  ClientContext plain;
  plain.set_compression_algorithm(CompressionAlgorithm::kIdentity);
  ASSERT_TRUE(channel->UnaryCall(&plain, kEcho, request, &response).ok());
  EXPECT_EQ(response.username(), kSawPlain);
}

TEST_P(CompressionTest, IncompressibleMessageIsSentPlain) {
  std::shared_ptr<Channel> channel = server_.NewChannel();
  ClientContext context;
  context.set_compression_algorithm(algorithm());
  SimpleRequest request;
  request.mutable_payload()->set_body("xyz");  // deflate's overhead is larger
  SimpleResponse response;
  ASSERT_TRUE(channel->UnaryCall(&context, kEcho, request, &response).ok());
  EXPECT_EQ(response.username(), kSawPlain);
}

TEST_P(CompressionTest, ServerNeverUsesAnEncodingTheClientDoesNotAccept) {
  ChannelOptions options;
  options.connection.accepted_compression = CompressionAlgorithmSet();
  std::shared_ptr<Channel> channel = server_.NewChannel(options);
  ClientContext context;
  context.AddMetadata("x-respond-with", algorithm_name());
  SimpleRequest request;
  request.mutable_payload()->set_body(Compressible(4096));
  SimpleResponse response;
  const Status status = channel->UnaryCall(&context, kEcho, request, &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_FALSE(context.last_message_compressed());
  EXPECT_TRUE(response.payload().body() == request.payload().body());
}

TEST_P(CompressionTest, RequestInAnEncodingTheServerRefusesIsUnimplemented) {
  ServerOptions server_options;
  server_options.connection.accepted_compression = CompressionAlgorithmSet();
  StubServer server;
  StartServer(&server, server_options);
  std::shared_ptr<Channel> channel = server.NewChannel();
  ClientContext context;
  context.set_compression_algorithm(algorithm());
  SimpleResponse response;
  const Status status =
      channel->UnaryCall(&context, kEcho, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << status.ToString();
  EXPECT_THAT(
      status.message(),
      HasSubstr(absl::StrCat("'", algorithm_name(),
                             "' is not supported; supported: identity")));
}

TEST_P(CompressionTest, BidiPerMessageOptOutBothWays) {
  std::shared_ptr<Channel> channel = server_.NewChannel();
  for (const char* method : {kBidi, kCallbackBidi}) {
    ClientContext context;
    context.set_compression_algorithm(algorithm());
    context.AddMetadata("x-respond-with", algorithm_name());
    auto stream = channel->BidiStreamingCall<StreamingOutputCallRequest,
                                             StreamingOutputCallResponse>(
        &context, method);
    for (int i = 0; i < 6; ++i) {
      const bool compress_request = i % 2 == 0;
      const bool compress_response = i % 3 == 0;
      StreamingOutputCallRequest request;
      request.mutable_payload()->set_body(Compressible(2048));
      request.add_response_parameters()->mutable_compressed()->set_value(
          compress_response);
      WriteOptions options;
      if (!compress_request) options.set_no_compression();
      ASSERT_TRUE(stream->Write(request, options)) << method << " " << i;
      StreamingOutputCallResponse response;
      ASSERT_TRUE(stream->Read(&response)) << method << " " << i;
      EXPECT_EQ(response.payload().body(),
                absl::StrCat(compress_request ? kSawCompressed : kSawPlain, ":",
                             request.payload().body()))
          << method << " " << i;
      EXPECT_EQ(context.last_message_compressed(), compress_response)
          << method << " " << i;
    }
    ASSERT_TRUE(stream->WritesDone());
    const Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << method << ": " << status.ToString();
  }
}

TEST_P(CompressionTest, ClientStreamingWithOptOut) {
  std::shared_ptr<Channel> channel = server_.NewChannel();
  ClientContext context;
  context.set_compression_algorithm(algorithm());
  StreamingInputCallResponse response;
  auto writer = channel->ClientStreamingCall<StreamingInputCallRequest>(
      &context, kUpload, &response);
  StreamingInputCallRequest request;
  request.mutable_payload()->set_body(Compressible(100000));
  request.mutable_expect_compressed()->set_value(true);
  ASSERT_TRUE(writer->Write(request));
  request.mutable_expect_compressed()->set_value(false);
  ASSERT_TRUE(writer->Write(request, WriteOptions().set_no_compression()));
  const Status status = writer->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.aggregated_payload_size(), 200000);
}

TEST_P(CompressionTest, ServerStreamingWithOptOut) {
  std::shared_ptr<Channel> channel = server_.NewChannel();
  ClientContext context;
  context.AddMetadata("x-respond-with", algorithm_name());
  StreamingOutputCallRequest request;
  const bool compressed[] = {true, false, true};
  for (bool c : compressed) {
    auto* parameters = request.add_response_parameters();
    parameters->set_size(31415);
    parameters->mutable_compressed()->set_value(c);
  }
  auto reader = channel->ServerStreamingCall<StreamingOutputCallRequest,
                                             StreamingOutputCallResponse>(
      &context, kDownload, request);
  StreamingOutputCallResponse response;
  for (bool c : compressed) {
    ASSERT_TRUE(reader->Read(&response));
    EXPECT_EQ(response.payload().body(), Compressible(31415));
    EXPECT_EQ(context.last_message_compressed(), c);
  }
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
}

INSTANTIATE_TEST_SUITE_P(Algorithms, CompressionTest,
                         ::testing::Values(CompressionAlgorithm::kDeflate,
                                           CompressionAlgorithm::kGzip),
                         [](const auto& info) {
                           return std::string(
                               CompressionAlgorithmName(info.param));
                         });

// ---------------------------------------------------------------------------
// The server's wire format and limits, seen by a raw HTTP/2 client whose
// compression is zlib's own.

// A serialized SimpleRequest with a payload of `zeros` zero bytes,
// compressed by zlib itself.
std::string CompressedRequest(size_t zeros, bool gzip) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(zeros, '\0'));
  return ZlibCompress(request.SerializeAsString(), gzip);
}

class CompressionWireTest : public ::testing::TestWithParam<bool /*gzip*/> {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.default_compression = CompressionAlgorithm::kGzip;
    StartServer(&server_, options);
    std::string error;
    client_ = RawH2Client::Connect(server_.port(), &error);
    ASSERT_NE(client_, nullptr) << error;
  }

  const char* encoding() const { return GetParam() ? "gzip" : "deflate"; }

  RawRequest CompressedEcho(std::string compressed) {
    RawRequest request;
    request.headers = GrpcRequestHeaders(kEcho, server_.port());
    request.headers.emplace_back("grpc-encoding", encoding());
    request.body = GrpcFrame(compressed, /*flag=*/1);
    return request;
  }

  StubServer server_;
  std::unique_ptr<RawH2Client> client_;
};

TEST_P(CompressionWireTest, ZlibCompressedRequestIsInflated) {
  // No grpc-accept-encoding: the server's default (gzip) must not be used.
  const RawResponse response =
      client_->Call(CompressedEcho(CompressedRequest(10000, GetParam())));
  ASSERT_EQ(response.Trailer("grpc-status"), "0") << response.DebugString();
  EXPECT_EQ(response.Header("grpc-accept-encoding"), "identity,deflate,gzip");
  EXPECT_EQ(response.Header("grpc-encoding"), absl::nullopt);
  std::vector<std::string> messages;
  std::vector<uint8_t> flags;
  ASSERT_TRUE(ParseGrpcFrames(response.body, &messages, &flags));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(flags[0], 0);
  SimpleResponse echoed;
  ASSERT_TRUE(echoed.ParseFromString(messages[0]));
  EXPECT_EQ(echoed.payload().body(), std::string(10000, '\0'));
  EXPECT_EQ(echoed.username(), kSawCompressed);
}

TEST_P(CompressionWireTest, ResponseIsCompressedWhenTheClientAcceptsIt) {
  RawRequest request = CompressedEcho(CompressedRequest(10000, GetParam()));
  request.headers.emplace_back("grpc-accept-encoding", "gzip");
  const RawResponse response = client_->Call(request);
  ASSERT_EQ(response.Trailer("grpc-status"), "0") << response.DebugString();
  EXPECT_EQ(response.Header("grpc-encoding"), "gzip");
  std::vector<std::string> messages;
  std::vector<uint8_t> flags;
  ASSERT_TRUE(ParseGrpcFrames(response.body, &messages, &flags));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(flags[0], 1);
  const std::string inflated = ZlibInflate(messages[0], /*gzip=*/true, 20000);
  SimpleResponse echoed;
  ASSERT_TRUE(echoed.ParseFromString(inflated));
  EXPECT_EQ(echoed.payload().body(), std::string(10000, '\0'));
}

TEST_P(CompressionWireTest, CorruptCompressedMessageIsInternal) {
  const RawResponse response =
      client_->Call(CompressedEcho("this is not compressed at all"));
  EXPECT_EQ(response.Trailer("grpc-status"), "13") << response.DebugString();
}

TEST_P(CompressionWireTest, BombStopsAtTheReceiveLimit) {
  // 256 MiB of zeros in about 256 KiB; the server's limit is 4 MiB.
  const std::string bomb = ZlibCompressZeros(256 << 20, GetParam());
  ASSERT_LT(bomb.size(), 1u << 20);
  // Warm the server's loop (codec, scratch buffer) with a small message.
  ASSERT_EQ(client_->Call(CompressedEcho(CompressedRequest(10, GetParam())))
                .Trailer("grpc-status"),
            "0");
  const int64_t before = AllocationsByRole(ThreadRole::kServer).bytes;
  const RawResponse response = client_->Call(CompressedEcho(bomb));
  const int64_t allocated =
      AllocationsByRole(ThreadRole::kServer).bytes - before;
  EXPECT_EQ(response.Trailer("grpc-status"), "8") << response.DebugString();
  EXPECT_THAT(PercentDecode(response.Trailer("grpc-message").value_or("")),
              HasSubstr("4194304"));
  // The inflated bytes up to the limit, plus the compressed message gathered
  // from its DATA frames.
  EXPECT_LE(allocated, int64_t{4 << 20} +
                           2 * static_cast<int64_t>(bomb.size()) + (256 << 10));
}

INSTANTIATE_TEST_SUITE_P(Formats, CompressionWireTest, ::testing::Bool(),
                         [](const auto& info) {
                           return std::string(info.param ? "gzip" : "deflate");
                         });

}  // namespace
}  // namespace h2rpc
