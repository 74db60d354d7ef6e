// What an application writes (a server and a client, every kind of call,
// blocking and reactor forms, options, metadata, compression and a generic
// call), for public_headers_test: it must compile with the public headers
// alone. Never built or run as a program.
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/compression.h"
#include "rpc/connection_options.h"
#include "rpc/metadata.h"
#include "rpc/name_resolver.h"
#include "rpc/server.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"
#include "rpc/status.h"
#include "test/api/api_user.h2rpc.pb.h"

namespace {

using h2rpc_test::api::Note;
using h2rpc_test::api::Notes;

class NotesService final : public Notes::Service {
 public:
  h2rpc::Status Say(h2rpc::ServerContext* context, const Note* request,
                    Note* response) override {
    context->AddTrailingMetadata("who", context->peer());
    response->set_text(request->text());
    return h2rpc::Status();
  }
  h2rpc::Status Chat(h2rpc::ServerContext* context,
                     h2rpc::ServerReaderWriter<Note, Note>* stream) override {
    Note note;
    while (stream->Read(&note)) {
      if (!stream->Write(note, h2rpc::WriteOptions().set_no_compression())) {
        break;
      }
    }
    return h2rpc::Status();
  }
};

class ChatReactor final : public h2rpc::ClientBidiReactor<Note, Note> {
 public:
  void OnReadDone(bool ok) override {
    if (ok) StartRead(&note_);
  }
  void OnDone(const h2rpc::Status& status) override { delete this; }

 private:
  Note note_;
};

class ListenReactor final : public h2rpc::ServerWriteReactor<Note> {
 public:
  explicit ListenReactor(const Note& note) : note_(note) { StartWrite(&note_); }
  void OnWriteDone(bool ok) override { Finish(h2rpc::Status()); }
  void OnDone() override { delete this; }

 private:
  Note note_;
};

}  // namespace

int RunClientAndServer() {
  NotesService service;
  int port = 0;
  h2rpc::Status status;
  h2rpc::ServerOptions server_options;
  server_options.connection.max_receive_message_size = 1 << 20;
  h2rpc::Server::Builder builder;
  builder.SetOptions(server_options).AddListeningPort("127.0.0.1:0", &port);
  service.AddTo(builder);
  builder.RegisterCallbackServerStreaming<Note, Note>(
      "/other.Svc/Listen", [](h2rpc::ServerContext*, const Note* note) {
        return new ListenReactor(*note);
      });
  std::unique_ptr<h2rpc::Server> server = builder.BuildAndStart(&status);
  if (server == nullptr) return 1;

  h2rpc::ChannelOptions options;
  options.resolver = std::make_shared<h2rpc::NameResolver>();
  options.connection.accepted_compression.Add(
      h2rpc::CompressionAlgorithm::kGzip);
  options.default_compression = h2rpc::CompressionAlgorithm::kGzip;
  std::shared_ptr<h2rpc::Channel> channel =
      h2rpc::CreateChannel("127.0.0.1:" + std::to_string(port), options);
  Notes::Stub stub(channel);

  h2rpc::ClientContext context;
  context.set_timeout(absl::Seconds(5));
  context.AddMetadata("key", "value");
  Note request;
  request.set_text("hello");
  Note response;
  status = stub.Say(&context, request, &response);
  const h2rpc::Metadata& trailing = context.GetServerTrailingMetadata();
  (void)trailing;

  h2rpc::ClientContext stream_context;
  std::unique_ptr<h2rpc::ClientReaderWriter<Note, Note>> chat =
      stub.Chat(&stream_context);
  chat->Write(request);
  chat->Read(&response);
  chat->WritesDone();
  status = chat->Finish();

  h2rpc::ClientContext listen_context;
  std::unique_ptr<h2rpc::ClientReader<Note>> listen =
      stub.Listen(&listen_context, request);
  while (listen->Read(&response)) {
  }
  status = listen->Finish();

  h2rpc::ClientContext tell_context;
  std::unique_ptr<h2rpc::ClientWriter<Note>> tell =
      stub.Tell(&tell_context, &response);
  tell->Write(request);
  status = tell->Finish();

  h2rpc::ClientContext async_context;
  stub.AsyncChat(&async_context, new ChatReactor);
  channel->AsyncGenericUnaryCall(&async_context, Notes::kSayPath, "", nullptr,
                                 [](const h2rpc::Status&) {});

  server->Shutdown(absl::Now() + absl::Seconds(1));
  return status.ok() ? 0 : 1;
}
