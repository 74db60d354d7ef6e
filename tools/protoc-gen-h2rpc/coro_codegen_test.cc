// The generated coroutine classes end to end (C++20): a server built from
// the generated CoroService bases over loopback, called through the
// generated CoroStub from coroutines (coro::SyncWait), one call of each kind;
// method names that are C++ keywords or generated names, a service outside
// any package, a service without methods, and the UNIMPLEMENTED defaults.
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/coro/client.h"
#include "rpc/coro/server.h"
#include "rpc/coro/task.h"
#include "rpc/server_context.h"
#include "rpc/status.h"
#include "test/util/stub_server.h"
#include "tools/protoc-gen-h2rpc/testdata/common.h2rpc_coro.pb.h"
#include "tools/protoc-gen-h2rpc/testdata/no_package.h2rpc_coro.pb.h"
#include "tools/protoc-gen-h2rpc/testdata/services.h2rpc_coro.pb.h"

namespace h2rpc_test::codegen::v1 {
namespace {

namespace coro = ::h2rpc::coro;
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

static_assert(std::is_same_v<decltype(&Echo::CoroStub::Unary),
                             coro::UnaryCall (Echo::CoroStub::*)(
                                 ClientContext*, const Payload&, Payload*)>);
static_assert(std::is_same_v<decltype(&Echo::CoroStub::ServerStream),
                             void (Echo::CoroStub::*)(
                                 coro::ServerStreamingCall<Inner, Payload>*,
                                 const Inner&)>);
static_assert(std::is_same_v<decltype(&Echo::CoroStub::ClientStream),
                             void (Echo::CoroStub::*)(
                                 coro::ClientStreamingCall<Payload, Inner>*)>);
static_assert(std::is_same_v<decltype(&Echo::CoroStub::Bidi),
                             void (Echo::CoroStub::*)(
                                 coro::BidiStreamingCall<Inner, Inner>*)>);
static_assert(std::is_same_v<decltype(&Echo::CoroService::Unary),
                             coro::Task<Status> (Echo::CoroService::*)(
                                 ServerContext*, const Payload*, Payload*)>);
static_assert(std::is_same_v<decltype(&Echo::CoroService::ServerStream),
                             coro::Task<Status> (Echo::CoroService::*)(
                                 ServerContext*, const Inner*,
                                 coro::ServerWriter<Payload>*)>);
static_assert(
    std::is_same_v<decltype(&Echo::CoroService::ClientStream),
                   coro::Task<Status> (Echo::CoroService::*)(
                       ServerContext*, coro::ServerReader<Payload>*, Inner*)>);
static_assert(std::is_same_v<decltype(&Echo::CoroService::Bidi),
                             coro::Task<Status> (Echo::CoroService::*)(
                                 ServerContext*,
                                 coro::ServerReaderWriter<Inner, Inner>*)>);
static_assert(!std::is_copy_constructible_v<Echo::CoroService>);
static_assert(std::has_virtual_destructor_v<Echo::CoroService>);
static_assert(std::is_same_v<decltype(&::Global::CoroStub::Ping),
                             coro::UnaryCall (::Global::CoroStub::*)(
                                 ClientContext*, const Payload&, Payload*)>);
// Escaped names: a keyword, and the coroutine classes' own names.
static_assert(std::is_same_v<decltype(&Keywords::CoroService::delete_),
                             coro::Task<Status> (Keywords::CoroService::*)(
                                 ServerContext*, const Inner*, Inner*)>);
static_assert(std::is_same_v<decltype(&Keywords::CoroStub::CoroStub_),
                             coro::UnaryCall (Keywords::CoroStub::*)(
                                 ClientContext*, const Inner&, Inner*)>);

// ---------------------------------------------------------------------------
// Servers.

std::string MethodOf(ServerContext* context) {
  return std::string(context->method());
}

class CoroEcho final : public Echo::CoroService {
 public:
  coro::Task<Status> Unary(ServerContext* context, const Payload* request,
                           Payload* response) override {
    response->set_body(request->body());
    response->mutable_meta()->set_method(MethodOf(context));
    co_return Status();
  }

