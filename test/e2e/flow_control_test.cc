// h2rpc client <-> h2rpc server over loopback: HTTP/2 flow control as
// backpressure on streaming calls (rpc/internal/common/stream_ops.h).
//
//  * A gibibyte streamed to a slow reader, each way, arrives whole and in
//    order while the process holds only what the windows and send buffers
//    allow (PeakLiveHeapBytes against a bound computed from the options).
//  * A reader that stops reading stops the sender within a window plus the
//    send buffer plus one message; reading later delivers every message.
//  * Messages much larger than the stream window get through, both when a
//    read waits for them and when they are held whole in the queue.
//  * A message over max_receive_message_size fails the call with
//    RESOURCE_EXHAUSTED naming the limit, on either receiving side.
//
// Every assertion is about bytes, counts and order; sleeps only slow readers
// down (the slow reader is the scenario), and polling waits for a state of
// the call (ClientCallPeer: bytes the client holds unread) or decides when a
// stalled sender is looked at.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "test/util/allocation_counter.h"
#include "test/util/client_call_peer.h"
#include "test/util/notification.h"
#include "test/util/stub_server.h"
#include "transport/core/large_buffer_cache.h"

namespace h2rpc {
namespace {

using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using ::h2rpc::testing::ClientCallPeer;
using ::h2rpc::testing::LiveHeapBytes;
using ::h2rpc::testing::Notification;
using ::h2rpc::testing::PeakLiveHeapBytes;
using ::h2rpc::testing::ResetPeakLiveHeapBytes;
using ::h2rpc::testing::StubServer;
using ::testing::HasSubstr;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;
constexpr size_t kGiB = 1024 * kMiB;

// Bulk transfers: 1 GiB of payload in 64 KiB messages.
constexpr size_t kBulkMessageBytes = 64 * kKiB;
constexpr int64_t kBulkMessages = kGiB / kBulkMessageBytes;  // 16384
// The slow reader pauses this long after every kSlowReadEvery messages, so
// it reads at most ~120 MB/s: well below what the sender manages, so a
// transport that did not stop the sender would queue hundreds of MiB.
constexpr int kSlowReadEvery = 4;
constexpr auto kSlowReadPause = std::chrono::milliseconds(2);

// The stalled-reader test: messages the server tries to write.
constexpr int kUnreadMessages = 128;  // 8 MiB

// gRPC message prefix: flag byte and 4-byte length.
constexpr size_t kPrefixBytes = 5;
// HTTP/2 frame header.
constexpr size_t kFrameHeaderBytes = 9;

constexpr char kDownload[] = "/h2rpc.test.Flow/Download";
constexpr char kUpload[] = "/h2rpc.test.Flow/Upload";
constexpr char kUnread[] = "/h2rpc.test.Flow/Unread";
constexpr char kEcho[] = "/h2rpc.test.Flow/Echo";
constexpr char kProduce[] = "/h2rpc.test.Flow/Produce";
constexpr char kSink[] = "/h2rpc.test.Flow/Sink";

// ---------------------------------------------------------------------------
// Message bodies: the first 8 bytes are the sequence number (little endian),
// the rest a run of pseudo-random bytes whose starting point depends on the
// sequence number, so a message that is lost, repeated, reordered, truncated
// or spliced from two does not match. Bodies are built and checked with
// memcpy/memcmp over a shared pool, so a gibibyte costs little even in a
// fastbuild.

constexpr size_t kPatternPeriod = 1 << 20;

// kPatternPeriod random bytes, twice over, so every run of up to
// kPatternPeriod bytes starting in the first copy is contiguous.
const std::string& PatternPool() {
  static const std::string* const pool = [] {
    auto* bytes = new std::string(2 * kPatternPeriod, '\0');
    std::mt19937_64 random(0x5eed);
    for (size_t i = 0; i < kPatternPeriod; i += sizeof(uint64_t)) {
      const uint64_t word = random();
      std::memcpy(bytes->data() + i, &word, sizeof(word));
    }
    std::memcpy(bytes->data() + kPatternPeriod, bytes->data(), kPatternPeriod);
    return bytes;
  }();
  return *pool;
}

size_t PatternStart(uint64_t seq) {
  return static_cast<size_t>((seq * 0x9E3779B97F4A7C15ull) >> 24) %
         kPatternPeriod;
}

// Makes `*body` message `seq`, `size` (>= 8) bytes long; reuses capacity.
void FillBody(uint64_t seq, size_t size, std::string* body) {
  body->resize(size);
  char* out = body->data();
  std::memcpy(out, &seq, sizeof(seq));
  const std::string& pool = PatternPool();
  size_t pos = PatternStart(seq);
  for (size_t i = sizeof(seq); i < size;) {
    const size_t n = std::min(size - i, kPatternPeriod);
    std::memcpy(out + i, pool.data() + pos, n);
    i += n;
    pos = (pos + n) % kPatternPeriod;
  }
}

// Empty if `body` is message `seq` of `size` bytes, else what differs.
std::string CheckBody(uint64_t seq, size_t size, absl::string_view body) {
  if (body.size() != size) {
    return absl::StrCat("message #", seq, " has ", body.size(),
                        " bytes, expected ", size);
  }
  uint64_t carried = 0;
  std::memcpy(&carried, body.data(), sizeof(carried));
  if (carried != seq) {
    return absl::StrCat("message #", seq, " carries sequence number ", carried);
  }
  const std::string& pool = PatternPool();
  size_t pos = PatternStart(seq);
  for (size_t i = sizeof(seq); i < size;) {
    const size_t n = std::min(size - i, kPatternPeriod);
    if (std::memcmp(body.data() + i, pool.data() + pos, n) != 0) {
      size_t at = 0;
      while (body[i + at] == pool[pos + at]) ++at;
      return absl::StrCat("message #", seq, " differs at byte ", i + at, " of ",
                          size);
    }
    i += n;
    pos = (pos + n) % kPatternPeriod;
  }
  return "";
}

// The body size that makes `message` (whose only set field is the payload)
// serialize to exactly `serialized` bytes.
template <class Message>
size_t BodySizeFor(size_t serialized) {
  Message message;
  for (size_t body = serialized; body + 16 > serialized && body >= 8; --body) {
    message.mutable_payload()->mutable_body()->resize(body);
    if (message.ByteSizeLong() == serialized) return body;
  }
  ADD_FAILURE() << "no body size serializes to " << serialized << " bytes";
  return 0;
}

// The bytes a message with a `body`-byte payload takes in DATA frames.
template <class Message>
size_t WireBytes(size_t body) {
  Message message;
  message.mutable_payload()->mutable_body()->resize(body);
  return kPrefixBytes + message.ByteSizeLong();
}

// The most heap a bulk transfer may hold at once, from the options of its
// receiving and sending ends (one stream on one connection each way).
// `message` is the wire size of one message.
// The largest stream window `receiver` grants: BDP probing may grow it from
// initial_stream_window up to max_receive_window (a server's, to a quarter
// of its connection_window).
int64_t LargestStreamWindow(const ConnectionOptions& receiver,
                            bool receiver_is_server) {
  int64_t window = receiver.initial_stream_window;
  if (receiver.bdp_probe) {
    const int64_t max = receiver_is_server
                            ? std::min<int64_t>(receiver.max_receive_window,
                                                receiver.connection_window / 4)
                            : receiver.max_receive_window;
    window = std::max(window, max);
  }
  return window;
}

int64_t BulkTransferHeapBound(const ConnectionOptions& receiver,
                              bool receiver_is_server,
                              const ConnectionOptions& sender,
                              size_t sender_stream_write_buffer,
                              size_t message) {
  // Receiver: messages held unread fill at most the stream's window (the
  // connection window binds too, and grows with it on a client), plus the
  // one completing it (a message's bytes are returned while gathered and
  // held once complete), one being gathered by the deframer, one parsed into
  // the read target.
  const int64_t stream_window =
      LargestStreamWindow(receiver, receiver_is_server);
  const int64_t connection_window =
      receiver_is_server
          ? static_cast<int64_t>(receiver.connection_window)
          : std::max<int64_t>(receiver.connection_window, stream_window);
  const int64_t receive = std::min(stream_window, connection_window) +
                          3 * static_cast<int64_t>(message);
  // Sender: the message object being written, and the stream's send buffer
  // (up to stream_write_buffer plus the message just appended).
  const int64_t send = static_cast<int64_t>(sender_stream_write_buffer) +
                       2 * static_cast<int64_t>(message);
  // Each connection's coalesced write buffer: write_buffer_limit plus the
  // frame that crossed it.
  const int64_t coalesce =
      static_cast<int64_t>(receiver.write_buffer_limit +
                           sender.write_buffer_limit) +
      2 * static_cast<int64_t>(kFrameHeaderBytes + receiver.max_frame_size +
                               sender.max_frame_size);
  // Margin: std::string / std::vector capacity may reach twice the content;
  // plus 1 MiB for per-call state (nghttp2 stream objects, call objects,
  // metadata) and the test's own bookkeeping; plus the large buffers the
  // process keeps for reuse (LargeBufferCache, bounded by its
  // max_retained_bytes, which the fixture keeps small).
  return 2 * (receive + send + coalesce) + static_cast<int64_t>(1 * kMiB) +
         static_cast<int64_t>(
             transport::LargeBufferCache::Global().max_retained_bytes());
}

// The pause is the scenario (a reader slower than the sender), not a wait
// for something to happen.
void SlowDown(int64_t messages_read) {
  if (messages_read % kSlowReadEvery == 0) {
    std::this_thread::sleep_for(kSlowReadPause);
  }
}

// ---------------------------------------------------------------------------

class FlowControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PatternPool();
    transport::LargeBufferCache::Global().set_max_retained_bytes(2 * kMiB);
  }
  void TearDown() override {
    transport::LargeBufferCache::Global().set_max_retained_bytes(
        transport::LargeBufferCache::kDefaultMaxRetainedBytes);
  }

