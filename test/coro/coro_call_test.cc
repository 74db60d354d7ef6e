// The coroutine layer end to end (rpc/coro): coroutine clients calling
// coroutine handlers over real sockets for every call kind, with errors,
// metadata, deadlines, cancellation from either side, server shutdown with
// handlers suspended, and the misuse the calls report.
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/byte_buffer.h"
#include "rpc/channel.h"
#include "rpc/coro/client.h"
#include "rpc/coro/executor.h"
#include "rpc/coro/server.h"
#include "rpc/coro/task.h"
#include "rpc/internal/common/misuse.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using testing::Notification;
using testing::StubServer;

constexpr char kEcho[] = "/h2rpc.test.Coro/Echo";
constexpr char kRelay[] = "/h2rpc.test.Coro/Relay";
constexpr char kCount[] = "/h2rpc.test.Coro/Count";
constexpr char kSum[] = "/h2rpc.test.Coro/Sum";
constexpr char kChat[] = "/h2rpc.test.Coro/Chat";
constexpr char kEndAtOnce[] = "/h2rpc.test.Coro/EndAtOnce";
// Makes a blocking call to kEcho on a pool thread, then answers from its
// loop.
constexpr char kBlocking[] = "/h2rpc.test.Coro/Blocking";

constexpr absl::Duration kHang = absl::Seconds(30);

SimpleRequest Request(absl::string_view body) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(body));
  return request;
}

SimpleResponse Response(absl::string_view body) {
  SimpleResponse response;
  response.mutable_payload()->set_body(std::string(body));
  return response;
}

class CoroCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Server::Builder& builder = server_.builder();
    // Echoes the body; "fail:MESSAGE" answers NOT_FOUND with MESSAGE and
    // a trailing "why" entry.
    coro::RegisterUnary<SimpleRequest, SimpleResponse>(
        builder, kEcho,
        [](ServerContext* context, const SimpleRequest* request,
           SimpleResponse* response) -> coro::Task<Status> {
          const std::string& body = request->payload().body();
          if (absl::StartsWith(body, "fail:")) {
            context->AddTrailingMetadata("why", "asked");
            co_return Status(StatusCode::kNotFound, body.substr(5));
          }
          response->mutable_payload()->set_body(body);
          co_return Status();
        });
    // Calls kEcho on this server with a context made from its own, and
    // answers with what it got, prefixed.
    coro::RegisterUnary<SimpleRequest, SimpleResponse>(
        builder, kRelay,
        [this](ServerContext* context, const SimpleRequest* request,
               SimpleResponse* response) -> coro::Task<Status> {
          ClientContext child(*context);
          SimpleResponse inner;
          Status status = co_await coro::UnaryCall(*relay_channel_, &child,
                                                   kEcho, *request, &inner);
          response->mutable_payload()->set_body("relayed " +
                                                inner.payload().body());
          co_return status;
        });
    // Writes as many responses as the request's response_size, then OK.
    coro::RegisterServerStreaming<SimpleRequest, SimpleResponse>(
        builder, kCount,
        [](ServerContext*, const SimpleRequest* request,
           coro::ServerWriter<SimpleResponse>* writer) -> coro::Task<Status> {
          for (int i = 0; i < request->response_size(); ++i) {
            const bool written =
                co_await writer->Write(Response(std::to_string(i)));
            if (!written) {
              co_return Status(StatusCode::kCancelled, "write failed");
            }
          }
          co_return Status();
        });
    // Joins the bodies of every request.
    coro::RegisterClientStreaming<SimpleRequest, SimpleResponse>(
        builder, kSum,
        [](ServerContext*, coro::ServerReader<SimpleRequest>* reader,
           SimpleResponse* response) -> coro::Task<Status> {
          SimpleRequest request;
          std::string joined;
          while (true) {
            const bool read = co_await reader->Read(&request);
            if (!read) break;
            joined += request.payload().body();
          }
          response->mutable_payload()->set_body(joined);
          co_return Status();
        });
    // Echoes each message; records how its reads ended.
    coro::RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
        builder, kChat,
        [this](ServerContext* context,
               coro::ServerReaderWriter<SimpleResponse, SimpleRequest>* stream)
            -> coro::Task<Status> {
          co_await stream->SendInitialMetadata();
          SimpleRequest request;
          while (true) {
            const bool read = co_await stream->Read(&request);
            if (!read) break;
            chat_reads_.fetch_add(1);
            const bool written =
                co_await stream->Write(Response(request.payload().body()));
            if (!written) {
              break;
            }
          }
          chat_saw_cancel_.store(context->IsCancelled());
          chat_ended_.Notify();
          co_return Status(StatusCode::kOk, "");
        });
    // Ends before awaiting anything: the status is given while the
    // call's factory still runs.
    coro::RegisterBidiStreaming<SimpleRequest, SimpleResponse>(
        builder, kEndAtOnce,
        [](ServerContext*,
           coro::ServerReaderWriter<SimpleResponse, SimpleRequest>*)
            -> coro::Task<Status> {
          co_return Status(StatusCode::kAborted, "at once");
        });
    coro::RegisterUnary<SimpleRequest, SimpleResponse>(
        builder, kBlocking,
        [this](ServerContext*, const SimpleRequest* request,
               SimpleResponse* response) -> coro::Task<Status> {
          coro::Executor* home = coro::CurrentLoop();
          if (home == nullptr)
            co_return Status(StatusCode::kInternal, "no loop");
          co_await coro::ResumeOn(pool_);
          ClientContext context;
          SimpleResponse inner;
          const Status status =
              relay_channel_->UnaryCall(&context, kEcho, *request, &inner);
          co_await coro::ResumeOn(*home);
          if (coro::CurrentLoop() != home) {
            co_return Status(StatusCode::kInternal, "not back on the loop");
          }
          response->mutable_payload()->set_body("blocked for " +
                                                inner.payload().body());
          co_return status;
        });
    ASSERT_TRUE(server_.Start().ok());
    channel_ = server_.NewChannel();
    relay_channel_ = server_.NewChannel();
  }

  coro::ThreadPool pool_{1};
  StubServer server_;
  std::shared_ptr<Channel> channel_;
  std::shared_ptr<Channel> relay_channel_;
  std::atomic<int> chat_reads_{0};
  std::atomic<bool> chat_saw_cancel_{false};
  Notification chat_ended_;
};