  coro::Task<Status> ServerStream(
      ServerContext* context, const Inner* request,
      coro::ServerWriter<Payload>* writer) override {
    Payload payload;
    payload.mutable_meta()->set_method(MethodOf(context));
    for (int i = 0; i < request->count(); ++i) {
      payload.set_body(request->text() + std::to_string(i));
      const bool written = co_await writer->Write(payload);
      if (!written) {
        co_return Status(StatusCode::kCancelled, "write failed");
      }
    }
    co_return Status();
  }

  coro::Task<Status> ClientStream(ServerContext* context,
                                  coro::ServerReader<Payload>* reader,
                                  Inner* response) override {
    Payload payload;
    while (true) {
      const bool read = co_await reader->Read(&payload);
      if (!read) break;
      response->mutable_text()->append(payload.body());
      response->set_count(response->count() + 1);
    }
    response->set_method(MethodOf(context));
    co_return Status();
  }

  coro::Task<Status> Bidi(
      ServerContext* context,
      coro::ServerReaderWriter<Inner, Inner>* stream) override {
    Inner message;
    while (true) {
      const bool read = co_await stream->Read(&message);
      if (!read) break;
      message.set_count(message.count() + 1);
      message.set_method(MethodOf(context));
      const bool written = co_await stream->Write(message);
      if (!written) break;
    }
    co_return Status();
  }
};

// Answers with its own path in `method`, and the request's text.
Status Answer(ServerContext* context, const Inner& request, Inner* response) {
  response->set_text(request.text());
  response->set_method(MethodOf(context));
  return Status();
}

// Overrides three methods only: the others answer UNIMPLEMENTED.
class CoroKeywords final : public Keywords::CoroService {
 public:
  coro::Task<Status> delete_(ServerContext* context, const Inner* request,
                             Inner* response) override {
    co_return Answer(context, *request, response);
  }
  coro::Task<Status> CoroService_(ServerContext* context, const Inner* request,
                                  Inner* response) override {
    co_return Answer(context, *request, response);
  }
  coro::Task<Status> switch_(
      ServerContext* context,
      coro::ServerReaderWriter<Inner, Inner>* stream) override {
    Inner request;
    while (true) {
      const bool read = co_await stream->Read(&request);
      if (!read) break;
      Inner response;
      const Status answered = Answer(context, request, &response);
      if (!answered.ok()) co_return answered;
      const bool written = co_await stream->Write(response);
      if (!written) break;
    }
    co_return Status();
  }
};

class CoroGlobal final : public ::Global::CoroService {
 public:
  coro::Task<Status> Ping(ServerContext* context, const Payload* request,
                          Payload* response) override {
    response->set_body(request->body());
    response->mutable_meta()->set_method(MethodOf(context));
    co_return Status();
  }
};

// ---------------------------------------------------------------------------
// Client coroutines, one per kind of call, run with coro::SyncWait. They
// report through their results and out-parameters (gtest's ASSERT_* cannot
// be used in a coroutine).

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

coro::Task<Status> CallUnary(Echo::CoroStub& stub, std::string body,
                             Payload* response) {
  ClientContext context;
  context.set_timeout(kTimeout);
  // The request is a temporary of the co_await's own expression.
  co_return co_await stub.Unary(&context, MakePayload(body), response);
}

// Reads every payload, as "body@method".
coro::Task<Status> ReadAll(Echo::CoroStub& stub, Inner request,
                           std::vector<std::string>* seen) {
  coro::ServerStreamingCall<Inner, Payload> call;
  call.context().set_timeout(kTimeout);
  stub.ServerStream(&call, request);
  Payload payload;
  while (true) {
    const bool read = co_await call.Read(&payload);
    if (!read) break;
    seen->push_back(payload.body() + "@" + payload.meta().method());
  }
  co_return co_await call.Finish();
}

coro::Task<Status> WriteAll(Echo::CoroStub& stub,
                            std::vector<std::string> bodies, Inner* response) {
  coro::ClientStreamingCall<Payload, Inner> call;
  call.context().set_timeout(kTimeout);
  stub.ClientStream(&call);
  for (const std::string& body : bodies) {
    // A write fails only once the call is over; Finish says why.
    const bool written = co_await call.Write(MakePayload(body));
    if (!written) break;
  }
  const Status status = co_await call.Finish();
  *response = call.response();
  co_return status;
}

// Writes one message per count and reads the reply to each, then
// half-closes and reads to the end (`more` tells whether anything came).
coro::Task<Status> Exchange(Echo::CoroStub& stub, std::vector<int> counts,
                            std::vector<std::string>* replies, bool* more) {
  coro::BidiStreamingCall<Inner, Inner> call;
  call.context().set_timeout(kTimeout);
  stub.Bidi(&call);
  Inner reply;
  for (int count : counts) {
    const bool written = co_await call.Write(MakeInner("", count));
    if (!written) break;
    const bool read = co_await call.Read(&reply);
    if (!read) break;
    replies->push_back(std::to_string(reply.count()) + "@" + reply.method());
  }
  co_await call.WritesDone();
  *more = co_await call.Read(&reply);
  co_return co_await call.Finish();
}

// ---------------------------------------------------------------------------
// Every kind of call.

// A server with CoroEcho, CoroKeywords, CoroGlobal and Empty's CoroService,
// and a channel to it.
class CoroCodegenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h2rpc::Server::Builder& builder = server_.builder();
    // AddTo returns the builder.
    EXPECT_EQ(&echo_.AddTo(builder), &builder);
    keywords_.AddTo(builder);
    global_.AddTo(builder);
    empty_.AddTo(builder);
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = server_.NewChannel();
  }