  // Starts the server and the channel with the given options (the methods
  // below registered), and makes one small call so the connection is up.
  void Start(ServerOptions server_options = ServerOptions(),
             ChannelOptions channel_options = ChannelOptions()) {
    server_options.num_loops = 1;
    server_options.min_sync_threads = 4;
    // BDP probing may grow the windows (the bounds below count it) up to
    // twice their initial size: the bounds stay tight.
    server_options.connection.max_receive_window =
        2 * server_options.connection.initial_stream_window;
    channel_options.connection.max_receive_window =
        2 * channel_options.connection.initial_stream_window;
    server_options_ = server_options;
    channel_options_ = channel_options;
    server_.builder()
        .SetOptions(server_options)
        .RegisterServerStreaming<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(
            kDownload,
            [](ServerContext*, const StreamingOutputCallRequest&,
               ServerWriter<StreamingOutputCallResponse>* writer) {
              return Download(writer);
            })
        .RegisterClientStreaming<StreamingInputCallRequest,
                                 StreamingInputCallResponse>(
            kUpload,
            [](ServerContext*, ServerReader<StreamingInputCallRequest>* reader,
               StreamingInputCallResponse* response) {
              return SlowUpload(reader, response);
            })
        .RegisterServerStreaming<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(
            kUnread,
            [this](ServerContext*, const StreamingOutputCallRequest&,
                   ServerWriter<StreamingOutputCallResponse>* writer) {
              return WriteUnread(writer);
            })
        .RegisterBidiStreaming<StreamingOutputCallRequest,
                               StreamingOutputCallResponse>(
            kEcho,
            [](ServerContext*,
               ServerReaderWriter<StreamingOutputCallResponse,
                                  StreamingOutputCallRequest>* stream) {
              return CheckAndEcho(stream);
            })
        .RegisterServerStreaming<StreamingOutputCallRequest,
                                 StreamingOutputCallResponse>(
            kProduce,
            [this](ServerContext* context,
                   const StreamingOutputCallRequest& request,
                   ServerWriter<StreamingOutputCallResponse>* writer) {
              return Produce(context, request, writer);
            })
        .RegisterClientStreaming<StreamingInputCallRequest,
                                 StreamingInputCallResponse>(
            kSink, [this](ServerContext* context,
                          ServerReader<StreamingInputCallRequest>* reader,
                          StreamingInputCallResponse* response) {
              return Sink(context, reader, response);
            });
    const Status status = server_.Start();
    ASSERT_TRUE(status.ok()) << status.ToString();
    channel_ = server_.NewChannel(channel_options);
    ExpectSmallEchoWorks();
  }

