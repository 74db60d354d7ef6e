// h2rpc client <-> h2rpc server: client, server and bidi streaming calls,
// blocking and reactor forms on both sides, over real loopback sockets.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/client_call_peer.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::ClientCallPeer;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::StubServer;
using ::testing::HasSubstr;

// Generous: only catches hangs, never measures speed.
constexpr absl::Duration kHangTimeout = absl::Seconds(30);

constexpr char kSum[] = "/h2rpc.test.Stream/Sum";
constexpr char kSumCallback[] = "/h2rpc.test.Stream/SumCallback";
constexpr char kCount[] = "/h2rpc.test.Stream/Count";
constexpr char kCountCallback[] = "/h2rpc.test.Stream/CountCallback";
constexpr char kEcho[] = "/h2rpc.test.Stream/Echo";
constexpr char kEchoCallback[] = "/h2rpc.test.Stream/EchoCallback";
constexpr char kWaitForCancel[] = "/h2rpc.test.Stream/WaitForCancel";
constexpr char kFinishEarly[] = "/h2rpc.test.Stream/FinishEarly";
constexpr char kServerCancels[] = "/h2rpc.test.Stream/ServerCancels";

// Bidi echo on the loop: reads a request, writes one response per
// response_parameters entry, until the client half-closes.
class EchoReactor final
    : public ServerBidiReactor<StreamingOutputCallRequest,
                               StreamingOutputCallResponse> {
 public:
  explicit EchoReactor(ServerContext* context) {
    if (auto v = context->client_metadata().Get("x-echo-initial")) {
      context->AddInitialMetadata("x-echo-initial", *v);
    }
    if (context->client_metadata().Get("x-bad-initial")) {
      context->AddInitialMetadata("Bad-Initial", "v");  // invalid key
    }
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(Status());
      return;
    }
    next_ = 0;
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(StatusCode::kUnknown, "write failed"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (next_ == request_.response_parameters_size()) {
      StartRead(&request_);
      return;
    }
    response_.mutable_payload()->set_body(
        std::string(request_.response_parameters(next_++).size(), 'e'));
    StartWrite(&response_);
  }

  StreamingOutputCallRequest request_;
  StreamingOutputCallResponse response_;
  int next_ = 0;
};

class SumReactor final : public ServerReadReactor<StreamingInputCallRequest> {
 public:
  explicit SumReactor(StreamingInputCallResponse* response)
      : response_(response) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      response_->set_aggregated_payload_size(sum_);
      Finish(Status());
      return;
    }
    sum_ += static_cast<int>(request_.payload().body().size());
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  StreamingInputCallResponse* response_;
  StreamingInputCallRequest request_;
  int sum_ = 0;
};