  // The services outlive the server (members are destroyed in reverse).
  CoroEcho echo_;
  CoroKeywords keywords_;
  CoroGlobal global_;
  Empty::CoroService empty_;
  h2rpc::testing::StubServer server_;
  std::shared_ptr<h2rpc::Channel> channel_;
};

TEST_F(CoroCodegenTest, Unary) {
  Echo::CoroStub stub(channel_);
  Payload response;
  const Status status = coro::SyncWait(CallUnary(stub, "hi", &response));
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.body(), "hi");
  EXPECT_EQ(response.meta().method(), Echo::kUnaryPath);
}

// The stub holds the channel: it still works once the test has let go.
TEST_F(CoroCodegenTest, StubOwnsTheChannel) {
  Echo::CoroStub stub(channel_);
  channel_.reset();
  Payload response;
  const Status status = coro::SyncWait(CallUnary(stub, "owned", &response));
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.body(), "owned");
}

TEST_F(CoroCodegenTest, ServerStreaming) {
  Echo::CoroStub stub(channel_);
  std::vector<std::string> seen;
  const Status status = coro::SyncWait(ReadAll(stub, MakeInner("x", 3), &seen));
  ASSERT_TRUE(status.ok()) << status.ToString();
  const std::string at = std::string("@") + Echo::kServerStreamPath;
  EXPECT_THAT(seen, ElementsAre("x0" + at, "x1" + at, "x2" + at));
}

TEST_F(CoroCodegenTest, ClientStreaming) {
  Echo::CoroStub stub(channel_);
  Inner response;
  const Status status =
      coro::SyncWait(WriteAll(stub, {"a", "b", "c"}, &response));
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.text(), "abc");
  EXPECT_EQ(response.count(), 3);
  EXPECT_EQ(response.method(), Echo::kClientStreamPath);
}

TEST_F(CoroCodegenTest, BidiStreaming) {
  Echo::CoroStub stub(channel_);
  std::vector<std::string> replies;
  bool more = true;
  const Status status =
      coro::SyncWait(Exchange(stub, {1, 10, 100}, &replies, &more));
  ASSERT_TRUE(status.ok()) << status.ToString();
  const std::string at = std::string("@") + Echo::kBidiPath;
  EXPECT_THAT(replies, ElementsAre("2" + at, "11" + at, "101" + at));
  EXPECT_FALSE(more);
}