  // A small bidi round trip on the channel.
  void ExpectSmallEchoWorks() {
    ClientContext context;
    auto stream = channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                              StreamingOutputCallResponse>(
        &context, kEcho);
    StreamingOutputCallRequest request;
    request.add_response_parameters()->set_size(100);
    FillBody(0, 100, request.mutable_payload()->mutable_body());
    ASSERT_TRUE(stream->Write(request));
    StreamingOutputCallResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(CheckBody(0, 100, response.payload().body()), "");
    ASSERT_TRUE(stream->WritesDone());
    EXPECT_FALSE(stream->Read(&response));
    const Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << status.ToString();
  }

  // Server handlers (worker threads).

  // Writes kBulkMessages bulk messages.
  static Status Download(ServerWriter<StreamingOutputCallResponse>* writer) {
    StreamingOutputCallResponse response;
    std::string* body = response.mutable_payload()->mutable_body();
    for (int64_t seq = 0; seq < kBulkMessages; ++seq) {
      FillBody(seq, kBulkMessageBytes, body);
      if (!writer->Write(response)) {
        return Status(StatusCode::kUnknown,
                      absl::StrCat("write #", seq, " failed"));
      }
    }
    return Status();
  }

  // Reads bulk messages slowly, checking each; answers with their count.
  static Status SlowUpload(ServerReader<StreamingInputCallRequest>* reader,
                           StreamingInputCallResponse* response) {
    StreamingInputCallRequest request;
    int64_t seq = 0;
    while (reader->Read(&request)) {
      const std::string mismatch =
          CheckBody(seq, kBulkMessageBytes, request.payload().body());
      if (!mismatch.empty()) return Status(StatusCode::kDataLoss, mismatch);
      ++seq;
      SlowDown(seq);
    }
    response->set_aggregated_payload_size(static_cast<int32_t>(seq));
    return Status();
  }

