// The benchmark's client on gRPC C++ (Debian's 1.51) with its fastest API,
// the asynchronous completion-queue API, as gRPC's own QPS benchmark uses it
// (test/cpp/qps/client_async.cc): one completion queue per core, each polled
// by one thread, and a closed loop per call or stream driven by that thread.
// Loop objects live as long as the client, so the only per-operation
// allocations are gRPC's own (including a fresh ClientContext per unary
// call, which the API demands; it is constructed in place).

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/bench_stack.h"
#include "benchmark/cpu_affinity.h"
#include "benchmark/grpcpp/common.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc/testing/benchmark_service.grpc.pb.h"

namespace h2rpc::benchmark {
namespace {

using grpc::testing::BenchmarkService;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN_CODE";
  }
}

// "CODE: message", like h2rpc::Status::ToString().
std::string StatusText(const grpc::Status& status) {
  if (status.ok()) return "OK";
  return absl::StrCat(StatusCodeName(status.error_code()), ": ",
                      status.error_message());
}

struct ClientShared {
  OpStats* stats = nullptr;
  grpc_compression_algorithm compression = GRPC_COMPRESS_NONE;
  SimpleRequest request;
  std::string target;
  std::string lb_policy;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string ssl_target_name_override;  // secure only; empty: none
  std::atomic<int64_t> next_channel{0};
  std::atomic<bool> stopping{false};
  Outstanding outstanding;
};

// A channel of its own, hence connections of its own (to the target's
// addresses, as the lb_policy connects them): no subchannel shared with
// another channel, and a distinct argument so that no two channels are
// equal. Any thread.
std::shared_ptr<grpc::Channel> NewChannel(ClientShared* shared) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetLoadBalancingPolicyName(shared->lb_policy);
  args.SetMaxReceiveMessageSize(kMaxBenchMessageSize);
  args.SetString("h2rpc.benchmark.channel",
                 absl::StrCat(shared->next_channel.fetch_add(1)));
  if (!shared->ssl_target_name_override.empty()) {
    args.SetSslTargetNameOverride(shared->ssl_target_name_override);
  }
  return grpc::CreateCustomChannel(shared->target, shared->credentials, args);
}

// One closed loop: a state machine driven by the polling thread of its
// completion queue (and started by Start()'s caller).
class ClientLoop {
 public:
  enum Event : uint8_t { kStart, kRead, kWrite, kWritesDone, kFinish };
  struct Tag {
    ClientLoop* loop;
    Event event;
  };

  ClientLoop(BenchmarkService::Stub* stub, grpc::CompletionQueue* cq,
             ClientShared* shared)
      : stub_(stub), cq_(cq), shared_(shared) {}
  virtual ~ClientLoop() = default;
  ClientLoop(const ClientLoop&) = delete;
  ClientLoop& operator=(const ClientLoop&) = delete;

  virtual void Start() = 0;
  virtual void Proceed(Event event, bool ok) = 0;

 protected:
  bool stopping() const {
    return shared_->stopping.load(std::memory_order_relaxed);
  }

  BenchmarkService::Stub* const stub_;
  grpc::CompletionQueue* const cq_;
  ClientShared* const shared_;
  Tag start_tag_{this, kStart};
  Tag read_tag_{this, kRead};
  Tag write_tag_{this, kWrite};
  Tag writes_done_tag_{this, kWritesDone};
  Tag finish_tag_{this, kFinish};
};

// Unary: each completion starts the next call, with a fresh ClientContext.
class UnaryLoop final : public ClientLoop {
 public:
  using ClientLoop::ClientLoop;
  ~UnaryLoop() override { reader_.reset(); }  // lives in the call's arena

  void Start() override { Issue(); }
  void Proceed(Event event, bool ok) override {
    if (status_.ok()) {
      shared_->stats->RecordRoundTrip(absl::Now() - start_);
    } else {
      shared_->stats->RecordError(StatusText(status_));
    }
    Issue();
  }

 private:
  void Issue() {
    if (stopping()) {
      shared_->outstanding.Done();
      return;
    }
    reader_.reset();
    context_.emplace();
    if (shared_->compression != GRPC_COMPRESS_NONE) {
      context_->set_compression_algorithm(shared_->compression);
    }
    start_ = absl::Now();
    reader_ = stub_->AsyncUnaryCall(&*context_, shared_->request, cq_);
    reader_->Finish(&response_, &status_, &finish_tag_);
  }

  std::optional<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<SimpleResponse>> reader_;
  SimpleResponse response_;
  grpc::Status status_;
  absl::Time start_;
};

