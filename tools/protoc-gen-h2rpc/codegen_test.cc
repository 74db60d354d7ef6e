// The generated code end to end: stubs against servers built from the
// generated Service (synchronous) and CallbackService bases over loopback,
// one call of each kind in each form (blocking and callback/reactor), method
// names that are C++ keywords, a service named like one, a service without
// methods, a service outside any package, and the UNIMPLEMENTED defaults.
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "tools/protoc-gen-h2rpc/testdata/common.h2rpc.pb.h"
#include "tools/protoc-gen-h2rpc/testdata/no_package.h2rpc.pb.h"
#include "tools/protoc-gen-h2rpc/testdata/services.h2rpc.pb.h"

namespace h2rpc_test::codegen::v1 {
namespace {

using ::h2rpc::ClientContext;
using ::h2rpc::ServerContext;
using ::h2rpc::Status;
using ::h2rpc::StatusCode;
using ::h2rpc_test::common::Payload;
using ::testing::ElementsAre;
using Inner = Outer::Inner;

constexpr absl::Duration kTimeout = absl::Seconds(10);

// ---------------------------------------------------------------------------
// What the generated declarations are (checked at compile time).

static_assert(std::is_same_v<decltype(&Echo::Stub::ServerStream),
                             std::unique_ptr<h2rpc::ClientReader<Payload>> (
                                 Echo::Stub::*)(ClientContext*, const Inner&)>);
static_assert(std::is_same_v<decltype(&Echo::Stub::ClientStream),
                             std::unique_ptr<h2rpc::ClientWriter<Payload>> (
                                 Echo::Stub::*)(ClientContext*, Inner*)>);
static_assert(std::is_same_v<decltype(&Echo::Service::Bidi),
                             Status (Echo::Service::*)(
                                 ServerContext*,
                                 h2rpc::ServerReaderWriter<Inner, Inner>*)>);
static_assert(
    std::is_same_v<decltype(&Echo::CallbackService::ClientStream),
                   h2rpc::ServerReadReactor<Payload>* (
                       Echo::CallbackService::*)(ServerContext*, Inner*)>);
static_assert(std::is_same_v<decltype(&::Global::Stub::Ping),
                             Status (::Global::Stub::*)(
                                 ClientContext*, const Payload&, Payload*)>);

TEST(GeneratedNamesTest, PathsComeFromTheDescriptors) {
  EXPECT_STREQ(Echo::kServiceName, "h2rpc_test.codegen.v1.Echo");
  EXPECT_STREQ(Echo::kUnaryPath, "/h2rpc_test.codegen.v1.Echo/Unary");
  EXPECT_STREQ(Echo::kBidiPath, "/h2rpc_test.codegen.v1.Echo/Bidi");
  EXPECT_STREQ(Keywords::kdeletePath, "/h2rpc_test.codegen.v1.Keywords/delete");
  EXPECT_STREQ(Keywords::kStubPath, "/h2rpc_test.codegen.v1.Keywords/Stub");
  EXPECT_STREQ(Keywords::kCoroStubPath,
               "/h2rpc_test.codegen.v1.Keywords/CoroStub");
  EXPECT_STREQ(operator_::kServiceName, "h2rpc_test.codegen.v1.operator");
  EXPECT_STREQ(operator_::knewPath, "/h2rpc_test.codegen.v1.operator/new");
  EXPECT_STREQ(Empty::kServiceName, "h2rpc_test.codegen.v1.Empty");
  EXPECT_STREQ(::Global::kPingPath, "/Global/Ping");
}

// ---------------------------------------------------------------------------
// Servers.

// The status a callback or OnDone delivered, awaited on the test's thread.
class Outcome {
 public:
  void Set(const Status& status) {
    status_ = status;
    done_.Notify();
  }
  Status Wait() {
    if (!done_.WaitForNotificationWithTimeout(absl::Seconds(30))) {
      return Status(StatusCode::kDeadlineExceeded, "the call never ended");
    }
    return status_;
  }

 private:
  h2rpc::testing::Notification done_;
  Status status_;
};

std::string MethodOf(ServerContext* context) {
  return std::string(context->method());
}

class SyncEcho final : public Echo::Service {
 public:
  Status Unary(ServerContext* context, const Payload* request,
               Payload* response) override {
    response->set_body(request->body());
    response->mutable_meta()->set_method(MethodOf(context));
    return Status();
  }

