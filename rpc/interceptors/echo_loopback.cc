#include "rpc/interceptors/echo_loopback.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"

namespace h2rpc::testing {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

EchoLoopback::EchoLoopback(
    std::vector<std::shared_ptr<ClientInterceptor>> client,
    std::vector<std::shared_ptr<ServerInterceptor>> server) {
  ServerOptions options;
  options.num_loops = 1;
  options.min_sync_threads = 1;
  Server::Builder builder;
  builder.SetOptions(options)
      .AddListeningPort("127.0.0.1:0", &port_)
      .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
          kEchoMethod,
          [this](ServerContext* context, const SimpleRequest* request,
                 SimpleResponse* response, UnaryDone done) {
            handler_calls_.fetch_add(1);
            for (const Metadata::Entry entry : context->client_metadata()) {
              if (absl::StartsWith(entry.key, "x-")) {
                context->AddTrailingMetadata(absl::StrCat("echo-", entry.key),
                                             entry.value);
              }
            }
            response->mutable_payload()->set_body(request->payload().body());
            done(Status());
          })
      .RegisterCallbackUnary<SimpleRequest, SimpleResponse>(
          kFailMethod,
          [this](ServerContext*, const SimpleRequest*, SimpleResponse*,
                 UnaryDone done) {
            handler_calls_.fetch_add(1);
            done(Status(StatusCode::kNotFound, kFailMessage));
          })
      .RegisterBidiStreaming<StreamingOutputCallRequest,
                             StreamingOutputCallResponse>(
          kBidiMethod,
          [this](ServerContext*,
                 ServerReaderWriter<StreamingOutputCallResponse,
                                    StreamingOutputCallRequest>* stream) {
            handler_calls_.fetch_add(1);
            StreamingOutputCallRequest request;
            StreamingOutputCallResponse response;
            while (stream->Read(&request)) {
              response.mutable_payload()->set_body(request.payload().body());
              if (!stream->Write(response)) break;
            }
            return Status();
          })
      .RegisterCallbackUnary<Empty, Empty>(
          kEmptyMethod,
          [this](ServerContext*, const Empty*, Empty*, UnaryDone done) {
            handler_calls_.fetch_add(1);
            done(Status());
          });
  for (auto& interceptor : server)
    builder.AddInterceptor(std::move(interceptor));
  server_ = builder.BuildAndStart(&status_);
  if (!status_.ok()) return;
  ChannelOptions channel_options;
  channel_options.interceptors = std::move(client);
  channel_ = CreateChannel(absl::StrCat("127.0.0.1:", port_),
                           InsecureChannelCredentials(), channel_options);
}

}  // namespace h2rpc::testing
