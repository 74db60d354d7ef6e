// Generic client calls (messages as ByteBuffers, rpc/byte_buffer.h) of every
// kind, blocking and with reactors, against typed methods of an h2rpc
// server over real loopback sockets: what a generic call sends is parsed by
// the typed handler, and what it receives is the typed response's
// serialization, byte for byte.
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/byte_buffer.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::StubServer;

constexpr char kUnary[] = "/h2rpc.test.Typed/Unary";
constexpr char kBidi[] = "/h2rpc.test.Typed/Bidi";
constexpr char kServerStream[] = "/h2rpc.test.Typed/ServerStream";
constexpr char kClientStream[] = "/h2rpc.test.Typed/ClientStream";

// The typed response each method gives.
SimpleResponse UnaryAnswer(const SimpleRequest& request) {
  SimpleResponse response;
  response.mutable_payload()->set_body("re: " + request.payload().body());
  return response;
}
StreamingOutputCallResponse StreamAnswer(
    const StreamingOutputCallRequest& request) {
  StreamingOutputCallResponse response;
  response.mutable_payload()->set_body("re: " + request.payload().body());
  return response;
}

// A ByteBuffer holding `message` serialized.
ByteBuffer Serialized(const google::protobuf::MessageLite& message) {
  ByteBuffer buffer;
  EXPECT_TRUE(buffer.Serialize(message).ok());
  return buffer;
}

StreamingOutputCallRequest StreamRequest(const std::string& body) {
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body(body);
  return request;
}

class GenericClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.builder()
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kUnary,
            [](ServerContext* context, const SimpleRequest& request,
               SimpleResponse* response) {
              *response = UnaryAnswer(request);
              context->AddTrailingMetadata(
                  "x-compressed",
                  context->last_message_compressed() ? "yes" : "no");
              return Status();
            })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
            kBidi,
            [](ServerContext*,
               ServerReaderWriter<StreamingOutputCallResponse,
                                  StreamingOutputCallRequest>* stream) {
              StreamingOutputCallRequest request;
              while (stream->Read(&request)) {
                if (!stream->Write(StreamAnswer(request))) break;
              }
              return Status();
            })
        .RegisterServerStreaming<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(
            kServerStream,
            [](ServerContext*, const StreamingOutputCallRequest& request,
               ServerWriter<StreamingOutputCallResponse>* writer) {
              for (const auto& parameters : request.response_parameters()) {
                StreamingOutputCallResponse response;
                response.mutable_payload()->set_body(
                    std::string(parameters.size(), 'x'));
                if (!writer->Write(response)) break;
              }
              return Status();
            })
        .RegisterClientStreaming<StreamingInputCallRequest,
                                 StreamingInputCallResponse>(
            kClientStream,
            [](ServerContext*, ServerReader<StreamingInputCallRequest>* reader,
               StreamingInputCallResponse* response) {
              StreamingInputCallRequest request;
              int total = 0;
              while (reader->Read(&request)) {
                total += static_cast<int>(request.payload().body().size());
              }
              response->set_aggregated_payload_size(total);
              return Status();
            });
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = server_.NewChannel();
  }

  StubServer server_;
  std::shared_ptr<Channel> channel_;
};