  Status ServerStream(ServerContext* context, const Inner* request,
                      h2rpc::ServerWriter<Payload>* writer) override {
    Payload payload;
    payload.mutable_meta()->set_method(MethodOf(context));
    for (int i = 0; i < request->count(); ++i) {
      payload.set_body(request->text() + std::to_string(i));
      if (!writer->Write(payload)) break;
    }
    return Status();
  }

  Status ClientStream(ServerContext* context,
                      h2rpc::ServerReader<Payload>* reader,
                      Inner* response) override {
    Payload payload;
    while (reader->Read(&payload)) {
      response->mutable_text()->append(payload.body());
      response->set_count(response->count() + 1);
    }
    response->set_method(MethodOf(context));
    return Status();
  }

  Status Bidi(ServerContext* context,
              h2rpc::ServerReaderWriter<Inner, Inner>* stream) override {
    Inner message;
    while (stream->Read(&message)) {
      message.set_count(message.count() + 1);
      message.set_method(MethodOf(context));
      if (!stream->Write(message)) break;
    }
    return Status();
  }
};

// Server streaming: writes `count` payloads, then finishes.
class CountingWriter final : public h2rpc::ServerWriteReactor<Payload> {
 public:
  CountingWriter(ServerContext* context, const Inner& request)
      : text_(request.text()), count_(request.count()) {
    payload_.mutable_meta()->set_method(MethodOf(context));
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(StatusCode::kCancelled, "write failed"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (sent_ == count_) {
      Finish(Status());
      return;
    }
    payload_.set_body(text_ + std::to_string(sent_++));
    StartWrite(&payload_);
  }

  const std::string text_;
  const int count_;
  int sent_ = 0;
  Payload payload_;
};

// Client streaming: joins the bodies read into the response.
class JoiningReader final : public h2rpc::ServerReadReactor<Payload> {
 public:
  JoiningReader(ServerContext* context, Inner* response) : response_(response) {
    response_->set_method(MethodOf(context));
    StartRead(&payload_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(Status());  // sends the response
      return;
    }
    response_->mutable_text()->append(payload_.body());
    response_->set_count(response_->count() + 1);
    StartRead(&payload_);
  }
  void OnDone() override { delete this; }

 private:
  Inner* const response_;
  Payload payload_;
};

// Bidi: answers each message with its count plus one.
class IncrementingBidi final : public h2rpc::ServerBidiReactor<Inner, Inner> {
 public:
  explicit IncrementingBidi(ServerContext* context)
      : method_(MethodOf(context)) {
    StartRead(&message_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(Status());
      return;
    }
    message_.set_count(message_.count() + 1);
    message_.set_method(method_);
    StartWrite(&message_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(StatusCode::kCancelled, "write failed"));
      return;
    }
    StartRead(&message_);
  }
  void OnDone() override { delete this; }