  // Writes kUnreadMessages bulk messages as fast as the call lets it,
  // counting the writes that completed.
  Status WriteUnread(ServerWriter<StreamingOutputCallResponse>* writer) {
    StreamingOutputCallResponse response;
    std::string* body = response.mutable_payload()->mutable_body();
    for (int seq = 0; seq < kUnreadMessages; ++seq) {
      FillBody(seq, kBulkMessageBytes, body);
      if (!writer->Write(response)) {
        return Status(StatusCode::kUnknown,
                      absl::StrCat("write #", seq, " failed"));
      }
      unread_writes_.fetch_add(1, std::memory_order_relaxed);
    }
    return Status();
  }

  // Checks each request (message #n, response_parameters(0).size bytes)
  // and sends its body back.
  static Status CheckAndEcho(
      ServerReaderWriter<StreamingOutputCallResponse,
                         StreamingOutputCallRequest>* stream) {
    StreamingOutputCallRequest request;
    StreamingOutputCallResponse response;
    for (uint64_t seq = 0; stream->Read(&request); ++seq) {
      if (request.response_parameters_size() != 1) {
        return Status(StatusCode::kInvalidArgument, "want one size");
      }
      const std::string mismatch = CheckBody(
          seq, request.response_parameters(0).size(), request.payload().body());
      if (!mismatch.empty()) return Status(StatusCode::kDataLoss, mismatch);
      response.mutable_payload()->mutable_body()->swap(
          *request.mutable_payload()->mutable_body());
      if (!stream->Write(response)) {
        return Status(StatusCode::kUnknown,
                      absl::StrCat("write #", seq, " failed"));
      }
    }
    return Status();
  }

  // Writes message #i with response_parameters(i).size body bytes, for each
  // i, recording what each write returned.
  Status Produce(ServerContext* context,
                 const StreamingOutputCallRequest& request,
                 ServerWriter<StreamingOutputCallResponse>* writer) {
    StreamingOutputCallResponse response;
    Status status;
    for (int i = 0; i < request.response_parameters_size(); ++i) {
      FillBody(i, request.response_parameters(i).size(),
               response.mutable_payload()->mutable_body());
      const bool ok = writer->Write(response);
      {
        std::lock_guard<std::mutex> lock(mu_);
        produce_write_results_.push_back(ok);
      }
      if (!ok) {
        status =
            Status(StatusCode::kUnknown, absl::StrCat("write #", i, " failed"));
        break;
      }
      produced_.fetch_add(1, std::memory_order_relaxed);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      produce_cancelled_ = context->IsCancelled();
    }
    produce_returned_.Notify();
    return status;
  }

