// ReflectionService with an h2rpc client (the generated
// grpc::reflection::v1alpha::ServerReflection::Stub) over loopback TCP:
// list_services, files by name and by symbol (with their dependencies, each
// once, enough to build a pool), extensions (on a pool of the test's own),
// errors that leave the stream open, requests answered in order, the
// bounds (max_streams, a response over max_send_message_size, streams
// ending), and the server's shutdown ending open streams.

#include "rpc/reflection_service.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/descriptor_database.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/grpc/reflection/v1alpha/reflection.h2rpc.pb.h"
#include "proto/grpc/reflection/v1alpha/reflection.pb.h"
#include "proto/grpc/testing/empty.pb.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/interceptor.h"
#include "rpc/server.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "test/util/notification.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptorProto;
using grpc::reflection::v1alpha::ServerReflection;
using grpc::reflection::v1alpha::ServerReflectionRequest;
using grpc::reflection::v1alpha::ServerReflectionResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::WaitFor;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

using ReflectionStream =
    ClientReaderWriter<ServerReflectionRequest, ServerReflectionResponse>;

constexpr char kTestProto[] = "proto/grpc/testing/test.proto";
constexpr char kEmptyProto[] = "proto/grpc/testing/empty.proto";
constexpr char kMessagesProto[] = "proto/grpc/testing/messages.proto";

// TestService with no method overridden: registered, every call
// UNIMPLEMENTED.
class UnimplementedTestService final
    : public grpc::testing::TestService::Service {};

// An h2rpc server on 127.0.0.1 with TestService, a hand-registered
// /manual.Service/Call and `reflection`.
class ReflectionServer {
 public:
  explicit ReflectionServer(ReflectionService& reflection,
                            ServerOptions options = ServerOptions()) {
    Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_).SetOptions(options);
    reflection.AddTo(builder);  // before the others: the list is complete
    test_service_.AddTo(builder);
    builder.RegisterUnary<grpc::testing::Empty, grpc::testing::Empty>(
        "/manual.Service/Call", [](ServerContext*, const grpc::testing::Empty&,
                                   grpc::testing::Empty*) { return Status(); });
    server_ = builder.BuildAndStart(&status_);
  }
  bool ok() const { return server_ != nullptr && port_ > 0; }
  const Status& status() const { return status_; }
  std::unique_ptr<ServerReflection::Stub> NewStub(
      ChannelOptions options = ChannelOptions()) const {
    return std::make_unique<ServerReflection::Stub>(
        CreateChannel("127.0.0.1:" + std::to_string(port_), options));
  }
  void Shutdown(absl::Time deadline) { server_->Shutdown(deadline); }

 private:
  UnimplementedTestService test_service_;
  int port_ = 0;
  Status status_;
  std::unique_ptr<Server> server_;
};

// One reflection stream with a deadline of kHangTimeout.
class StreamClient {
 public:
  explicit StreamClient(ServerReflection::Stub& stub) {
    context_.set_timeout(kHangTimeout);
    stream_ = stub.ServerReflectionInfo(&context_);
  }
  // Sends `request` and reads its answer; false if the stream ended.
  bool Ask(const ServerReflectionRequest& request,
           ServerReflectionResponse* response) {
    return stream_->Write(request) && stream_->Read(response);
  }
  ReflectionStream& stream() { return *stream_; }
  ClientContext& context() { return context_; }

 private:
  ClientContext context_;
  std::unique_ptr<ReflectionStream> stream_;
};

ServerReflectionRequest SymbolRequest(const std::string& symbol) {
  ServerReflectionRequest request;
  request.set_file_containing_symbol(symbol);
  return request;
}

// The names of the files in `response`, in order (empty if it has none or
// one does not parse).
std::vector<std::string> FileNames(const ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const std::string& bytes :
       response.file_descriptor_response().file_descriptor_proto()) {
    FileDescriptorProto file;
    if (!file.ParseFromString(bytes)) return {};
    names.push_back(file.name());
  }
  return names;
}