 private:
  const std::string method_;
  Inner message_;
};

class CallbackEcho final : public Echo::CallbackService {
 public:
  void Unary(ServerContext* context, const Payload* request, Payload* response,
             h2rpc::UnaryDone done) override {
    response->set_body(request->body());
    response->mutable_meta()->set_method(MethodOf(context));
    done(Status());
  }
  h2rpc::ServerWriteReactor<Payload>* ServerStream(
      ServerContext* context, const Inner* request) override {
    return new CountingWriter(context, *request);
  }
  h2rpc::ServerReadReactor<Payload>* ClientStream(ServerContext* context,
                                                  Inner* response) override {
    return new JoiningReader(context, response);
  }
  h2rpc::ServerBidiReactor<Inner, Inner>* Bidi(
      ServerContext* context) override {
    return new IncrementingBidi(context);
  }
};

// Every Keywords method answers with its own path in `method`, and the
// request's text.
Status Answer(ServerContext* context, const Inner& request, Inner* response) {
  response->set_text(request.text());
  response->set_method(MethodOf(context));
  return Status();
}

class SyncKeywords final : public Keywords::Service {
 public:
  Status delete_(ServerContext* context, const Inner* request,
                 Inner* response) override {
    return Answer(context, *request, response);
  }
  Status for_(ServerContext* context, const Inner* request,
              h2rpc::ServerWriter<Inner>* writer) override {
    Inner response;
    const Status answered = Answer(context, *request, &response);
    if (!answered.ok()) return answered;
    writer->Write(response);
    return Status();
  }
  Status while_(ServerContext* context, h2rpc::ServerReader<Inner>* reader,
                Inner* response) override {
    Inner request;
    while (reader->Read(&request)) {
    }
    return Answer(context, request, response);
  }
  Status switch_(ServerContext* context,
                 h2rpc::ServerReaderWriter<Inner, Inner>* stream) override {
    Inner request;
    while (stream->Read(&request)) {
      Inner response;
      const Status answered = Answer(context, request, &response);
      if (!answered.ok()) return answered;
      if (!stream->Write(response)) break;
    }
    return Status();
  }
  Status AddTo_(ServerContext* context, const Inner* request,
                Inner* response) override {
    return Answer(context, *request, response);
  }
  Status Stub_(ServerContext* context, const Inner* request,
               Inner* response) override {
    return Answer(context, *request, response);
  }
  Status CoroStub_(ServerContext* context, const Inner* request,
                   Inner* response) override {
    return Answer(context, *request, response);
  }
  Status CoroService_(ServerContext* context, const Inner* request,
                      Inner* response) override {
    return Answer(context, *request, response);
  }
  Status channel__(ServerContext* context, const Inner* request,
                   Inner* response) override {
    return Answer(context, *request, response);
  }
  // The method is named like its first parameter.
  Status context(ServerContext* context, const Inner* request,
                 Inner* response) override {
    return Answer(context, *request, response);
  }
  Status done(ServerContext* context, const Inner* request,
              Inner* response) override {
    return Answer(context, *request, response);
  }
};

// Overrides two methods only: the others answer UNIMPLEMENTED.
class CallbackKeywords final : public Keywords::CallbackService {
 public:
  void delete_(ServerContext* context, const Inner* request, Inner* response,
               h2rpc::UnaryDone done) override {
    done(Answer(context, *request, response));
  }
  h2rpc::ServerBidiReactor<Inner, Inner>* switch_(
      ServerContext* context) override {
    return new IncrementingBidi(context);
  }
};

class SyncOperator final : public operator_::Service {
 public:
  Status new_(ServerContext* context, const Inner* request,
              Inner* response) override {
    return Answer(context, *request, response);
  }
};

class SyncGlobal final : public ::Global::Service {
 public:
  Status Ping(ServerContext* context, const Payload* request,
              Payload* response) override {
    response->set_body(request->body());
    response->mutable_meta()->set_method(MethodOf(context));
    return Status();
  }
};

enum class Flavour { kSync, kCallback };

std::string FlavourName(const ::testing::TestParamInfo<Flavour>& info) {
  return info.param == Flavour::kSync ? "Sync" : "Callback";
}

// A server with the Echo, Keywords and Empty services in the flavour of the
// test's parameter (and operator and Global, synchronous), and a channel.
class CodegenTest : public ::testing::TestWithParam<Flavour> {
 protected:
  void SetUp() override {
    h2rpc::Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_);
    if (GetParam() == Flavour::kSync) {
      sync_echo_.AddTo(builder);
      sync_keywords_.AddTo(builder);
      sync_empty_.AddTo(builder);
    } else {
      callback_echo_.AddTo(builder);
      callback_keywords_.AddTo(builder);
      callback_empty_.AddTo(builder);
    }
    sync_operator_.AddTo(builder);
    sync_global_.AddTo(builder);
    Status status;
    server_ = builder.BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
    channel_ = h2rpc::CreateChannel("127.0.0.1:" + std::to_string(port_));
    context_.set_timeout(kTimeout);
  }