  // Reads and checks messages (#n of any size) until the stream ends,
  // recording how many arrived.
  Status Sink(ServerContext* context,
              ServerReader<StreamingInputCallRequest>* reader,
              StreamingInputCallResponse* response) {
    StreamingInputCallRequest request;
    int seq = 0;
    Status status;
    while (reader->Read(&request)) {
      const std::string mismatch = CheckBody(
          seq, request.payload().body().size(), request.payload().body());
      if (!mismatch.empty()) {
        status = Status(StatusCode::kDataLoss, mismatch);
        break;
      }
      ++seq;
    }
    response->set_aggregated_payload_size(seq);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sink_messages_ = seq;
      sink_cancelled_ = context->IsCancelled();
    }
    sink_returned_.Notify();
    return status;
  }

  // Polls `value` every 10 ms until it has not changed for `stable` or
  // `timeout` has passed; returns the last value seen.
  static int WaitUntilStable(const std::atomic<int>& value,
                             std::chrono::milliseconds stable,
                             std::chrono::seconds timeout) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    int last = value.load();
    auto last_change = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const int now = value.load();
      if (now != last) {
        last = now;
        last_change = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - last_change >= stable) {
        break;
      }
    }
    return last;
  }

  // Polls until `value` >= `target` (or `timeout`); returns the last value.
  static int WaitUntilAtLeast(const std::atomic<int>& value, int target,
                              std::chrono::steady_clock::duration timeout) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    while (value.load() < target &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return value.load();
  }

  // Polls `condition` every millisecond until it holds (true) or `timeout`
  // passes (false).
  static bool WaitFor(const std::function<bool()>& condition,
                      std::chrono::seconds timeout) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
      if (std::chrono::steady_clock::now() >= give_up) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  ServerOptions server_options_;
  ChannelOptions channel_options_;

  std::atomic<int> unread_writes_{0};
  std::atomic<int> produced_{0};
  std::mutex mu_;
  std::vector<bool> produce_write_results_;  // guarded by mu_
  bool produce_cancelled_ = false;           // guarded by mu_
  int sink_messages_ = -1;                   // guarded by mu_
  bool sink_cancelled_ = false;              // guarded by mu_
  Notification produce_returned_;
  Notification sink_returned_;

  // Prints the peak heap and its bound, and records them in the test's XML
  // output.
  void ReportPeak(const char* what, int64_t messages, int64_t peak,
                  int64_t bound) {
    std::printf("%s: %lld messages, peak heap %lld bytes, bound %lld\n", what,
                static_cast<long long>(messages), static_cast<long long>(peak),
                static_cast<long long>(bound));
    RecordProperty("peak_heap_bytes", std::to_string(peak));
    RecordProperty("heap_bound_bytes", std::to_string(bound));
  }

  StubServer server_;
  std::shared_ptr<Channel> channel_;
};

// 1 GiB from a server-streaming handler to a client reading slowly: every
// message arrives in order with its content, and the process never holds
// more than the receive window and the send buffers allow.
TEST_F(FlowControlTest, GibibyteDownloadToSlowReaderStaysWithinWindows) {
  Start();
  const size_t wire = WireBytes<StreamingOutputCallResponse>(kBulkMessageBytes);
  const int64_t bound = BulkTransferHeapBound(
      channel_options_.connection, /*receiver_is_server=*/false,
      server_options_.connection, server_options_.stream_write_buffer, wire);

  const int64_t base = LiveHeapBytes();
  ResetPeakLiveHeapBytes();
  int64_t received = 0;
  Status status;
  {
    ClientContext context;
    auto reader = channel_->ServerStreamingCall<StreamingOutputCallRequest,
                                                StreamingOutputCallResponse>(
        &context, kDownload, StreamingOutputCallRequest());
    StreamingOutputCallResponse response;
    while (reader->Read(&response)) {
      const std::string mismatch =
          CheckBody(received, kBulkMessageBytes, response.payload().body());
      if (!mismatch.empty()) {
        ADD_FAILURE() << mismatch;
        break;
      }
      ++received;
      SlowDown(received);
    }
    status = reader->Finish();
  }
  const int64_t peak = PeakLiveHeapBytes() - base;
  ReportPeak("download", received, peak, bound);

  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(received, kBulkMessages);
  EXPECT_LE(peak, bound) << "the transfer held more than its windows allow";
}