// One coroutine making a call of each kind in turn with one stub: after its
// first call it runs on the channel's loop thread, so the later calls start
// from there.
TEST_F(CoroCodegenTest, OneCoroutineCallsEveryKindInTurn) {
  Echo::CoroStub stub(channel_);
  auto all = [&]() -> coro::Task<std::vector<std::string>> {
    Payload unary;
    std::vector<std::string> streamed;
    Inner joined;
    std::vector<std::string> replies;
    bool more = true;
    std::vector<std::string> outcome;
    Status status = co_await CallUnary(stub, "u", &unary);
    outcome.push_back(status.ToString());
    status = co_await ReadAll(stub, MakeInner("s", 2), &streamed);
    outcome.push_back(status.ToString());
    // (Named: GCC 12 rejects a braced list as a temporary of a co_await's
    // expression.)
    std::vector<std::string> bodies = {"c", "d"};
    status = co_await WriteAll(stub, std::move(bodies), &joined);
    outcome.push_back(status.ToString());
    std::vector<int> counts = {7};
    status = co_await Exchange(stub, std::move(counts), &replies, &more);
    outcome.push_back(status.ToString());
    outcome.push_back(unary.body());
    outcome.push_back(std::to_string(streamed.size()));
    outcome.push_back(joined.text());
    outcome.push_back(std::to_string(replies.size()));
    co_return outcome;
  };
  const std::string ok = Status().ToString();
  EXPECT_THAT(coro::SyncWait(all()),
              ElementsAre(ok, ok, ok, ok, "u", "2", "cd", "1"));
}

// ---------------------------------------------------------------------------
// Escaped names, other services.

TEST_F(CoroCodegenTest, KeywordMethodsReachTheirPaths) {
  Keywords::CoroStub stub(channel_);
  auto calls = [&]() -> coro::Task<std::vector<std::string>> {
    std::vector<std::string> methods;
    {
      ClientContext context;
      context.set_timeout(kTimeout);
      Inner response;
      const Status status =
          co_await stub.delete_(&context, MakeInner("del", 0), &response);
      methods.push_back(status.ok() ? response.text() + "@" + response.method()
                                    : status.ToString());
    }
    {
      ClientContext context;
      context.set_timeout(kTimeout);
      Inner response;
      const Status status =
          co_await stub.CoroService_(&context, MakeInner("cs", 0), &response);
      methods.push_back(status.ok() ? response.text() + "@" + response.method()
                                    : status.ToString());
    }
    {
      coro::BidiStreamingCall<Inner, Inner> call;
      call.context().set_timeout(kTimeout);
      stub.switch_(&call);
      Inner response;
      bool read = false;
      const bool written = co_await call.Write(MakeInner("sw", 0));
      if (written) {
        read = co_await call.Read(&response);
      }
      methods.push_back(read ? response.text() + "@" + response.method()
                             : "no reply");
      co_await call.WritesDone();
      const Status status = co_await call.Finish();
      methods.push_back(status.ToString());
    }
    co_return methods;
  };
  EXPECT_THAT(coro::SyncWait(calls()),
              ElementsAre("del@/h2rpc_test.codegen.v1.Keywords/delete",
                          "cs@/h2rpc_test.codegen.v1.Keywords/CoroService",
                          "sw@/h2rpc_test.codegen.v1.Keywords/switch",
                          Status().ToString()));
}

TEST_F(CoroCodegenTest, ServiceWithoutAPackage) {
  ::Global::CoroStub stub(channel_);
  auto call = [&](Payload* response) -> coro::Task<Status> {
    ClientContext context;
    context.set_timeout(kTimeout);
    co_return co_await stub.Ping(&context, MakePayload("p"), response);
  };
  Payload response;
  const Status status = coro::SyncWait(call(&response));
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.body(), "p");
  EXPECT_EQ(response.meta().method(), "/Global/Ping");
}