class CountReactor final
    : public ServerWriteReactor<StreamingOutputCallResponse> {
 public:
  explicit CountReactor(const StreamingOutputCallRequest* request)
      : request_(*request) {
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(Status(StatusCode::kUnknown, "write failed"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (next_ == request_.response_parameters_size()) {
      Finish(Status());
      return;
    }
    response_.mutable_payload()->set_body(
        std::string(request_.response_parameters(next_++).size(), 'c'));
    StartWrite(&response_);
  }
  StreamingOutputCallRequest request_;
  StreamingOutputCallResponse response_;
  int next_ = 0;
};

Status SyncSum(ServerContext*, ServerReader<StreamingInputCallRequest>* reader,
               StreamingInputCallResponse* response) {
  StreamingInputCallRequest request;
  int sum = 0;
  while (reader->Read(&request)) {
    sum += static_cast<int>(request.payload().body().size());
  }
  response->set_aggregated_payload_size(sum);
  return Status();
}

Status SyncCount(ServerContext*, const StreamingOutputCallRequest& request,
                 ServerWriter<StreamingOutputCallResponse>* writer) {
  StreamingOutputCallResponse response;
  for (const auto& parameters : request.response_parameters()) {
    response.mutable_payload()->set_body(std::string(parameters.size(), 'c'));
    if (!writer->Write(response)) {
      return Status(StatusCode::kUnknown, "write failed");
    }
  }
  return Status();
}

Status SyncEcho(ServerContext* context,
                ServerReaderWriter<StreamingOutputCallResponse,
                                   StreamingOutputCallRequest>* stream) {
  if (auto v = context->client_metadata().Get("x-echo-initial")) {
    context->AddInitialMetadata("x-echo-initial", *v);
  }
  if (auto v = context->client_metadata().Get("x-echo-trailing-bin")) {
    context->AddTrailingMetadata("x-echo-trailing-bin", *v);
  }
  if (context->client_metadata().Get("x-bad-initial")) {
    context->AddInitialMetadata("Bad-Initial", "v");  // invalid key
  }
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  while (stream->Read(&request)) {
    for (const auto& parameters : request.response_parameters()) {
      response.mutable_payload()->set_body(std::string(parameters.size(), 'e'));
      if (!stream->Write(response)) {
        return Status(StatusCode::kUnknown, "write failed");
      }
    }
    if (request.has_response_status()) {
      return Status(static_cast<StatusCode>(request.response_status().code()),
                    request.response_status().message());
    }
  }
  return Status();
}

StreamingOutputCallRequest AskFor(std::vector<int> sizes) {
  StreamingOutputCallRequest request;
  for (int size : sizes) request.add_response_parameters()->set_size(size);
  return request;
}

class StreamingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.builder()
        .RegisterClientStreaming<StreamingInputCallRequest,
                                 StreamingInputCallResponse>(kSum, SyncSum)
        .RegisterCallbackClientStreaming<StreamingInputCallRequest,
                                         StreamingInputCallResponse>(
            kSumCallback,
            [](ServerContext*, StreamingInputCallResponse* response) {
              return new SumReactor(response);
            })
        .RegisterServerStreaming<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(kCount, SyncCount)
        .RegisterCallbackServerStreaming<StreamingOutputCallRequest,
                                         StreamingOutputCallResponse>(
            kCountCallback,
            [](ServerContext*, const StreamingOutputCallRequest* request) {
              return new CountReactor(request);
            })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(kEcho, SyncEcho)
        .RegisterCallbackBidiStreaming<StreamingOutputCallRequest,
                                       StreamingOutputCallResponse>(
            kEchoCallback,
            [](ServerContext* context) { return new EchoReactor(context); })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
            kWaitForCancel,
            [this](ServerContext* context,
                   ServerReaderWriter<StreamingOutputCallResponse,
                                      StreamingOutputCallRequest>* stream) {
              handler_started_.Notify();
              StreamingOutputCallRequest request;
              while (stream->Read(&request)) {
              }
              server_saw_cancel_ = context->IsCancelled();
              handler_returned_.Notify();
              return Status(StatusCode::kCancelled, "noticed");
            })
        .RegisterClientStreaming<StreamingInputCallRequest,
                                 StreamingInputCallResponse>(
            kFinishEarly,
            [](ServerContext*, ServerReader<StreamingInputCallRequest>* reader,
               StreamingInputCallResponse*) {
              StreamingInputCallRequest request;
              reader->Read(&request);
              return Status(StatusCode::kFailedPrecondition, "enough");
            })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
            kServerCancels,
            [this](ServerContext* context,
                   ServerReaderWriter<StreamingOutputCallResponse,
                                      StreamingOutputCallRequest>* stream) {
              StreamingOutputCallRequest request;
              stream->Read(&request);
              context->TryCancel();
              // The call is over for the handler too.
              server_saw_cancel_ = !stream->Read(&request) &&
                                   !stream->Write({}) && context->IsCancelled();
              handler_returned_.Notify();
              return Status();  // not sent: the call was cancelled
            });
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = server_.NewChannel();
  }

  StubServer server_;
  std::shared_ptr<Channel> channel_;
  std::atomic<bool> server_saw_cancel_{false};
  Notification handler_started_;
  Notification handler_returned_;
};

TEST_F(StreamingTest, ClientStreamingSumsEveryRequest) {
  for (const char* method : {kSum, kSumCallback}) {
    SCOPED_TRACE(method);
    ClientContext context;
    StreamingInputCallResponse response;
    auto writer = channel_->ClientStreamingCall<StreamingInputCallRequest>(
        &context, method, &response);
    StreamingInputCallRequest request;
    int expected = 0;
    for (int size : {27182, 8, 1828, 45904}) {
      request.mutable_payload()->set_body(std::string(size, 'x'));
      expected += size;
      ASSERT_TRUE(writer->Write(request));
    }
    ASSERT_TRUE(writer->WritesDone());
    const Status status = writer->Finish();
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(response.aggregated_payload_size(), expected);
  }
}