// The same upward: 1 GiB by client streaming to a handler reading slowly.
TEST_F(FlowControlTest, GibibyteUploadToSlowReaderStaysWithinWindows) {
  Start();
  const size_t wire = WireBytes<StreamingInputCallRequest>(kBulkMessageBytes);
  const int64_t bound = BulkTransferHeapBound(
      server_options_.connection, /*receiver_is_server=*/true,
      channel_options_.connection, channel_options_.stream_write_buffer, wire);

  const int64_t base = LiveHeapBytes();
  ResetPeakLiveHeapBytes();
  int64_t written = 0;
  Status status;
  StreamingInputCallResponse response;
  {
    ClientContext context;
    auto writer = channel_->ClientStreamingCall<StreamingInputCallRequest>(
        &context, kUpload, &response);
    StreamingInputCallRequest request;
    std::string* body = request.mutable_payload()->mutable_body();
    for (; written < kBulkMessages; ++written) {
      FillBody(written, kBulkMessageBytes, body);
      if (!writer->Write(request)) break;
    }
    status = writer->Finish();
  }
  const int64_t peak = PeakLiveHeapBytes() - base;
  ReportPeak("upload", written, peak, bound);

  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(written, kBulkMessages);
  EXPECT_EQ(response.aggregated_payload_size(), kBulkMessages);
  EXPECT_LE(peak, bound) << "the transfer held more than its windows allow";
}

// A client that does not read stops the server's writes once the stream
// window and the send buffer are full; reading then delivers everything.
TEST_F(FlowControlTest, ReaderThatStopsReadingStopsTheSender) {
  // Fixed windows: the test waits for the client to hold exactly one.
  ChannelOptions channel_options;
  channel_options.connection.bdp_probe = false;
  Start(ServerOptions(), channel_options);
  const size_t wire = WireBytes<StreamingOutputCallResponse>(kBulkMessageBytes);
  const size_t window =
      std::min<size_t>(channel_options_.connection.initial_stream_window,
                       channel_options_.connection.connection_window);
  // Completed writes: at most the bytes the client holds unread (the window,
  // overshot by less than the message that completes it) plus what waits
  // in the server's send buffer once a write completes.
  const size_t max_written =
      window + wire + server_options_.stream_write_buffer;
  ASSERT_LT(max_written, kUnreadMessages * wire) << "test too small";

  ClientContext context;
  auto reader = channel_->ServerStreamingCall<StreamingOutputCallRequest,
                                              StreamingOutputCallResponse>(
      &context, kUnread, StreamingOutputCallRequest());
  // The client holds a window of unread messages (less the message that
  // would complete it): the server has used the credit a client that does
  // not read gives. Then its writes stop once its send buffer is full.
  ASSERT_TRUE(WaitFor(
      [&] { return ClientCallPeer::HeldBytes(&context) + wire > window; },
      std::chrono::seconds(120)))
      << "the client holds " << ClientCallPeer::HeldBytes(&context)
      << " bytes unread, window " << window;
  const int stalled_at =
      WaitUntilStable(unread_writes_, std::chrono::milliseconds(1000),
                      std::chrono::seconds(120));
  const size_t held = ClientCallPeer::HeldBytes(&context);
  EXPECT_LE(held, window + wire)
      << "the client holds more unread bytes than its window lets through";
  const size_t written = static_cast<size_t>(stalled_at) * wire;
  std::printf(
      "unread: server stalled after %d writes = %zu bytes; at most "
      "%zu allowed, window %zu\n",
      stalled_at, written, max_written, window);
  EXPECT_LE(written, max_written)
      << "the server wrote " << stalled_at << " messages of " << wire
      << " bytes to a client that reads nothing";
  // And it did get to fill the window (the writes stopped for flow control,
  // not for some other reason): all but the write blocked in progress.
  EXPECT_GE(written + wire, window);

  StreamingOutputCallResponse response;
  int received = 0;
  while (reader->Read(&response)) {
    const std::string mismatch =
        CheckBody(received, kBulkMessageBytes, response.payload().body());
    if (!mismatch.empty()) {
      ADD_FAILURE() << mismatch;
      break;
    }
    ++received;
  }
  const Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(received, kUnreadMessages);
  EXPECT_EQ(unread_writes_.load(), kUnreadMessages);
  EXPECT_EQ(ClientCallPeer::HeldBytes(&context), 0u);
}

// Options for the large-message tests: the default 1 MiB stream window, and
// receive limits raised on both sides.
constexpr size_t kLargeLimit = 24 * kMiB;

ServerOptions LargeServerOptions() {
  ServerOptions options;
  options.connection.max_receive_message_size = kLargeLimit;
  return options;
}

ChannelOptions LargeChannelOptions() {
  ChannelOptions options;
  options.connection.max_receive_message_size = kLargeLimit;
  return options;
}