TEST(ReflectionServiceTest, ListsTheRegisteredServicesItselfIncluded) {
  ReflectionService reflection;
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::vector<std::string> expected = {
      "grpc.reflection.v1alpha.ServerReflection", "grpc.testing.TestService",
      "manual.Service"};
  EXPECT_EQ(reflection.services(), expected);

  auto stub = server.NewStub();
  StreamClient client(*stub);
  ServerReflectionRequest request;
  request.set_host("example.com");
  request.set_list_services("anything");
  ServerReflectionResponse response;
  ASSERT_TRUE(client.Ask(request, &response));
  ASSERT_TRUE(response.has_list_services_response()) << response.DebugString();
  std::vector<std::string> names;
  for (const auto& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_EQ(names, expected);
  EXPECT_EQ(response.valid_host(), "example.com");
  EXPECT_EQ(response.original_request().list_services(), "anything");
  EXPECT_EQ(response.original_request().host(), "example.com");
}

TEST(ReflectionServiceTest, FileContainingAServiceHasEachDependencyOnce) {
  ReflectionService reflection;
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);

  ServerReflectionResponse response;
  ASSERT_TRUE(client.Ask(SymbolRequest("grpc.testing.TestService"), &response));
  // The file first, then its imports.
  EXPECT_THAT(FileNames(response),
              ElementsAre(kTestProto, kEmptyProto, kMessagesProto))
      << response.DebugString();
  EXPECT_EQ(response.original_request().file_containing_symbol(),
            "grpc.testing.TestService");

  // The files are enough to build the service, whose method names its input
  // type.
  google::protobuf::SimpleDescriptorDatabase database;
  for (const std::string& bytes :
       response.file_descriptor_response().file_descriptor_proto()) {
    FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    ASSERT_TRUE(database.Add(file));
  }
  DescriptorPool pool(&database);
  const google::protobuf::MethodDescriptor* method =
      pool.FindMethodByName("grpc.testing.TestService.UnaryCall");
  ASSERT_NE(method, nullptr);
  EXPECT_EQ(method->input_type()->full_name(), "grpc.testing.SimpleRequest");
  EXPECT_EQ(method->output_type()->full_name(), "grpc.testing.SimpleResponse");

  // The same again on the same stream: every response stands alone.
  ASSERT_TRUE(client.Ask(SymbolRequest("grpc.testing.TestService"), &response));
  EXPECT_THAT(FileNames(response),
              ElementsAre(kTestProto, kEmptyProto, kMessagesProto));
}

TEST(ReflectionServiceTest, FindsEveryKindOfSymbol) {
  ReflectionService reflection;
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);

  const struct {
    const char* symbol;
    std::vector<std::string> files;
  } cases[] = {
      {"grpc.testing.TestService.UnaryCall",  // method
       {kTestProto, kEmptyProto, kMessagesProto}},
      {"grpc.testing.SimpleRequest", {kMessagesProto}},          // message
      {"grpc.testing.SimpleRequest.payload", {kMessagesProto}},  // field
      {"grpc.testing.PayloadType", {kMessagesProto}},            // enum
      {"grpc.testing.COMPRESSABLE", {kMessagesProto}},           // enum value
      // A nested type (a map's entry).
      {"grpc.testing.TestOrcaReport.RequestCostEntry", {kMessagesProto}},
      {"grpc.testing.Empty", {kEmptyProto}},
      {"grpc.reflection.v1alpha.ServerReflection",
       {"proto/grpc/reflection/v1alpha/reflection.proto"}},
  };
  for (const auto& c : cases) {
    ServerReflectionResponse response;
    ASSERT_TRUE(client.Ask(SymbolRequest(c.symbol), &response)) << c.symbol;
    EXPECT_EQ(FileNames(response), c.files)
        << c.symbol << ": " << response.ShortDebugString();
  }
}

TEST(ReflectionServiceTest, FileByFilename) {
  ReflectionService reflection;
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);

  ServerReflectionRequest request;
  request.set_file_by_filename(kTestProto);
  ServerReflectionResponse response;
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_THAT(FileNames(response),
              ElementsAre(kTestProto, kEmptyProto, kMessagesProto));
  EXPECT_EQ(response.original_request().file_by_filename(), kTestProto);

  request.set_file_by_filename(kEmptyProto);
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_THAT(FileNames(response), ElementsAre(kEmptyProto));
}