// Handshake: each op makes a channel of its own (NewChannel: a new
// connection, with its TLS handshake when secure), one unary call on it with
// a fresh ClientContext, and drops the channel, which closes the connection.
// The channel is made and dropped on the queue's polling thread.
class HandshakeLoop final : public ClientLoop {
 public:
  HandshakeLoop(grpc::CompletionQueue* cq, ClientShared* shared)
      : ClientLoop(nullptr, cq, shared) {}
  ~HandshakeLoop() override { Close(); }

  void Start() override { Issue(); }
  void Proceed(Event event, bool ok) override {
    if (status_.ok()) {
      shared_->stats->RecordRoundTrip(absl::Now() - start_);
    } else {
      shared_->stats->RecordError(StatusText(status_));
    }
    Issue();
  }

 private:
  // The call (in its arena), then its context, then the channel.
  void Close() {
    reader_.reset();
    context_.reset();
    op_stub_.reset();
    op_channel_.reset();
  }
  void Issue() {
    Close();
    if (stopping()) {
      shared_->outstanding.Done();
      return;
    }
    start_ = absl::Now();
    op_channel_ = NewChannel(shared_);
    op_stub_ = BenchmarkService::NewStub(op_channel_);
    context_.emplace();
    if (shared_->compression != GRPC_COMPRESS_NONE) {
      context_->set_compression_algorithm(shared_->compression);
    }
    reader_ = op_stub_->AsyncUnaryCall(&*context_, shared_->request, cq_);
    reader_->Finish(&response_, &status_, &finish_tag_);
  }

  std::shared_ptr<grpc::Channel> op_channel_;
  std::unique_ptr<BenchmarkService::Stub> op_stub_;
  std::optional<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<SimpleResponse>> reader_;
  SimpleResponse response_;
  grpc::Status status_;
  absl::Time start_;
};

using ClientStream =
    grpc::ClientAsyncReaderWriter<SimpleRequest, SimpleResponse>;

// What the two stream loops share: starting the stream, finishing it, and
// the end of the loop once Finish() has completed.
class StreamLoop : public ClientLoop {
 public:
  using ClientLoop::ClientLoop;
  ~StreamLoop() override { stream_.reset(); }  // lives in the call's arena

  void Start() override {
    if (shared_->compression != GRPC_COMPRESS_NONE) {
      context_.set_compression_algorithm(shared_->compression);
    }
    stream_ = stub_->AsyncStreamingCall(&context_, cq_, &start_tag_);
  }

 protected:
  void Finish() { stream_->Finish(&status_, &finish_tag_); }
  // kFinish: the stream is over.
  void Finished() {
    if (!status_.ok()) shared_->stats->RecordError(StatusText(status_));
    shared_->outstanding.Done();  // the last touch of this loop
  }

  grpc::ClientContext context_;
  std::unique_ptr<ClientStream> stream_;
  SimpleResponse response_;
  grpc::Status status_;
};

// Streaming: one ping-pong stream. A round writes a request and reads its
// response; the next round starts once both have completed. On Stop(), the
// stream half-closes, reads to the end and finishes.
class PingPongLoop final : public StreamLoop {
 public:
  using StreamLoop::StreamLoop;

  void Proceed(Event event, bool ok) override {
    switch (event) {
      case kStart:
        if (!ok) {
          Finish();
        } else {
          Next();
        }
        return;
      case kRead:
        if (closing_) {
          if (ok) {  // not expected: read on to the end of the stream
            stream_->Read(&response_, &read_tag_);
            return;
          }
        } else if (ok) {
          shared_->stats->RecordRoundTrip(absl::Now() - start_);
        }
        Step(ok);
        return;
      case kWrite:
      case kWritesDone:
        Step(ok);
        return;
      case kFinish:
        Finished();
        return;
    }
  }

 private:
  // One of the round's (or the closing's) two operations has completed.
  void Step(bool ok) {
    if (!closing_) ok_ = ok_ && ok;
    if (--pending_ > 0) return;
    if (closing_) {
      Finish();
    } else {
      Next();
    }
  }
  void Next() {
    if (!ok_) {
      Finish();
    } else if (!stopping()) {
      pending_ = 2;
      start_ = absl::Now();
      stream_->Write(shared_->request, &write_tag_);
      stream_->Read(&response_, &read_tag_);
    } else {
      closing_ = true;
      pending_ = 2;
      stream_->WritesDone(&writes_done_tag_);
      stream_->Read(&response_, &read_tag_);  // sees the end of the stream
    }
  }
  absl::Time start_;
  int pending_ = 0;
  bool ok_ = true;
  bool closing_ = false;
};