// 16 MiB and 20 MiB messages, 16-20 times the stream window, each way: the
// server checks what it receives and sends it back for the client to check.
TEST_F(FlowControlTest, LargeMessagesFlowBothWays) {
  Start(LargeServerOptions(), LargeChannelOptions());
  ASSERT_EQ(channel_options_.connection.initial_stream_window, 1 * kMiB);
  ASSERT_EQ(server_options_.connection.initial_stream_window, 1 * kMiB);

  ClientContext context;
  auto stream =
      channel_->BidiStreamingCall<StreamingOutputCallRequest,
                                  StreamingOutputCallResponse>(&context, kEcho);
  StreamingOutputCallRequest request;
  request.add_response_parameters();
  StreamingOutputCallResponse response;
  const std::vector<size_t> sizes = {16 * kMiB, 20 * kMiB, 16 * kMiB};
  for (size_t seq = 0; seq < sizes.size(); ++seq) {
    SCOPED_TRACE(absl::StrCat("message #", seq, " of ", sizes[seq], " bytes"));
    request.mutable_response_parameters(0)->set_size(
        static_cast<int32_t>(sizes[seq]));
    FillBody(seq, sizes[seq], request.mutable_payload()->mutable_body());
    ASSERT_TRUE(stream->Write(request));
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(CheckBody(seq, sizes[seq], response.payload().body()), "");
  }
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Read(&response));
  const Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// A large message that arrives while no read waits is held whole (more than
// the window), which stops the sender until it is read; then everything
// arrives.
TEST_F(FlowControlTest, LargeMessageHeldUnreadStopsTheSenderThenArrives) {
  Start(LargeServerOptions(), LargeChannelOptions());
  const std::vector<size_t> sizes = {16 * kMiB, 20 * kMiB, 100};
  StreamingOutputCallRequest request;
  for (size_t size : sizes) {
    request.add_response_parameters()->set_size(static_cast<int32_t>(size));
  }
  const size_t window = channel_options_.connection.initial_stream_window;
  const size_t held_0 = WireBytes<StreamingOutputCallResponse>(sizes[0]);
  ClientContext context;
  const auto started = std::chrono::steady_clock::now();
  auto reader = channel_->ServerStreamingCall<StreamingOutputCallRequest,
                                              StreamingOutputCallResponse>(
      &context, kProduce, request);
  // Message #0 arrives whole with no read waiting and is held whole, 16
  // times the window: it got through the 1 MiB window only because bytes of
  // a message being gathered are returned at once.
  ASSERT_TRUE(
      WaitFor([&] { return ClientCallPeer::HeldBytes(&context) >= held_0; },
              std::chrono::seconds(120)))
      << "the client holds " << ClientCallPeer::HeldBytes(&context)
      << " bytes unread, message #0 is " << held_0;
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(ClientCallPeer::HeldBytes(&context), held_0);
  ASSERT_GT(held_0, window);
  // Write #0 completes (all but stream_write_buffer of it left the server).
  ASSERT_GE(WaitUntilAtLeast(produced_, 1, std::chrono::seconds(120)), 1);
  // Message #1 (20 MiB) cannot complete now: with message #0 held, the
  // client returns no credit, so the server may send at most a window of
  // it. Had the client returned credit for #1's bytes, #1 (1.25 times #0)
  // would be through in about the time #0 took; the window watched is
  // twice that, so it scales with the build's speed (TSan, ASan).
  const std::chrono::steady_clock::duration watch =
      std::max<std::chrono::steady_clock::duration>(
          2 * took, std::chrono::milliseconds(200));
  EXPECT_EQ(WaitUntilAtLeast(produced_, 2, watch), 1)
      << "write #1 completed while message #0 was held";
  EXPECT_EQ(ClientCallPeer::HeldBytes(&context), held_0);

  StreamingOutputCallResponse response;
  for (size_t seq = 0; seq < sizes.size(); ++seq) {
    SCOPED_TRACE(absl::StrCat("message #", seq));
    ASSERT_TRUE(reader->Read(&response));
    EXPECT_EQ(CheckBody(seq, sizes[seq], response.payload().body()), "");
  }
  EXPECT_FALSE(reader->Read(&response));
  const Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(ClientCallPeer::HeldBytes(&context), 0u);
  produce_returned_.WaitForNotification();
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_THAT(produce_write_results_, ::testing::ElementsAre(true, true, true));
}