TEST_F(GenericClientTest, UnaryBlockingAndAsync) {
  SimpleRequest request;
  request.mutable_payload()->set_body("hello");
  const std::string expected = UnaryAnswer(request).SerializeAsString();

  ClientContext context;
  ByteBuffer response;
  Status status = channel_->GenericUnaryCall(&context, kUnary,
                                             Serialized(request), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(response.ToString(), expected);

  ClientContext async_context;
  ByteBuffer async_response;
  Notification done;
  channel_->AsyncGenericUnaryCall(&async_context, kUnary, Serialized(request),
                                  &async_response, [&](const Status& s) {
                                    status = s;
                                    done.Notify();
                                  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kHangTimeout));
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(async_response.ToString(), expected);
  SimpleResponse parsed;
  ASSERT_TRUE(async_response.Parse(&parsed));
  EXPECT_EQ(parsed.payload().body(), "re: hello");
}

TEST_F(GenericClientTest, UnaryCompressed) {
  SimpleRequest request;
  request.mutable_payload()->set_body(std::string(4096, 'z'));
  ClientContext context;
  context.set_compression_algorithm(CompressionAlgorithm::kGzip);
  ByteBuffer response;
  const Status status = channel_->GenericUnaryCall(
      &context, kUnary, Serialized(request), &response);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(context.GetServerTrailingMetadata().Get("x-compressed"), "yes");
  EXPECT_EQ(response.ToString(), UnaryAnswer(request).SerializeAsString());
}

TEST_F(GenericClientTest, BidiBlocking) {
  ClientContext context;
  std::unique_ptr<GenericClientReaderWriter> stream =
      channel_->BidiStreamingCall<ByteBuffer, ByteBuffer>(&context, kBidi);
  ByteBuffer response;
  for (const char* body : {"a", "bb", ""}) {
    const StreamingOutputCallRequest request = StreamRequest(body);
    ASSERT_TRUE(stream->Write(Serialized(request)));
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.ToString(), StreamAnswer(request).SerializeAsString());
  }
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST_F(GenericClientTest, LargeCompressedBidiMessages) {
  ClientContext context;
  context.set_compression_algorithm(CompressionAlgorithm::kDeflate);
  std::unique_ptr<GenericClientReaderWriter> stream =
      channel_->BidiStreamingCall<ByteBuffer, ByteBuffer>(&context, kBidi);
  const StreamingOutputCallRequest request =
      StreamRequest(std::string(3 << 20, 'q'));
  ASSERT_TRUE(stream->Write(Serialized(request)));
  ByteBuffer response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.ToString(), StreamAnswer(request).SerializeAsString());
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(GenericClientTest, ServerStreamingBlocking) {
  StreamingOutputCallRequest request;
  for (int size : {1, 100, 70000}) {
    request.add_response_parameters()->set_size(size);
  }
  ClientContext context;
  std::unique_ptr<GenericClientReader> reader =
      channel_->ServerStreamingCall<ByteBuffer, ByteBuffer>(
          &context, kServerStream, Serialized(request));
  ByteBuffer response;
  for (int size : {1, 100, 70000}) {
    ASSERT_TRUE(reader->Read(&response));
    StreamingOutputCallResponse expected;
    expected.mutable_payload()->set_body(std::string(size, 'x'));
    EXPECT_EQ(response.ToString(), expected.SerializeAsString());
  }
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(GenericClientTest, ClientStreamingBlocking) {
  ClientContext context;
  ByteBuffer response;
  std::unique_ptr<GenericClientWriter> writer =
      channel_->ClientStreamingCall<ByteBuffer, ByteBuffer>(
          &context, kClientStream, &response);
  for (int size : {3, 0, 40}) {
    StreamingInputCallRequest request;
    request.mutable_payload()->set_body(std::string(size, 'w'));
    ASSERT_TRUE(writer->Write(Serialized(request)));
  }
  const Status status = writer->Finish();
  ASSERT_TRUE(status.ok()) << status.ToString();
  StreamingInputCallResponse expected;
  expected.set_aggregated_payload_size(43);
  EXPECT_EQ(response.ToString(), expected.SerializeAsString());
}

// Ping-pong with a reactor: each response read is the answer to the message
// written before it.
class PingPong final : public GenericClientBidiReactor {
 public:
  explicit PingPong(int rounds) : rounds_(rounds) {}
  void Start() {
    Next();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) StartRead(&response_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (response_.ToString() !=
        StreamAnswer(StreamRequest(std::to_string(round_)))
            .SerializeAsString()) {
      mismatches_++;
    }
    if (++round_ == rounds_) {
      StartWritesDone();
    } else {
      Next();
    }
  }
  void OnDone(const Status& status) override {
    status_ = status;
    done_.Notify();
  }
  Status Wait() {
    EXPECT_TRUE(done_.WaitForNotificationWithTimeout(kHangTimeout));
    return status_;
  }
  int rounds_done() const { return round_; }
  int mismatches() const { return mismatches_; }

 private:
  void Next() {
    request_ = Serialized(StreamRequest(std::to_string(round_)));
    StartWrite(&request_);
  }
  const int rounds_;
  int round_ = 0;
  int mismatches_ = 0;
  ByteBuffer request_;
  ByteBuffer response_;
  Status status_;
  Notification done_;
};

TEST_F(GenericClientTest, BidiReactor) {
  ClientContext context;
  PingPong reactor(20);
  channel_->AsyncBidiStreamingCall(&context, kBidi, &reactor);
  reactor.Start();
  const Status status = reactor.Wait();
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(reactor.rounds_done(), 20);
  EXPECT_EQ(reactor.mismatches(), 0);
}

// A reactor holding its call: the call's status is known and every
// operation done, but OnDone waits for RemoveHold.
class HeldReactor final : public GenericClientBidiReactor {
 public:
  void Start() {
    AddHold();
    StartWritesDone();
    StartRead(&response_);
    StartCall();
  }
  void OnReadDone(bool ok) override { read_ended_.Notify(); }
  void OnDone(const Status& status) override {
    removed_when_done_ = removed_.load();
    done_.Notify();
  }
  void Remove() {
    removed_.store(true);
    RemoveHold();
  }
  Notification& read_ended() { return read_ended_; }
  Notification& done() { return done_; }
  bool removed_when_done() const { return removed_when_done_; }

 private:
  ByteBuffer response_;
  Notification read_ended_;
  Notification done_;
  std::atomic<bool> removed_{false};
  bool removed_when_done_ = false;
};

TEST_F(GenericClientTest, AHoldKeepsTheCallUntilRemoved) {
  ClientContext context;
  HeldReactor reactor;
  channel_->AsyncBidiStreamingCall(&context, kBidi, &reactor);
  reactor.Start();
  ASSERT_TRUE(
      reactor.read_ended().WaitForNotificationWithTimeout(kHangTimeout));
  // A whole call on the same channel (its loop runs past the held call's
  // end meanwhile) before the hold goes.
  SimpleRequest request;
  ClientContext other;
  ByteBuffer response;
  ASSERT_TRUE(
      channel_->GenericUnaryCall(&other, kUnary, Serialized(request), &response)
          .ok());
  EXPECT_FALSE(reactor.done().HasBeenNotified());
  reactor.Remove();
  ASSERT_TRUE(reactor.done().WaitForNotificationWithTimeout(kHangTimeout));
  EXPECT_TRUE(reactor.removed_when_done());
}

}  // namespace
}  // namespace h2rpc