  // The services outlive the server (members are destroyed in reverse).
  SyncEcho sync_echo_;
  CallbackEcho callback_echo_;
  SyncKeywords sync_keywords_;
  CallbackKeywords callback_keywords_;
  Empty::Service sync_empty_;
  Empty::CallbackService callback_empty_;
  SyncOperator sync_operator_;
  SyncGlobal sync_global_;
  int port_ = 0;
  std::unique_ptr<h2rpc::Server> server_;
  std::shared_ptr<h2rpc::Channel> channel_;
  ClientContext context_;  // for the test's call
};

INSTANTIATE_TEST_SUITE_P(Flavours, CodegenTest,
                         ::testing::Values(Flavour::kSync, Flavour::kCallback),
                         FlavourName);

Payload MakePayload(const std::string& body) {
  Payload payload;
  payload.set_body(body);
  return payload;
}

Inner MakeInner(const std::string& text, int count) {
  Inner inner;
  inner.set_text(text);
  inner.set_count(count);
  return inner;
}

// ---------------------------------------------------------------------------
// Unary.

TEST_P(CodegenTest, UnaryBlocking) {
  Echo::Stub stub(channel_);
  Payload response;
  const Status status = stub.Unary(&context_, MakePayload("hi"), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.body(), "hi");
  EXPECT_EQ(response.meta().method(), Echo::kUnaryPath);
}

// The stub holds the channel: it still works once the test has let go.
TEST_P(CodegenTest, StubOwnsTheChannel) {
  Echo::Stub stub(channel_);
  channel_.reset();
  Payload response;
  const Status status = stub.Unary(&context_, MakePayload("owned"), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.body(), "owned");
}

TEST_P(CodegenTest, UnaryCallback) {
  Echo::Stub stub(channel_);
  Payload response;
  Outcome outcome;
  stub.AsyncUnary(&context_, MakePayload("async"), &response,
                  [&outcome](const Status& status) { outcome.Set(status); });
  const Status status = outcome.Wait();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.body(), "async");
  EXPECT_EQ(response.meta().method(), Echo::kUnaryPath);
}

// ---------------------------------------------------------------------------
// Server streaming.

TEST_P(CodegenTest, ServerStreamingBlocking) {
  Echo::Stub stub(channel_);
  std::unique_ptr<h2rpc::ClientReader<Payload>> reader =
      stub.ServerStream(&context_, MakeInner("x", 3));
  std::vector<std::string> bodies;
  Payload payload;
  while (reader->Read(&payload)) {
    bodies.push_back(payload.body());
    EXPECT_EQ(payload.meta().method(), Echo::kServerStreamPath);
  }
  const Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(bodies, ElementsAre("x0", "x1", "x2"));
}

// Reads every payload of a server-streaming call.
class CollectingReader final : public h2rpc::ClientReadReactor<Payload> {
 public:
  void Start() {
    StartRead(&payload_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    bodies.push_back(payload_.body());
    StartRead(&payload_);
  }
  void OnDone(const Status& status) override { outcome.Set(status); }

  std::vector<std::string> bodies;
  Outcome outcome;

 private:
  Payload payload_;
};

TEST_P(CodegenTest, ServerStreamingReactor) {
  Echo::Stub stub(channel_);
  CollectingReader reader;
  stub.AsyncServerStream(&context_, MakeInner("y", 2), &reader);
  reader.Start();
  const Status status = reader.outcome.Wait();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(reader.bodies, ElementsAre("y0", "y1"));
}

// ---------------------------------------------------------------------------
// Client streaming.

TEST_P(CodegenTest, ClientStreamingBlocking) {
  Echo::Stub stub(channel_);
  Inner response;
  std::unique_ptr<h2rpc::ClientWriter<Payload>> writer =
      stub.ClientStream(&context_, &response);
  for (const char* body : {"a", "b", "c"}) {
    EXPECT_TRUE(writer->Write(MakePayload(body)));
  }
  const Status status = writer->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.text(), "abc");
  EXPECT_EQ(response.count(), 3);
  EXPECT_EQ(response.method(), Echo::kClientStreamPath);
}

// Writes `bodies`, then half-closes.
class SendingWriter final : public h2rpc::ClientWriteReactor<Payload> {
 public:
  explicit SendingWriter(std::vector<std::string> bodies)
      : bodies_(std::move(bodies)) {}
  void Start() {
    WriteNext();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) WriteNext();
  }
  void OnDone(const Status& status) override { outcome.Set(status); }

  Outcome outcome;

 private:
  void WriteNext() {
    if (next_ == bodies_.size()) {
      StartWritesDone();
      return;
    }
    payload_ = MakePayload(bodies_[next_++]);
    StartWrite(&payload_);
  }

  const std::vector<std::string> bodies_;
  size_t next_ = 0;
  Payload payload_;
};

TEST_P(CodegenTest, ClientStreamingReactor) {
  Echo::Stub stub(channel_);
  Inner response;
  SendingWriter writer({"d", "e"});
  stub.AsyncClientStream(&context_, &response, &writer);
  writer.Start();
  const Status status = writer.outcome.Wait();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.text(), "de");
  EXPECT_EQ(response.count(), 2);
  EXPECT_EQ(response.method(), Echo::kClientStreamPath);
}

// ---------------------------------------------------------------------------
// Bidi streaming.