TEST(ReflectionServiceTest, ErrorsAreAnsweredAndTheStreamGoesOn) {
  ReflectionService reflection;
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);
  ServerReflectionResponse response;

  ASSERT_TRUE(client.Ask(SymbolRequest("no.such.Symbol"), &response));
  ASSERT_TRUE(response.has_error_response()) << response.DebugString();
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kNotFound));
  EXPECT_THAT(response.error_response().error_message(),
              HasSubstr("symbol \"no.such.Symbol\" not found"));
  EXPECT_EQ(response.original_request().file_containing_symbol(),
            "no.such.Symbol");

  // A sub-symbol of a known type that does not exist.
  ASSERT_TRUE(
      client.Ask(SymbolRequest("grpc.testing.SimpleRequest.nope"), &response));
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kNotFound));

  ServerReflectionRequest request;
  request.set_file_by_filename("no/such.proto");
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kNotFound));
  EXPECT_THAT(response.error_response().error_message(),
              HasSubstr("file \"no/such.proto\" not found"));

  request.set_all_extension_numbers_of_type("no.such.Type");
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kNotFound));
  EXPECT_THAT(response.error_response().error_message(),
              HasSubstr("message type \"no.such.Type\" not found"));

  request.mutable_file_containing_extension()->set_containing_type(
      "grpc.testing.SimpleRequest");
  request.mutable_file_containing_extension()->set_extension_number(1000);
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kNotFound));
  EXPECT_THAT(
      response.error_response().error_message(),
      HasSubstr("extension 1000 of \"grpc.testing.SimpleRequest\" not found"));

  // A request that sets no field of message_request.
  ASSERT_TRUE(client.Ask(ServerReflectionRequest(), &response));
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kUnimplemented));
  EXPECT_THAT(response.error_response().error_message(),
              HasSubstr("list_services"));

  // The stream still answers.
  ASSERT_TRUE(client.Ask(SymbolRequest("grpc.testing.Empty"), &response));
  EXPECT_THAT(FileNames(response), ElementsAre(kEmptyProto));

  ASSERT_TRUE(client.stream().WritesDone());
  EXPECT_FALSE(client.stream().Read(&response));
  const Status status = client.stream().Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(ReflectionServiceTest, AnswersRequestsSentTogetherInOrder) {
  ReflectionService reflection;
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);

  const std::vector<std::string> symbols = {
      "grpc.testing.Empty", "missing.Symbol", "grpc.testing.SimpleRequest",
      "grpc.testing.TestService"};
  for (const std::string& symbol : symbols) {
    ASSERT_TRUE(client.stream().Write(SymbolRequest(symbol)));
  }
  ASSERT_TRUE(client.stream().WritesDone());
  for (const std::string& symbol : symbols) {
    ServerReflectionResponse response;
    ASSERT_TRUE(client.stream().Read(&response)) << symbol;
    EXPECT_EQ(response.original_request().file_containing_symbol(), symbol);
  }
  ServerReflectionResponse extra;
  EXPECT_FALSE(client.stream().Read(&extra));
  const Status status = client.stream().Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(WaitFor([&] { return reflection.open_streams() == 0; }));
}

// A pool of the test's own, with nested types and extensions:
// ext/base.proto declares ext.test.Base (extensions 100 to 199) and
// ext/extensions.proto extends it with 100 and 150.
class ExtensionPool {
 public:
  ExtensionPool() {
    const char* const kFiles[] = {
        R"pb(
          name: "ext/base.proto"
          package: "ext.test"
          syntax: "proto2"
          message_type {
            name: "Base"
            extension_range { start: 100 end: 200 }
            nested_type {
              name: "Inner"
              field {
                name: "x"
                number: 1
                label: LABEL_OPTIONAL
                type: TYPE_INT32
              }
            }
            enum_type {
              name: "Kind"
              value { name: "KIND_A" number: 0 }
            }
          }
        )pb",
        R"pb(
          name: "ext/extensions.proto"
          package: "ext.test"
          syntax: "proto2"
          dependency: "ext/base.proto"
          extension {
            name: "ext_a"
            extendee: ".ext.test.Base"
            number: 100
            label: LABEL_OPTIONAL
            type: TYPE_INT32
          }
          extension {
            name: "ext_b"
            extendee: ".ext.test.Base"
            number: 150
            label: LABEL_OPTIONAL
            type: TYPE_STRING
          }
        )pb",
    };
    for (const char* text : kFiles) {
      FileDescriptorProto file;
      ok_ = ok_ && google::protobuf::TextFormat::ParseFromString(text, &file) &&
            pool_.BuildFile(file) != nullptr;
    }
  }
  bool ok() const { return ok_; }
  const DescriptorPool* pool() const { return &pool_; }

 private:
  DescriptorPool pool_;
  bool ok_ = true;
};