TEST_F(StreamingTest, ServerStreamingDeliversEveryResponseInOrder) {
  for (const char* method : {kCount, kCountCallback}) {
    SCOPED_TRACE(method);
    ClientContext context;
    auto reader = channel_->ServerStreamingCall<StreamingOutputCallRequest,
                                                StreamingOutputCallResponse>(
        &context, method, AskFor({31415, 9, 2653, 58979}));
    StreamingOutputCallResponse response;
    std::vector<size_t> sizes;
    while (reader->Read(&response))
      sizes.push_back(response.payload().body().size());
    const Status status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_THAT(sizes, ::testing::ElementsAre(31415, 9, 2653, 58979));
  }
}

TEST_F(StreamingTest, InvalidInitialMetadataEndsTheCallWithInternal) {
  for (const char* method : {kEcho, kEchoCallback}) {
    SCOPED_TRACE(method);
    ClientContext context;
    context.AddMetadata("x-bad-initial", "1");
    auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                              StreamingOutputCallResponse>(
        &context, method);
    // Responses larger than the send buffer: the handler's writes wait for
    // a drain that never comes once the transport ended the call.
    stream->Write(AskFor({1 << 20, 1 << 20, 1 << 20}));
    stream->WritesDone();
    StreamingOutputCallResponse response;
    while (stream->Read(&response)) {
    }
    const Status status = stream->Finish();
    EXPECT_EQ(status.code(), StatusCode::kInternal) << status.ToString();
    EXPECT_THAT(status.message(), ::testing::HasSubstr("Bad-Initial"));
    // The handler was told (its writes failed) and the call ended.
    EXPECT_TRUE(::h2rpc::testing::WaitFor(
        [this] { return server_.server().live_calls() == 0; }));
  }
}

TEST_F(StreamingTest, BidiPingPong) {
  for (const char* method : {kEcho, kEchoCallback}) {
    SCOPED_TRACE(method);
    ClientContext context;
    context.AddMetadata("x-echo-initial", "hello");
    auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                              StreamingOutputCallResponse>(
        &context, method);
    StreamingOutputCallResponse response;
    for (int size : {31415, 9, 2653, 58979}) {
      ASSERT_TRUE(stream->Write(AskFor({size})));
      ASSERT_TRUE(stream->Read(&response));
      EXPECT_EQ(response.payload().body().size(), static_cast<size_t>(size));
    }
    stream->WaitForInitialMetadata();
    EXPECT_EQ(context.GetServerInitialMetadata().Get("x-echo-initial"),
              "hello");
    ASSERT_TRUE(stream->WritesDone());
    EXPECT_FALSE(stream->Read(&response));
    const Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
}

TEST_F(StreamingTest, EmptyStreamEndsOk) {
  ClientContext context;
  auto stream =
      channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                  StreamingOutputCallResponse>(&context, kEcho);
  ASSERT_TRUE(stream->WritesDone());
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(StreamingTest, ServerStatusAndTrailersReachTheClient) {
  ClientContext context;
  context.AddMetadata("x-echo-trailing-bin", std::string("\x0a\x0b\x0a", 3));
  auto stream =
      channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                  StreamingOutputCallResponse>(&context, kEcho);
  StreamingOutputCallRequest request = AskFor({3});
  request.mutable_response_status()->set_code(2);
  request.mutable_response_status()->set_message("custom failure");
  ASSERT_TRUE(stream->Write(request));
  StreamingOutputCallResponse response;
  EXPECT_TRUE(stream->Read(&response));
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kUnknown);
  EXPECT_EQ(status.message(), "custom failure");
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-echo-trailing-bin"),
            std::string("\x0a\x0b\x0a", 3));
}

TEST_F(StreamingTest, ClientCancelReachesTheServerHandler) {
  ClientContext context;
  auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                            StreamingOutputCallResponse>(
      &context, kWaitForCancel);
  ASSERT_TRUE(stream->Write(AskFor({})));
  handler_started_.WaitForNotification();  // the call reached the server
  context.TryCancel();
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_FALSE(stream->Write(AskFor({})));
  EXPECT_EQ(stream->Finish().code(), StatusCode::kCancelled);
  handler_returned_.WaitForNotification();
  EXPECT_TRUE(server_saw_cancel_);
}