// Unconstrained: one stream writing back to back and reading back to back,
// independently. On Stop(), the next completed write half-closes; the stream
// finishes once the write side is closed and the read side has ended.
class BothWaysLoop final : public StreamLoop {
 public:
  using StreamLoop::StreamLoop;

  void Proceed(Event event, bool ok) override {
    switch (event) {
      case kStart:
        if (!ok) {
          Finish();
          return;
        }
        writing_ = true;
        reading_ = true;
        stream_->Write(shared_->request, &write_tag_);
        stream_->Read(&response_, &read_tag_);
        return;
      case kWrite:
        if (!ok) {
          writing_ = false;
          MaybeFinish();
          return;
        }
        shared_->stats->CountSend();
        if (stopping()) {
          stream_->WritesDone(&writes_done_tag_);
        } else {
          stream_->Write(shared_->request, &write_tag_);
        }
        return;
      case kWritesDone:
        writing_ = false;
        MaybeFinish();
        return;
      case kRead:
        if (!ok) {
          reading_ = false;
          MaybeFinish();
          return;
        }
        shared_->stats->CountRecv();
        stream_->Read(&response_, &read_tag_);
        return;
      case kFinish:
        Finished();
        return;
    }
  }

 private:
  void MaybeFinish() {
    if (!writing_ && !reading_) Finish();
  }
  bool writing_ = false;
  bool reading_ = false;
};

// Server streaming: one request, then reads back to back. On Stop(), the
// next completed read cancels the stream; the CANCELLED it finishes with is
// the expected end, not an error.
class FromServerLoop final : public ClientLoop {
 public:
  using ClientLoop::ClientLoop;
  ~FromServerLoop() override { reader_.reset(); }  // lives in the call's arena

  void Start() override {
    if (shared_->compression != GRPC_COMPRESS_NONE) {
      context_.set_compression_algorithm(shared_->compression);
    }
    reader_ = stub_->AsyncStreamingFromServer(&context_, shared_->request, cq_,
                                              &start_tag_);
  }
  void Proceed(Event event, bool ok) override {
    switch (event) {
      case kStart:
      case kRead:
        if (!ok) {
          reader_->Finish(&status_, &finish_tag_);
          return;
        }
        if (event == kRead) shared_->stats->CountRecv();
        if (event == kRead && stopping() && !cancelled_) {
          cancelled_ = true;
          context_.TryCancel();
        }
        reader_->Read(&response_, &read_tag_);  // fails once cancelled
        return;
      case kFinish:
        if (!status_.ok() && !(cancelled_ && status_.error_code() ==
                                                 grpc::StatusCode::CANCELLED)) {
          shared_->stats->RecordError(StatusText(status_));
        }
        shared_->outstanding.Done();  // the last touch of this loop
        return;
      default:
        return;
    }
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientAsyncReader<SimpleResponse>> reader_;
  SimpleResponse response_;
  grpc::Status status_;
  bool cancelled_ = false;
};

class GrpcppClient final : public BenchClient {
 public:
  GrpcppClient(const ClientConfig& config, OpStats* stats) : config_(config) {
    shared_.stats = stats;
    shared_.compression = ToGrpc(config.compression);
    shared_.request.mutable_payload()->set_body(
        std::string(static_cast<size_t>(config.req_size), 'q'));
    shared_.request.set_response_size(config.resp_size);
    shared_.target = config.target;
    shared_.lb_policy = config.lb_policy;
    if (config.secure) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = config.pem_root_certs;
      shared_.credentials = grpc::SslCredentials(ssl);
      shared_.ssl_target_name_override = config.ssl_target_name_override;
    } else {
      shared_.credentials = grpc::InsecureChannelCredentials();
    }