TEST(ReflectionServiceTest, ExtensionsAndNestedSymbolsOfAnotherPool) {
  ExtensionPool pool;
  ASSERT_TRUE(pool.ok());
  ReflectionServiceOptions options;
  options.pool = pool.pool();
  ReflectionService reflection(options);
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);
  ServerReflectionResponse response;

  ServerReflectionRequest request;
  request.set_all_extension_numbers_of_type("ext.test.Base");
  ASSERT_TRUE(client.Ask(request, &response));
  ASSERT_TRUE(response.has_all_extension_numbers_response())
      << response.DebugString();
  EXPECT_EQ(response.all_extension_numbers_response().base_type_name(),
            "ext.test.Base");
  EXPECT_THAT(response.all_extension_numbers_response().extension_number(),
              UnorderedElementsAre(100, 150));

  request.mutable_file_containing_extension()->set_containing_type(
      "ext.test.Base");
  request.mutable_file_containing_extension()->set_extension_number(150);
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_THAT(FileNames(response),
              ElementsAre("ext/extensions.proto", "ext/base.proto"));

  request.mutable_file_containing_extension()->set_extension_number(101);
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kNotFound));

  for (const char* symbol : {"ext.test.Base.Inner", "ext.test.Base.Inner.x",
                             "ext.test.Base.Kind", "ext.test.Base.KIND_A"}) {
    ASSERT_TRUE(client.Ask(SymbolRequest(symbol), &response));
    EXPECT_THAT(FileNames(response), ElementsAre("ext/base.proto")) << symbol;
  }
  ASSERT_TRUE(client.Ask(SymbolRequest("ext.test.ext_a"), &response));
  EXPECT_THAT(FileNames(response),
              ElementsAre("ext/extensions.proto", "ext/base.proto"));

  // This pool has no generated files.
  ASSERT_TRUE(client.Ask(SymbolRequest("grpc.testing.Empty"), &response));
  EXPECT_EQ(response.error_response().error_code(),
            static_cast<int>(StatusCode::kNotFound));
}

TEST(ReflectionServiceTest, RefusesAStreamPastMaxStreams) {
  ReflectionServiceOptions options;
  options.max_streams = 1;
  ReflectionService reflection(options);
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();

  ServerReflectionRequest request;
  request.set_list_services("");
  ServerReflectionResponse response;
  {
    StreamClient first(*stub);
    ASSERT_TRUE(first.Ask(request, &response));  // open on the server
    EXPECT_EQ(reflection.open_streams(), 1u);

    StreamClient second(*stub);
    second.stream().Write(request);  // may fail once the call is over
    EXPECT_FALSE(second.stream().Read(&response));
    const Status status = second.stream().Finish();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(status.message(),
                HasSubstr("1 reflection streams are open, the limit "
                          "(ReflectionServiceOptions::max_streams)"));

    ASSERT_TRUE(first.Ask(request, &response));  // still served
    ASSERT_TRUE(first.stream().WritesDone());
    EXPECT_FALSE(first.stream().Read(&response));
    EXPECT_TRUE(first.stream().Finish().ok());
  }
  ASSERT_TRUE(WaitFor([&] { return reflection.open_streams() == 0; }));
  StreamClient third(*stub);
  EXPECT_TRUE(third.Ask(request, &response));
}

// One connection opening streams until it is refused holds at most
// max_streams_per_connection of them; a client on another connection still
// gets its stream answered.
TEST(ReflectionServiceTest, OneConnectionCannotTakeEveryStream) {
  ReflectionServiceOptions options;
  options.max_streams = 6;
  options.max_streams_per_connection = 2;
  ReflectionService reflection(options);
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto greedy_stub = server.NewStub();

  ServerReflectionRequest request;
  request.set_list_services("");
  ServerReflectionResponse response;
  std::vector<std::unique_ptr<StreamClient>> greedy;
  Status refused;
  for (size_t i = 0; i < options.max_streams && refused.ok(); ++i) {
    greedy.push_back(std::make_unique<StreamClient>(*greedy_stub));
    StreamClient& client = *greedy.back();
    if (!client.Ask(request, &response)) refused = client.stream().Finish();
  }
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted)
      << refused.ToString();
  EXPECT_THAT(refused.message(),
              HasSubstr("2 reflection streams are open on this connection"));
  EXPECT_THAT(refused.message(), HasSubstr("max_streams_per_connection"));
  EXPECT_EQ(reflection.open_streams(), 2u);

  auto polite_stub = server.NewStub();
  StreamClient polite(*polite_stub);
  ASSERT_TRUE(polite.Ask(request, &response));
  EXPECT_TRUE(response.has_list_services_response());
  EXPECT_EQ(reflection.open_streams(), 3u);
}