TEST_F(StreamingTest, DeadlineEndsAStream) {
  ClientContext context;
  context.set_timeout(absl::Milliseconds(100));
  auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                            StreamingOutputCallResponse>(
      &context, kWaitForCancel);
  handler_started_.WaitForNotification();
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_EQ(stream->Finish().code(), StatusCode::kDeadlineExceeded);
  handler_returned_.WaitForNotification();
  EXPECT_TRUE(server_saw_cancel_);
}

TEST_F(StreamingTest, ServerFinishingEarlyStopsTheClientsWrites) {
  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = channel_->ClientStreamingCall<StreamingInputCallRequest>(
      &context, kFinishEarly, &response);
  StreamingInputCallRequest request;
  request.mutable_payload()->set_body(std::string(100000, 'x'));
  int writes = 0;
  while (writes < 10000 && writer->Write(request)) ++writes;
  EXPECT_LT(writes, 10000);
  const Status status = writer->Finish();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "enough");
}

TEST_F(StreamingTest, ServerCancelEndsTheCallWithCancelledOnBothSides) {
  ClientContext context;
  auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                            StreamingOutputCallResponse>(
      &context, kServerCancels);
  ASSERT_TRUE(stream->Write(AskFor({})));
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_EQ(stream->Finish().code(), StatusCode::kCancelled);
  handler_returned_.WaitForNotification();
  EXPECT_TRUE(server_saw_cancel_);
}

// A client reactor that reads exactly the four responses it asked for, late
// (after the client has the server's status), and never reads past them:
// OnDone still comes, once the last queued message has been taken.
class CountingClientReactor final
    : public ClientReadReactor<StreamingOutputCallResponse> {
 public:
  void OnReadDone(bool ok) override {
    if (!ok) {
      failed_read_ = true;
      return;
    }
    sizes.push_back(response_.payload().body().size());
    if (sizes.size() < 4) StartRead(&response_);
  }
  void OnDone(const Status& status) override {
    this->status = status;
    done.Notify();
  }
  void ReadLater() { StartRead(&response_); }

  std::vector<size_t> sizes;
  Status status;
  bool failed_read_ = false;
  Notification done;

 private:
  StreamingOutputCallResponse response_;
};

// Bytes that responses of `sizes` (CountReactor, SyncCount) hold while
// queued unread: each one's serialized size plus its 5-byte gRPC prefix.
size_t HeldBytesOfCountResponses(const std::vector<int>& sizes) {
  size_t bytes = 0;
  for (int size : sizes) {
    StreamingOutputCallResponse response;
    response.mutable_payload()->set_body(std::string(size, 'c'));
    bytes += 5 + response.ByteSizeLong();
  }
  return bytes;
}

TEST_F(StreamingTest, ClientReactorGetsOnDoneAfterReadingEveryMessage) {
  const std::vector<int> sizes = {31415, 9, 2653, 58979};
  for (const char* method : {kCount, kCountCallback}) {
    SCOPED_TRACE(method);
    ClientContext context;
    CountingClientReactor reactor;
    channel_->AsyncServerStreamingCall(&context, method, AskFor(sizes),
                                       &reactor);
    reactor.StartCall();
    // The call's status is known (its trailers came after the four messages)
    // while all four wait unread in its queue: OnDone must wait for them.
    const absl::Time give_up = absl::Now() + kHangTimeout;
    while (ClientCallPeer::CallBound(&context) && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_FALSE(ClientCallPeer::CallBound(&context))
        << "the call's status never arrived";
    EXPECT_EQ(ClientCallPeer::HeldBytes(&context),
              HeldBytesOfCountResponses(sizes));
    EXPECT_FALSE(reactor.done.HasBeenNotified())
        << "OnDone came with four messages unread";
    reactor.ReadLater();
    ASSERT_TRUE(reactor.done.WaitForNotificationWithTimeout(kHangTimeout));
    EXPECT_TRUE(reactor.status.ok()) << reactor.status.ToString();
    EXPECT_FALSE(reactor.failed_read_);
    EXPECT_THAT(reactor.sizes, ::testing::ElementsAre(31415, 9, 2653, 58979));
    EXPECT_EQ(ClientCallPeer::HeldBytes(&context), 0u);
  }
}

TEST_F(StreamingTest, UnknownStreamingMethodIsUnimplemented) {
  ClientContext context;
  auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                            StreamingOutputCallResponse>(
      &context, "/h2rpc.test.Stream/Nope");
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(), HasSubstr("Nope"));
}

}  // namespace
}  // namespace h2rpc