    ScopedAffinity affinity(config.cpus);
    init_error_ = affinity.error();
    if (config.workload != Workload::kHandshake) {
      for (int i = 0; i < std::max(1, config.connections); ++i) {
        stubs_.push_back(BenchmarkService::NewStub(NewChannel(&shared_)));
      }
    }
    const int num_queues =
        config.cpus.empty() ? 1 : static_cast<int>(config.cpus.size());
    // Seen with Debian's gRPC C++ 1.51 (both with one and with two streams
    // per completion queue): on a compressed bidi stream that writes back to
    // back, a Write() can stop returning (its ExecCtx flush keeps compressing
    // and sending), and no operation completes. Refuse the run rather than
    // report zero.
    if (init_error_.empty() && config.workload == Workload::kUnconstrained &&
        config.compression != CompressionAlgorithm::kIdentity) {
      init_error_ =
          "the gRPC C++ client does not run unconstrained streams with "
          "compression: gRPC C++ 1.51 livelocks in Write()";
    }
    for (int i = 0; i < num_queues; ++i) {
      cqs_.push_back(std::make_unique<grpc::CompletionQueue>());
      grpc::CompletionQueue* cq = cqs_.back().get();
      const int cpu = config.cpus.empty() ? -1 : config.cpus[i];
      std::string error = StartPinnedThread(
          cpu, "client",
          [this, cq] {
            WaitForStart();
            Poll(cq);
          },
          &threads_);
      if (init_error_.empty()) init_error_ = std::move(error);
    }
  }

  ~GrpcppClient() override {
    Stop();
    OpenStartGate();  // for threads of a client never started
    // Every call is over: nothing starts an operation any more.
    for (auto& cq : cqs_) cq->Shutdown();
    for (std::thread& thread : threads_) thread.join();
    for (auto& cq : cqs_) {  // a queue whose thread could not be pinned
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) {
      }
    }
  }

  void Start() override {
    if (!init_error_.empty()) {
      // Like calls on a channel that cannot run: each loop fails.
      for (int i = 0; i < config_.concurrency; ++i) {
        shared_.stats->RecordError(init_error_);
      }
      return;
    }
    const size_t first = loops_.size();
    for (int i = 0; i < config_.concurrency; ++i) {
      BenchmarkService::Stub* stub =
          stubs_.empty() ? nullptr : stubs_[i % stubs_.size()].get();
      grpc::CompletionQueue* cq = cqs_[i % cqs_.size()].get();
      switch (config_.workload) {
        case Workload::kUnary:
          loops_.push_back(std::make_unique<UnaryLoop>(stub, cq, &shared_));
          break;
        case Workload::kStreaming:
          loops_.push_back(std::make_unique<PingPongLoop>(stub, cq, &shared_));
          break;
        case Workload::kUnconstrained:
          loops_.push_back(std::make_unique<BothWaysLoop>(stub, cq, &shared_));
          break;
        case Workload::kStreamingFromServer:
          loops_.push_back(
              std::make_unique<FromServerLoop>(stub, cq, &shared_));
          break;
        case Workload::kHandshake:
          loops_.push_back(std::make_unique<HandshakeLoop>(cq, &shared_));
          break;
      }
    }
    // Each loop's first operation is started here; the polling threads run
    // completions only once the gate is open, which makes this thread's
    // writes visible to them in a way ThreadSanitizer sees (gRPC's own
    // synchronisation is not instrumented).
    for (size_t i = first; i < loops_.size(); ++i) {
      shared_.outstanding.Add();
      loops_[i]->Start();
    }
    OpenStartGate();
  }

  void Stop() override {
    shared_.stopping.store(true);
    shared_.outstanding.WaitForZero();
  }

 private:
  void OpenStartGate() {
    std::lock_guard<std::mutex> lock(start_mu_);
    started_ = true;
    start_cv_.notify_all();
  }
  void WaitForStart() {
    std::unique_lock<std::mutex> lock(start_mu_);
    start_cv_.wait(lock, [this] { return started_; });
  }
  static void Poll(grpc::CompletionQueue* cq) {
    void* tag;
    bool ok;
    while (cq->Next(&tag, &ok)) {
      ClientLoop::Tag* t = static_cast<ClientLoop::Tag*>(tag);
      t->loop->Proceed(t->event, ok);
    }
  }

  const ClientConfig config_;
  ClientShared shared_;
  std::string init_error_;
  std::mutex start_mu_;
  std::condition_variable start_cv_;
  bool started_ = false;  // guarded by start_mu_
  std::vector<std::unique_ptr<BenchmarkService::Stub>> stubs_;
  std::vector<std::unique_ptr<grpc::CompletionQueue>> cqs_;
  std::vector<std::thread> threads_;
  // Destroyed first: their contexts and streams, once every call is over.
  std::vector<std::unique_ptr<ClientLoop>> loops_;
};

}  // namespace

std::unique_ptr<BenchClient> NewGrpcppClient(const ClientConfig& config,
                                             OpStats* stats) {
  return std::make_unique<GrpcppClient>(config, stats);
}

}  // namespace h2rpc::benchmark