TEST_F(CoroCallTest, Unary) {
  auto call = [&](std::string body) -> coro::Task<SimpleResponse> {
    ClientContext context;
    SimpleResponse response;
    const Status status = co_await coro::UnaryCall(*channel_, &context, kEcho,
                                                   Request(body), &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    co_return response;
  };
  EXPECT_EQ(coro::SyncWait(call("hello")).payload().body(), "hello");
}

TEST_F(CoroCallTest, GenericUnary) {
  auto call = [&]() -> coro::Task<std::string> {
    ClientContext context;
    const ByteBuffer request(Request("raw").SerializeAsString());
    ByteBuffer response;
    const Status status = co_await coro::GenericUnaryCall(
        *channel_, &context, kEcho, request, &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    SimpleResponse parsed;
    EXPECT_TRUE(parsed.ParseFromString(response.ToString()));
    co_return parsed.payload().body();
  };
  EXPECT_EQ(coro::SyncWait(call()), "raw");
}

TEST_F(CoroCallTest, UnaryErrorsCarryTheirStatusAndTrailers) {
  auto call = [&]() -> coro::Task<Status> {
    ClientContext context;
    SimpleResponse response;
    Status status = co_await coro::UnaryCall(
        *channel_, &context, kEcho, Request("fail:no such thing"), &response);
    EXPECT_EQ(context.GetServerTrailingMetadata().Get("why").value_or(""),
              "asked");
    co_return status;
  };
  const Status status = coro::SyncWait(call());
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no such thing");
}

TEST_F(CoroCallTest, AHandlerAwaitsACallOnward) {
  auto call = [&]() -> coro::Task<std::string> {
    ClientContext context;
    SimpleResponse response;
    const Status status = co_await coro::UnaryCall(*channel_, &context, kRelay,
                                                   Request("on"), &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    co_return response.payload().body();
  };
  EXPECT_EQ(coro::SyncWait(call()), "relayed on");
}

TEST_F(CoroCallTest, AHandlerBlocksOnAPoolAndAnswersFromItsLoop) {
  auto call = [&]() -> coro::Task<std::string> {
    ClientContext context;
    SimpleResponse response;
    const Status status = co_await coro::UnaryCall(
        *channel_, &context, kBlocking, Request("a reply"), &response);
    EXPECT_TRUE(status.ok()) << status.ToString();
    co_return response.payload().body();
  };
  EXPECT_EQ(coro::SyncWait(call()), "blocked for a reply");
}

TEST_F(CoroCallTest, ServerStreaming) {
  auto call = [&]() -> coro::Task<std::string> {
    coro::ServerStreamingCall<SimpleRequest, SimpleResponse> stream;
    SimpleRequest request;
    request.set_response_size(5);
    stream.Start(*channel_, kCount, request);
    std::string seen;
    SimpleResponse response;
    while (true) {
      const bool read = co_await stream.Read(&response);
      if (!read) break;
      seen += response.payload().body();
    }
    const Status status = co_await stream.Finish();
    EXPECT_TRUE(status.ok()) << status.ToString();
    co_return seen;
  };
  EXPECT_EQ(coro::SyncWait(call()), "01234");
}

TEST_F(CoroCallTest, ClientStreaming) {
  auto call = [&](bool writes_done) -> coro::Task<std::string> {
    coro::ClientStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.Start(*channel_, kSum);
    for (const char* part : {"a", "b", "c"}) {
      const bool written = co_await stream.Write(Request(part));
      EXPECT_TRUE(written);
    }
    if (writes_done) {
      const bool half_closed = co_await stream.WritesDone();
      EXPECT_TRUE(half_closed);
    }
    // Without WritesDone, Finish half-closes.
    const Status status = co_await stream.Finish();
    EXPECT_TRUE(status.ok()) << status.ToString();
    co_return stream.response().payload().body();
  };
  EXPECT_EQ(coro::SyncWait(call(true)), "abc");
  EXPECT_EQ(coro::SyncWait(call(false)), "abc");
}

TEST_F(CoroCallTest, BidiStreaming) {
  auto call = [&]() -> coro::Task<std::string> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.context().AddMetadata("x-who", "coro");
    stream.Start(*channel_, kChat);
    const bool got_metadata = co_await stream.ReadInitialMetadata();
    EXPECT_TRUE(got_metadata);
    std::string seen;
    SimpleResponse response;
    for (const char* part : {"x", "y", "z"}) {
      const bool written = co_await stream.Write(Request(part));
      EXPECT_TRUE(written);
      const bool read = co_await stream.Read(&response);
      EXPECT_TRUE(read);
      seen += response.payload().body();
    }
    const bool half_closed = co_await stream.WritesDone();
    EXPECT_TRUE(half_closed);
    const bool read_after_half_close = co_await stream.Read(&response);
    EXPECT_FALSE(read_after_half_close);
    const Status status = co_await stream.Finish();
    EXPECT_TRUE(status.ok()) << status.ToString();
    co_return seen;
  };
  EXPECT_EQ(coro::SyncWait(call()), "xyz");
  ASSERT_TRUE(chat_ended_.WaitForNotificationWithTimeout(kHang));
  EXPECT_EQ(chat_reads_.load(), 3);
  EXPECT_FALSE(chat_saw_cancel_.load());
}

// An operation starts when it is called: one coroutine keeps a read
// outstanding while it writes, and awaits a write that has already ended.
TEST_F(CoroCallTest, OneCoroutineOverlapsAReadAndAWrite) {
  auto call = [&]() -> coro::Task<std::string> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.Start(*channel_, kChat);
    std::string seen;
    SimpleResponse response;
    for (const char* part : {"p", "q"}) {
      // The request lives until its write has ended (a temporary would
      // not: it dies with this statement, before the write is made).
      const SimpleRequest request = Request(part);
      auto read = stream.Read(&response);
      auto write = stream.Write(request);
      const bool got = co_await read;  // the echo needs the write
      const bool written = co_await write;
      EXPECT_TRUE(got);
      EXPECT_TRUE(written);
      seen += response.payload().body();
    }
    const bool half_closed = co_await stream.WritesDone();
    EXPECT_TRUE(half_closed);
    const Status status = co_await stream.Finish();
    EXPECT_TRUE(status.ok()) << status.ToString();
    co_return seen;
  };
  EXPECT_EQ(coro::SyncWait(call()), "pq");
}

TEST_F(CoroCallTest, AHandlerEndingAtOnceFinishesTheCall) {
  auto call = [&]() -> coro::Task<Status> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.Start(*channel_, kEndAtOnce);
    SimpleResponse response;
    const bool read = co_await stream.Read(&response);
    EXPECT_FALSE(read);
    co_return co_await stream.Finish();
  };
  const Status status = coro::SyncWait(call());
  EXPECT_EQ(status.code(), StatusCode::kAborted);
  EXPECT_EQ(status.message(), "at once");
}