// Limits chosen apart from each other and from round numbers, so the status
// names the one that applied.
constexpr size_t kServerReceiveLimit = 3 * kMiB + 1;
constexpr size_t kClientReceiveLimit = 2 * kMiB + 1003;

class ReceiveLimitTest : public FlowControlTest {
 protected:
  void SetUp() override {
    FlowControlTest::SetUp();
    ServerOptions server_options;
    server_options.connection.max_receive_message_size = kServerReceiveLimit;
    ChannelOptions channel_options;
    channel_options.connection.max_receive_message_size = kClientReceiveLimit;
    Start(server_options, channel_options);
  }
};

// Client -> server: a message of exactly the server's limit is accepted, one
// byte more fails the call with RESOURCE_EXHAUSTED naming the limit.
TEST_F(ReceiveLimitTest, RequestOverTheServersLimitIsResourceExhausted) {
  const size_t at_limit =
      BodySizeFor<StreamingInputCallRequest>(kServerReceiveLimit);
  const size_t over_limit =
      BodySizeFor<StreamingInputCallRequest>(kServerReceiveLimit + 1);
  ASSERT_GT(at_limit, 0u);
  ASSERT_GT(over_limit, 0u);

  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = channel_->ClientStreamingCall<StreamingInputCallRequest>(
      &context, kSink, &response);
  StreamingInputCallRequest request;
  FillBody(0, at_limit, request.mutable_payload()->mutable_body());
  ASSERT_EQ(request.ByteSizeLong(), kServerReceiveLimit);
  EXPECT_TRUE(writer->Write(request));
  FillBody(1, over_limit, request.mutable_payload()->mutable_body());
  ASSERT_EQ(request.ByteSizeLong(), kServerReceiveLimit + 1);
  // Its bytes cannot all leave (the server refuses the message at its
  // prefix, with 3 MiB still to send through a 1 MiB window): the write
  // fails when the call ends.
  EXPECT_FALSE(writer->Write(request));
  const Status status = writer->Finish();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat(
                  "received message of ", kServerReceiveLimit + 1,
                  " bytes exceeds the limit of ", kServerReceiveLimit)));
  EXPECT_THAT(status.message(), HasSubstr("max_receive_message_size"));

  ASSERT_TRUE(sink_returned_.WaitForNotificationWithTimeout(absl::Seconds(60)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(sink_messages_, 1) << "the handler reads the message at the "
                                    "limit, and nothing after it";
  }
  // The connection is still good.
  ExpectSmallEchoWorks();
}

// Server -> client: the same with the client's limit.
TEST_F(ReceiveLimitTest, ResponseOverTheClientsLimitIsResourceExhausted) {
  const size_t at_limit =
      BodySizeFor<StreamingOutputCallResponse>(kClientReceiveLimit);
  const size_t over_limit =
      BodySizeFor<StreamingOutputCallResponse>(kClientReceiveLimit + 1);
  ASSERT_GT(at_limit, 0u);
  ASSERT_GT(over_limit, 0u);
  StreamingOutputCallRequest request;
  request.add_response_parameters()->set_size(static_cast<int32_t>(at_limit));
  request.add_response_parameters()->set_size(static_cast<int32_t>(over_limit));

  ClientContext context;
  auto reader = channel_->ServerStreamingCall<StreamingOutputCallRequest,
                                              StreamingOutputCallResponse>(
      &context, kProduce, request);
  StreamingOutputCallResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.ByteSizeLong(), kClientReceiveLimit);
  EXPECT_EQ(CheckBody(0, at_limit, response.payload().body()), "");
  EXPECT_FALSE(reader->Read(&response));
  const Status status = reader->Finish();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat(
                  "received message of ", kClientReceiveLimit + 1,
                  " bytes exceeds the limit of ", kClientReceiveLimit)));
  EXPECT_THAT(status.message(), HasSubstr("max_receive_message_size"));

  // The server's write of the refused message fails (2 MiB cannot leave
  // through a 1 MiB window once the client has dropped the call), and the
  // handler sees the call cancelled.
  ASSERT_TRUE(
      produce_returned_.WaitForNotificationWithTimeout(absl::Seconds(60)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_THAT(produce_write_results_, ::testing::ElementsAre(true, false));
    EXPECT_TRUE(produce_cancelled_);
  }
  ExpectSmallEchoWorks();
}

}  // namespace
}  // namespace h2rpc