TEST(ReflectionServiceTest, AResponseOverTheSendLimitFailsTheCall) {
  ReflectionService reflection;
  ServerOptions options;
  options.connection.max_send_message_size = 1024;
  ReflectionServer server(reflection, options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);

  ServerReflectionRequest request;
  request.set_list_services("");
  ServerReflectionResponse response;
  ASSERT_TRUE(client.Ask(request, &response));  // small enough
  // test.proto and its imports are several KiB.
  EXPECT_FALSE(
      client.Ask(SymbolRequest("grpc.testing.TestService"), &response));
  const Status status = client.stream().Finish();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_TRUE(WaitFor([&] { return reflection.open_streams() == 0; }));
}

TEST(ReflectionServiceTest, ACancelledStreamEnds) {
  ReflectionService reflection;
  ReflectionServer server(reflection);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  StreamClient client(*stub);

  ServerReflectionRequest request;
  request.set_list_services("");
  ServerReflectionResponse response;
  ASSERT_TRUE(client.Ask(request, &response));
  EXPECT_EQ(reflection.open_streams(), 1u);
  client.context().TryCancel();
  EXPECT_EQ(client.stream().Finish().code(), StatusCode::kCancelled);
  EXPECT_TRUE(WaitFor([&] { return reflection.open_streams() == 0; }));
}

// Counts the response messages the server sends, over every call.
class SentCounter final : public ServerInterceptor {
 public:
  void OnSendMessage(const ServerCallInfo&, size_t) override { ++sent_; }
  int sent() const { return sent_.load(); }

 private:
  std::atomic<int> sent_{0};
};

// Reflection streams never end by themselves: had the service not ended
// them, Shutdown, which has no deadline here, would wait for the clients'
// own deadlines (kHangTimeout), and the streams would end with another
// status. A stream waiting for its next request ends at once; one whose
// response is stuck behind flow control ends once the client has read it.
TEST(ReflectionServiceTest, ServerShutdownEndsOpenStreams) {
  ReflectionService reflection;
  auto counter = std::make_shared<SentCounter>();
  ServerOptions server_options;
  server_options.stream_write_buffer = 64;
  server_options.interceptors.push_back(counter);
  ReflectionServer server(reflection, server_options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto stub = server.NewStub();
  ChannelOptions small_window;
  small_window.connection.initial_stream_window = 1024;
  auto slow_stub = server.NewStub(small_window);

  ServerReflectionRequest list;
  list.set_list_services("");
  ServerReflectionResponse response;
  StreamClient idle(*stub);
  ASSERT_TRUE(idle.Ask(list, &response));  // then waits for a request
  ASSERT_EQ(counter->sent(), 1);

  // Two requests, nothing read: the first answer, held unread, fills the
  // client's 1 KiB window, so the second answer's write stays outstanding.
  StreamClient slow(*slow_stub);
  const ServerReflectionRequest symbol =
      SymbolRequest("grpc.testing.TestService");
  ASSERT_TRUE(slow.stream().Write(symbol));
  ASSERT_TRUE(slow.stream().Write(symbol));
  ASSERT_TRUE(WaitFor([&] { return counter->sent() == 3; }));

  Notification returned;
  std::thread shutdown([&] {
    server.Shutdown(absl::InfiniteFuture());
    returned.Notify();
  });
  EXPECT_FALSE(idle.stream().Read(&response));
  const Status idle_status = idle.stream().Finish();
  EXPECT_EQ(idle_status.code(), StatusCode::kUnavailable)
      << idle_status.ToString();
  EXPECT_THAT(idle_status.message(), HasSubstr("shutting down"));

  // The idle stream ended, so the service has closed both: the slow one
  // gets both answers, then the same status.
  for (int i = 0; i < 2; ++i) {
    if (!slow.stream().Read(&response)) {
      ADD_FAILURE() << "answer " << i << " missing";
      break;
    }
    EXPECT_THAT(FileNames(response), Contains(kTestProto));
    EXPECT_GT(response.ByteSizeLong(), 2048u);  // more than the window
  }
  EXPECT_FALSE(slow.stream().Read(&response));
  const Status slow_status = slow.stream().Finish();
  EXPECT_EQ(slow_status.code(), StatusCode::kUnavailable)
      << slow_status.ToString();
  EXPECT_THAT(slow_status.message(), HasSubstr("shutting down"));

  // Without a deadline, Shutdown returns only because both streams ended.
  // The guard catches a Shutdown that never returns.
  if (!returned.WaitForNotificationWithTimeout(kHangTimeout)) {
    std::fprintf(stderr, "Server::Shutdown hangs\n");
    std::abort();
  }
  shutdown.join();
  EXPECT_EQ(reflection.open_streams(), 0u);
}

}  // namespace
}  // namespace h2rpc