TEST_F(CoroCallTest, ADeadlineEndsBothSides) {
  auto call = [&]() -> coro::Task<Status> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.context().set_timeout(absl::Milliseconds(100));
    stream.Start(*channel_, kChat);
    // The handler waits for a message that never comes.
    SimpleResponse response;
    const bool read = co_await stream.Read(&response);
    EXPECT_FALSE(read);
    co_return co_await stream.Finish();
  };
  EXPECT_EQ(coro::SyncWait(call()).code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(chat_ended_.WaitForNotificationWithTimeout(kHang));
  EXPECT_TRUE(chat_saw_cancel_.load());
}

TEST_F(CoroCallTest, ACallObjectDroppedBeforeFinishCancelsTheCall) {
  auto call = [&]() -> coro::Task<void> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.Start(*channel_, kChat);
    SimpleResponse response;
    const bool written = co_await stream.Write(Request("only"));
    EXPECT_TRUE(written);
    const bool read = co_await stream.Read(&response);
    EXPECT_TRUE(read);
    // Returns without Finish: the call is cancelled, its state lives on
    // until it ends.
  };
  coro::SyncWait(call());
  ASSERT_TRUE(chat_ended_.WaitForNotificationWithTimeout(kHang));
  EXPECT_EQ(chat_reads_.load(), 1);
  EXPECT_TRUE(chat_saw_cancel_.load());
}

TEST_F(CoroCallTest, ACallObjectNeverStartedCostsNothing) {
  coro::BidiStreamingCall<SimpleRequest, SimpleResponse> never;
  never.context().AddMetadata("x", "y");
}