TEST_P(CodegenTest, BidiBlocking) {
  Echo::Stub stub(channel_);
  std::unique_ptr<h2rpc::ClientReaderWriter<Inner, Inner>> stream =
      stub.Bidi(&context_);
  std::vector<int> counts;
  Inner reply;
  for (int count : {1, 10, 100}) {
    ASSERT_TRUE(stream->Write(MakeInner("", count)));
    ASSERT_TRUE(stream->Read(&reply));
    counts.push_back(reply.count());
    EXPECT_EQ(reply.method(), Echo::kBidiPath);
  }
  EXPECT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Read(&reply));
  const Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(counts, ElementsAre(2, 11, 101));
}

// Writes one message per count, then half-closes; reads every reply.
class BidiCollector final : public h2rpc::ClientBidiReactor<Inner, Inner> {
 public:
  explicit BidiCollector(std::vector<int> counts)
      : counts_(std::move(counts)) {}
  void Start() {
    WriteNext();
    StartRead(&in_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) WriteNext();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    replies.push_back(in_.count());
    StartRead(&in_);
  }
  void OnDone(const Status& status) override { outcome.Set(status); }

  std::vector<int> replies;
  Outcome outcome;

 private:
  void WriteNext() {
    if (next_ == counts_.size()) {
      StartWritesDone();
      return;
    }
    out_ = MakeInner("", counts_[next_++]);
    StartWrite(&out_);
  }

  const std::vector<int> counts_;
  size_t next_ = 0;
  Inner out_;
  Inner in_;
};

TEST_P(CodegenTest, BidiReactor) {
  Echo::Stub stub(channel_);
  BidiCollector bidi({5, 6, 7});
  stub.AsyncBidi(&context_, &bidi);
  bidi.Start();
  const Status status = bidi.outcome.Wait();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THAT(bidi.replies, ElementsAre(6, 7, 8));
}

// ---------------------------------------------------------------------------
// Escaped names.

TEST_P(CodegenTest, KeywordMethodsReachTheirPaths) {
  Keywords::Stub stub(channel_);
  Inner response;
  Status status = stub.delete_(&context_, MakeInner("del", 0), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.method(), "/h2rpc_test.codegen.v1.Keywords/delete");
  EXPECT_EQ(response.text(), "del");

  ClientContext async_context;
  async_context.set_timeout(kTimeout);
  Outcome outcome;
  stub.Asyncdelete(&async_context, MakeInner("adel", 0), &response,
                   [&outcome](const Status& s) { outcome.Set(s); });
  status = outcome.Wait();
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.text(), "adel");

  ClientContext bidi_context;
  bidi_context.set_timeout(kTimeout);
  auto stream = stub.switch_(&bidi_context);
  ASSERT_TRUE(stream->Write(MakeInner("sw", 0)));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.method(), "/h2rpc_test.codegen.v1.Keywords/switch");
  stream->WritesDone();
  status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// The synchronous service implements every method; the callback one only
// delete and switch, so the others answer UNIMPLEMENTED.
TEST_P(CodegenTest, KeywordMethodsOfEveryKind) {
  const bool implemented = GetParam() == Flavour::kSync;
  Keywords::Stub stub(channel_);
  using UnaryMethod =
      Status (Keywords::Stub::*)(ClientContext*, const Inner&, Inner*);
  const struct {
    UnaryMethod method;
    const char* path;
  } unary_methods[] = {
      {&Keywords::Stub::AddTo_, "/h2rpc_test.codegen.v1.Keywords/AddTo"},
      {&Keywords::Stub::Stub_, "/h2rpc_test.codegen.v1.Keywords/Stub"},
      {&Keywords::Stub::CoroStub_, "/h2rpc_test.codegen.v1.Keywords/CoroStub"},
      {&Keywords::Stub::CoroService_,
       "/h2rpc_test.codegen.v1.Keywords/CoroService"},
      {&Keywords::Stub::channel__, "/h2rpc_test.codegen.v1.Keywords/channel_"},
      {&Keywords::Stub::context, "/h2rpc_test.codegen.v1.Keywords/context"},
      {&Keywords::Stub::done, "/h2rpc_test.codegen.v1.Keywords/done"},
  };
  for (const auto& unary : unary_methods) {
    ClientContext context;
    context.set_timeout(kTimeout);
    Inner response;
    const Status status =
        (stub.*unary.method)(&context, MakeInner("u", 0), &response);
    if (implemented) {
      ASSERT_TRUE(status.ok()) << unary.path << ": " << status.ToString();
      EXPECT_EQ(response.method(), unary.path);
    } else {
      EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << unary.path;
      EXPECT_EQ(status.message(),
                std::string(unary.path) + " is not implemented");
    }
  }

  {
    ClientContext context;
    context.set_timeout(kTimeout);
    auto reader = stub.for_(&context, MakeInner("f", 0));
    Inner response;
    EXPECT_EQ(reader->Read(&response), implemented);
    const Status status = reader->Finish();
    if (implemented) {
      EXPECT_TRUE(status.ok()) << status.ToString();
      EXPECT_EQ(response.method(), Keywords::kforPath);
    } else {
      EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
      EXPECT_EQ(status.message(),
                "/h2rpc_test.codegen.v1.Keywords/for is not implemented");
    }
  }
  {
    ClientContext context;
    context.set_timeout(kTimeout);
    Inner response;
    auto writer = stub.while_(&context, &response);
    writer->Write(MakeInner("w", 0));
    const Status status = writer->Finish();
    if (implemented) {
      EXPECT_TRUE(status.ok()) << status.ToString();
      EXPECT_EQ(response.method(), Keywords::kwhilePath);
      EXPECT_EQ(response.text(), "w");
    } else {
      EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
    }
  }
}