TEST_F(CoroCodegenTest, ServiceWithoutMethods) {
  // Nothing to call; the stub can still be made (and AddTo registered
  // nothing, so the server started).
  Empty::CoroStub stub(channel_);
  EXPECT_STREQ(Empty::kServiceName, "h2rpc_test.codegen.v1.Empty");
}

// ---------------------------------------------------------------------------
// Defaults.

void ExpectUnimplemented(const Status& status, const char* path) {
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << status.ToString();
  EXPECT_EQ(status.message(), std::string(path) + " is not implemented");
}

// Keywords methods CoroKeywords does not override, of every kind.
TEST_F(CoroCodegenTest, MethodsNotOverriddenAnswerUnimplemented) {
  Keywords::CoroStub stub(channel_);
  using UnaryMethod = coro::UnaryCall (Keywords::CoroStub::*)(
      ClientContext*, const Inner&, Inner*);
  const struct {
    UnaryMethod method;
    const char* path;
  } unary_methods[] = {
      {&Keywords::CoroStub::AddTo_, Keywords::kAddToPath},
      {&Keywords::CoroStub::Stub_, Keywords::kStubPath},
      {&Keywords::CoroStub::CoroStub_, Keywords::kCoroStubPath},
      {&Keywords::CoroStub::channel__, Keywords::kchannel_Path},
      {&Keywords::CoroStub::context, Keywords::kcontextPath},
      {&Keywords::CoroStub::done, Keywords::kdonePath},
  };
  for (const auto& unary : unary_methods) {
    auto call = [&]() -> coro::Task<Status> {
      ClientContext context;
      context.set_timeout(kTimeout);
      Inner response;
      co_return co_await(stub.*unary.method)(&context, MakeInner("u", 0),
                                             &response);
    };
    ExpectUnimplemented(coro::SyncWait(call()), unary.path);
  }

  auto server_streaming = [&](bool* read) -> coro::Task<Status> {
    coro::ServerStreamingCall<Inner, Inner> call;
    call.context().set_timeout(kTimeout);
    stub.for_(&call, MakeInner("f", 0));
    Inner response;
    *read = co_await call.Read(&response);
    co_return co_await call.Finish();
  };
  bool read = true;
  ExpectUnimplemented(coro::SyncWait(server_streaming(&read)),
                      Keywords::kforPath);
  EXPECT_FALSE(read);

  auto client_streaming = [&]() -> coro::Task<Status> {
    coro::ClientStreamingCall<Inner, Inner> call;
    call.context().set_timeout(kTimeout);
    stub.while_(&call);
    co_await call.Write(MakeInner("w", 0));  // may fail: the call may be over
    co_return co_await call.Finish();
  };
  ExpectUnimplemented(coro::SyncWait(client_streaming()), Keywords::kwhilePath);
}

// A server with the Echo base class itself: nothing overridden.
class CoroUnimplementedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_.AddTo(server_.builder());
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = server_.NewChannel();
  }

  Echo::CoroService service_;
  h2rpc::testing::StubServer server_;
  std::shared_ptr<h2rpc::Channel> channel_;
};

TEST_F(CoroUnimplementedTest, EveryKindAnswersUnimplemented) {
  Echo::CoroStub stub(channel_);
  {
    Payload response;
    ExpectUnimplemented(coro::SyncWait(CallUnary(stub, "u", &response)),
                        Echo::kUnaryPath);
  }
  {
    std::vector<std::string> seen;
    ExpectUnimplemented(coro::SyncWait(ReadAll(stub, MakeInner("s", 2), &seen)),
                        Echo::kServerStreamPath);
    EXPECT_TRUE(seen.empty());
  }
  {
    Inner response;
    ExpectUnimplemented(coro::SyncWait(WriteAll(stub, {"c"}, &response)),
                        Echo::kClientStreamPath);
  }
  {
    std::vector<std::string> replies;
    bool more = true;
    ExpectUnimplemented(coro::SyncWait(Exchange(stub, {1}, &replies, &more)),
                        Echo::kBidiPath);
    EXPECT_TRUE(replies.empty());
    EXPECT_FALSE(more);
  }
}

}  // namespace
}  // namespace h2rpc_test::codegen::v1