TEST_F(CoroCallTest, ShutdownEndsHandlersSuspendedInTheirReads) {
  Notification read_started;
  // The client's first write is read; the handler then waits in its second
  // read while the server shuts down.
  auto call = [&]() -> coro::Task<Status> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.Start(*channel_, kChat);
    SimpleResponse response;
    const bool written = co_await stream.Write(Request("first"));
    EXPECT_TRUE(written);
    const bool first_read = co_await stream.Read(&response);
    EXPECT_TRUE(first_read);
    read_started.Notify();
    const bool second_read = co_await stream.Read(&response);
    EXPECT_FALSE(second_read);
    co_return co_await stream.Finish();
  };
  Status status;
  Notification client_done;
  coro::Spawn(call(), [&](Status s) {
    status = s;
    client_done.Notify();
  });
  ASSERT_TRUE(read_started.WaitForNotificationWithTimeout(kHang));
  server_.server().Shutdown(absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(chat_ended_.WaitForNotificationWithTimeout(kHang));
  EXPECT_TRUE(chat_saw_cancel_.load());
  ASSERT_TRUE(client_done.WaitForNotificationWithTimeout(kHang));
  EXPECT_FALSE(status.ok());
}

coro::Task<void> ReadBeforeStart() {
  coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
  SimpleResponse response;
  co_await stream.Read(&response);
}

class CoroMisuseTest : public CoroCallTest {
 protected:
  void SetUp() override {
    fatal_ = h2rpc::internal::MisuseIsFatal();
    CoroCallTest::SetUp();
  }
  void TearDown() override { h2rpc::internal::SetMisuseIsFatalForTest(fatal_); }
  bool fatal_ = false;
};

TEST_F(CoroMisuseTest, OperationsAfterFinishAreReportedAndFail) {
  h2rpc::internal::SetMisuseIsFatalForTest(false);
  auto call = [&]() -> coro::Task<void> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    stream.Start(*channel_, kChat);
    const bool half_closed = co_await stream.WritesDone();
    EXPECT_TRUE(half_closed);
    const Status finished = co_await stream.Finish();
    EXPECT_TRUE(finished.ok());
    SimpleResponse response;
    const bool read = co_await stream.Read(&response);
    EXPECT_FALSE(read);
    const bool written = co_await stream.Write(Request("late"));
    EXPECT_FALSE(written);
    const Status finished_again = co_await stream.Finish();
    EXPECT_EQ(finished_again.code(), StatusCode::kInternal);
  };
  coro::SyncWait(call());
}

TEST_F(CoroMisuseTest, OperationsBeforeStartAreReportedAndFail) {
  h2rpc::internal::SetMisuseIsFatalForTest(false);
  auto call = [&]() -> coro::Task<void> {
    coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
    SimpleResponse response;
    const bool read = co_await stream.Read(&response);
    EXPECT_FALSE(read);
  };
  coro::SyncWait(call());
}

TEST_F(CoroMisuseTest, TwoReadsOutstandingFailTheCallWithInternal) {
  h2rpc::internal::SetMisuseIsFatalForTest(false);
  coro::BidiStreamingCall<SimpleRequest, SimpleResponse> stream;
  stream.Start(*channel_, kChat);
  SimpleResponse first_response;
  SimpleResponse second_response;
  bool first_ok = true;
  Notification first_done;
  auto first = [&]() -> coro::Task<void> {
    first_ok = co_await stream.Read(&first_response);
    first_done.Notify();
  };
  auto second = [&]() -> coro::Task<bool> {
    co_return co_await stream.Read(&second_response);
  };
  coro::Spawn(first());  // suspends: the server writes nothing yet
  EXPECT_FALSE(coro::SyncWait(second()));
  ASSERT_TRUE(first_done.WaitForNotificationWithTimeout(kHang));
  EXPECT_FALSE(first_ok);
  auto finish = [&]() -> coro::Task<Status> {
    co_return co_await stream.Finish();
  };
  const Status status = coro::SyncWait(finish());
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(status.message(),
                                "StartRead while a read is outstanding"))
      << status.message();
}

TEST_F(CoroMisuseTest, MisuseAbortsWhenFatal) {
  h2rpc::internal::SetMisuseIsFatalForTest(true);
  EXPECT_DEATH(coro::SyncWait(ReadBeforeStart()),
               "Read before Start on a coroutine call");
}

}  // namespace
}  // namespace h2rpc