TEST_P(CodegenTest, ServiceNamedLikeAKeyword) {
  operator_::Stub stub(channel_);
  Inner response;
  const Status status = stub.new_(&context_, MakeInner("n", 0), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.method(), "/h2rpc_test.codegen.v1.operator/new");
}

TEST_P(CodegenTest, ServiceWithoutAPackage) {
  ::Global::Stub stub(channel_);
  Payload response;
  const Status status = stub.Ping(&context_, MakePayload("p"), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.body(), "p");
  EXPECT_EQ(response.meta().method(), "/Global/Ping");
}

// ---------------------------------------------------------------------------
// Defaults.

// A server with the Echo base classes themselves: nothing overridden.
class UnimplementedTest : public ::testing::TestWithParam<Flavour> {
 protected:
  void SetUp() override {
    h2rpc::Server::Builder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_);
    if (GetParam() == Flavour::kSync) {
      sync_.AddTo(builder);
    } else {
      callback_.AddTo(builder);
    }
    Status status;
    server_ = builder.BuildAndStart(&status);
    ASSERT_NE(server_, nullptr) << status.ToString();
    channel_ = h2rpc::CreateChannel("127.0.0.1:" + std::to_string(port_));
  }

  static void ExpectUnimplemented(const Status& status, const char* path) {
    EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << status.ToString();
    EXPECT_EQ(status.message(), std::string(path) + " is not implemented");
  }

  Echo::Service sync_;
  Echo::CallbackService callback_;
  int port_ = 0;
  std::unique_ptr<h2rpc::Server> server_;
  std::shared_ptr<h2rpc::Channel> channel_;
};

INSTANTIATE_TEST_SUITE_P(Flavours, UnimplementedTest,
                         ::testing::Values(Flavour::kSync, Flavour::kCallback),
                         FlavourName);

TEST_P(UnimplementedTest, EveryKindAnswersUnimplemented) {
  Echo::Stub stub(channel_);
  {
    ClientContext context;
    context.set_timeout(kTimeout);
    Payload response;
    ExpectUnimplemented(stub.Unary(&context, MakePayload("u"), &response),
                        Echo::kUnaryPath);
  }
  {
    ClientContext context;
    context.set_timeout(kTimeout);
    auto reader = stub.ServerStream(&context, MakeInner("s", 2));
    Payload payload;
    EXPECT_FALSE(reader->Read(&payload));
    ExpectUnimplemented(reader->Finish(), Echo::kServerStreamPath);
  }
  {
    ClientContext context;
    context.set_timeout(kTimeout);
    Inner response;
    auto writer = stub.ClientStream(&context, &response);
    writer->Write(MakePayload("c"));  // may fail: the call may be over
    ExpectUnimplemented(writer->Finish(), Echo::kClientStreamPath);
  }
  {
    ClientContext context;
    context.set_timeout(kTimeout);
    auto stream = stub.Bidi(&context);
    Inner reply;
    EXPECT_FALSE(stream->Read(&reply));
    ExpectUnimplemented(stream->Finish(), Echo::kBidiPath);
  }
}

}  // namespace
}  // namespace h2rpc_test::codegen::v1
