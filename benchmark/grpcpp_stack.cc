// The benchmark's client and server on gRPC C++ (Debian's 1.51) with its
// fastest API, the asynchronous completion-queue API, as gRPC's own QPS
// benchmark uses it: one completion queue per core, each polled by one
// thread, and a state machine per call or stream driven by that thread.
//
// Every completion-queue tag is a Tag inside a per-call object that lives as
// long as the client or server: objects are reused from call to call, so the
// only per-operation allocations are gRPC's own (including a fresh
// ClientContext per unary call, which the API demands; it is constructed in
// place).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/bench_stack.h"
#include "benchmark/cpu_affinity.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc/testing/benchmark_service.grpc.pb.h"

namespace h2rpc::benchmark {
namespace {

using grpc::testing::BenchmarkService;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

grpc_compression_algorithm ToGrpc(CompressionAlgorithm algorithm) {
  switch (algorithm) {
    case CompressionAlgorithm::kIdentity:
      return GRPC_COMPRESS_NONE;
    case CompressionAlgorithm::kDeflate:
      return GRPC_COMPRESS_DEFLATE;
    case CompressionAlgorithm::kGzip:
      return GRPC_COMPRESS_GZIP;
  }
  return GRPC_COMPRESS_NONE;
}

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

// Starts `body` on a new thread that first pins itself to `cpu` (-1: not
// pinned). Returns once the thread is pinned; if it cannot be, the thread
// exits without running `body` and an error is returned (empty on success).
template <typename Body>
std::string StartPinnedThread(int cpu, const char* role, Body body,
                              std::vector<std::thread>* threads) {
  struct Started {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::string error;
  } started;
  threads->emplace_back([cpu, &started, body = std::move(body)]() mutable {
    std::string error =
        cpu >= 0 ? PinThisThread(std::vector<int>{cpu}) : std::string();
    const bool pinned = error.empty();
    {
      // `started` is gone once the starter has seen `done`.
      std::lock_guard<std::mutex> lock(started.mu);
      started.error = std::move(error);
      started.done = true;
      started.cv.notify_one();
    }
    if (pinned) body();
  });
  std::unique_lock<std::mutex> lock(started.mu);
  started.cv.wait(lock, [&started] { return started.done; });
  if (started.error.empty()) return std::string();
  return absl::StrCat("gRPC C++ ", role,
                      " completion queue thread: ", started.error);
}

// ---------------------------------------------------------------------------
// Server

void FillResponse(const SimpleRequest& request, SimpleResponse* response) {
  response->mutable_payload()->mutable_body()->resize(
      static_cast<size_t>(request.response_size()));
}

enum Method { kUnaryMethod = 0, kStreamingMethod, kBothWaysMethod };
constexpr int kNumMethods = 3;

// Calls requested per completion queue and per method at all times: a newly
// matched call is replaced at once (by an idle call object, or a new one), so
// that this many calls per queue can arrive together without waiting for a
// polling thread. gRPC matches an incoming call with a request on any queue.
constexpr int kRequestedCallsPerMethod = 128;

class ServerQueue;

// One server call's state machine, reused call after call. Only the polling
// thread of its queue touches it once the server runs.
class ServerRpc {
 public:
  enum Event : uint8_t { kRequest, kRead, kWrite, kFinish };
  struct Tag {
    ServerRpc* rpc;
    Event event;
  };

  virtual ~ServerRpc() = default;
  ServerRpc(const ServerRpc&) = delete;
  ServerRpc& operator=(const ServerRpc&) = delete;

  // Asks the server for the next call of this method.
  virtual void Request() = 0;
  virtual void Proceed(Event event, bool ok) = 0;

 protected:
  explicit ServerRpc(ServerQueue* queue) : queue_(queue) {}

  ServerQueue* const queue_;
  // Fresh for every call (emplaced by Request()).
  std::optional<grpc::ServerContext> context_;
  Tag request_tag_{this, kRequest};
  Tag read_tag_{this, kRead};
  Tag write_tag_{this, kWrite};
  Tag finish_tag_{this, kFinish};
};

// A server completion queue with its polling thread's state: the call
// objects of all methods and the idle ones, ready to request a call. Its
// calls count every request they receive in `requests` (shared by the
// server's queues).
class ServerQueue {
 public:
  ServerQueue(BenchmarkService::AsyncService* service,
              std::unique_ptr<grpc::ServerCompletionQueue> cq,
              RequestCounter* requests)
      : service_(service), cq_(std::move(cq)), requests_(requests) {}

  BenchmarkService::AsyncService* service() const { return service_; }
  grpc::ServerCompletionQueue* cq() const { return cq_.get(); }
  RequestCounter* requests() const { return requests_; }

  // Requests a call of `method` with an idle object (a new one if none).
  void RequestCall(Method method);
  // `rpc` has finished its call.
  void Recycle(Method method, ServerRpc* rpc) { idle_[method].push_back(rpc); }

  // The polling thread: runs each event's state machine until Shutdown().
  void Poll() {
    void* tag;
    bool ok;
    while (cq_->Next(&tag, &ok)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) continue;  // draining
      ServerRpc::Tag* t = static_cast<ServerRpc::Tag*>(tag);
      t->rpc->Proceed(t->event, ok);
    }
  }
  // Once the server is shut down: no event is processed from now on (so no
  // operation is started on the queue), then the queue is shut down.
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cq_->Shutdown();
  }
  // Drains a queue no thread polls (one whose thread could not be pinned);
  // returns at once if already drained.
  void Drain() {
    void* tag;
    bool ok;
    while (cq_->Next(&tag, &ok)) {
    }
  }
  // After Drain(): frees the call objects (and their calls).
  void FreeCalls() {
    for (std::vector<ServerRpc*>& idle : idle_) idle.clear();
    rpcs_.clear();
  }

 private:
  BenchmarkService::AsyncService* const service_;
  const std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  RequestCounter* const requests_;
  std::mutex mu_;         // held while an event is processed
  bool stopped_ = false;  // guarded by mu_
  // Polling thread only (or before it starts, after it ends).
  std::vector<std::unique_ptr<ServerRpc>> rpcs_;
  std::vector<ServerRpc*> idle_[kNumMethods];
};

// UnaryCall.
class UnaryRpc final : public ServerRpc {
 public:
  explicit UnaryRpc(ServerQueue* queue) : ServerRpc(queue) {}
  ~UnaryRpc() override { responder_.reset(); }

  void Request() override {
    responder_.reset();
    context_.emplace();
    responder_.emplace(&*context_);
    queue_->service()->RequestUnaryCall(&*context_, &request_, &*responder_,
                                        queue_->cq(), queue_->cq(),
                                        &request_tag_);
  }
  void Proceed(Event event, bool ok) override {
    switch (event) {
      case kRequest:
        if (!ok) return;  // the server is shutting down
        queue_->RequestCall(kUnaryMethod);
        queue_->requests()->Count();
        FillResponse(request_, &response_);
        responder_->Finish(response_, grpc::Status::OK, &finish_tag_);
        return;
      case kFinish:
        queue_->Recycle(kUnaryMethod, this);
        return;
      default:
        return;
    }
  }

 private:
  std::optional<grpc::ServerAsyncResponseWriter<SimpleResponse>> responder_;
  SimpleRequest request_;
  SimpleResponse response_;
};

// StreamingCall: one response per request, until the client half-closes.
class PingPongRpc final : public ServerRpc {
 public:
  explicit PingPongRpc(ServerQueue* queue) : ServerRpc(queue) {}
  ~PingPongRpc() override { stream_.reset(); }

  void Request() override {
    stream_.reset();
    context_.emplace();
    stream_.emplace(&*context_);
    queue_->service()->RequestStreamingCall(&*context_, &*stream_, queue_->cq(),
                                            queue_->cq(), &request_tag_);
  }
  void Proceed(Event event, bool ok) override {
    switch (event) {
      case kRequest:
        if (!ok) return;  // the server is shutting down
        queue_->RequestCall(kStreamingMethod);
        stream_->Read(&request_, &read_tag_);
        return;
      case kRead:
        if (!ok) {
          stream_->Finish(grpc::Status::OK, &finish_tag_);
          return;
        }
        queue_->requests()->Count();
        FillResponse(request_, &response_);
        stream_->Write(response_, &write_tag_);
        return;
      case kWrite:
        if (ok) {
          stream_->Read(&request_, &read_tag_);
        } else {
          stream_->Finish(
              grpc::Status(grpc::StatusCode::CANCELLED, "write failed"),
              &finish_tag_);
        }
        return;
      case kFinish:
        queue_->Recycle(kStreamingMethod, this);
        return;
    }
  }

 private:
  std::optional<grpc::ServerAsyncReaderWriter<SimpleResponse, SimpleRequest>>
      stream_;
  SimpleRequest request_;
  SimpleResponse response_;
};

// StreamingBothWays: reads and discards requests; once the first one gives
// the response size, writes responses back to back until the client
// half-closes, then finishes once no write is outstanding.
class BothWaysRpc final : public ServerRpc {
 public:
  explicit BothWaysRpc(ServerQueue* queue) : ServerRpc(queue) {}
  ~BothWaysRpc() override { stream_.reset(); }

  void Request() override {
    stream_.reset();
    context_.emplace();
    stream_.emplace(&*context_);
    writing_ = false;
    reads_done_ = false;
    queue_->service()->RequestStreamingBothWays(
        &*context_, &*stream_, queue_->cq(), queue_->cq(), &request_tag_);
  }
  void Proceed(Event event, bool ok) override {
    switch (event) {
      case kRequest:
        if (!ok) return;  // the server is shutting down
        queue_->RequestCall(kBothWaysMethod);
        stream_->Read(&request_, &read_tag_);
        return;
      case kRead:
        if (!ok) {
          reads_done_ = true;
          if (!writing_) stream_->Finish(grpc::Status::OK, &finish_tag_);
          return;
        }
        queue_->requests()->Count();
        if (!writing_) {
          FillResponse(request_, &response_);
          writing_ = true;
          stream_->Write(response_, &write_tag_);
        }
        stream_->Read(&request_, &read_tag_);
        return;
      case kWrite:
        if (ok && !reads_done_) {
          stream_->Write(response_, &write_tag_);
          return;
        }
        writing_ = false;
        if (reads_done_) stream_->Finish(grpc::Status::OK, &finish_tag_);
        return;
      case kFinish:
        queue_->Recycle(kBothWaysMethod, this);
        return;
    }
  }

 private:
  std::optional<grpc::ServerAsyncReaderWriter<SimpleResponse, SimpleRequest>>
      stream_;
  SimpleRequest request_;
  SimpleResponse response_;
  bool writing_ = false;
  bool reads_done_ = false;
};

void ServerQueue::RequestCall(Method method) {
  ServerRpc* rpc;
  if (!idle_[method].empty()) {
    rpc = idle_[method].back();
    idle_[method].pop_back();
  } else {
    switch (method) {
      case kUnaryMethod:
        rpcs_.push_back(std::make_unique<UnaryRpc>(this));
        break;
      case kStreamingMethod:
        rpcs_.push_back(std::make_unique<PingPongRpc>(this));
        break;
      case kBothWaysMethod:
        rpcs_.push_back(std::make_unique<BothWaysRpc>(this));
        break;
    }
    rpc = rpcs_.back().get();
  }
  rpc->Request();
}

class GrpcppServer final : public BenchServer {
 public:
  GrpcppServer() = default;
  ~GrpcppServer() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() +
                        std::chrono::seconds(5));
    }
    for (auto& queue : queues_) queue->Shutdown();
    for (std::thread& thread : threads_) thread.join();
    for (auto& queue : queues_) queue->Drain();
    // Calls first (their contexts hold the core calls), then the queues,
    // then the server, then the service (declared first).
    for (auto& queue : queues_) queue->FreeCalls();
    queues_.clear();
    server_.reset();
  }
  int port() const override { return port_; }
  int64_t requests() const override { return requests_.Get(); }

  // Empty on success.
  std::string Start(const ServerConfig& config) {
    const int num_queues =
        config.cpus.empty() ? 1 : static_cast<int>(config.cpus.size());
    {
      ScopedAffinity affinity(config.cpus);
      if (!affinity.error().empty()) return affinity.error();
      std::shared_ptr<grpc::ServerCredentials> credentials =
          grpc::InsecureServerCredentials();
      if (config.secure) {
        grpc::SslServerCredentialsOptions ssl;
        ssl.pem_key_cert_pairs.push_back(
            {config.pem_private_key, config.pem_cert_chain});
        credentials = grpc::SslServerCredentials(ssl);
      }
      grpc::ServerBuilder builder;
      builder.AddListeningPort(config.address, credentials, &port_);
      builder.RegisterService(&service_);
      builder.SetDefaultCompressionAlgorithm(ToGrpc(config.compression));
      builder.SetMaxReceiveMessageSize(kMaxBenchMessageSize);
      for (int i = 0; i < num_queues; ++i) {
        queues_.push_back(std::make_unique<ServerQueue>(
            &service_, builder.AddCompletionQueue(), &requests_));
      }
      server_ = builder.BuildAndStart();
    }
    const bool unix_socket = absl::StartsWith(config.address, "unix:") ||
                             absl::StartsWith(config.address, "unix-abstract:");
    if (server_ == nullptr || (port_ == 0 && !unix_socket)) {
      return absl::StrCat("cannot start the gRPC C++ server on ",
                          config.address, config.secure ? " (TLS)" : "");
    }
    if (unix_socket) port_ = 0;  // gRPC C++ reports 1
    for (auto& queue : queues_) {
      for (int method = 0; method < kNumMethods; ++method) {
        for (int i = 0; i < kRequestedCallsPerMethod; ++i) {
          queue->RequestCall(static_cast<Method>(method));
        }
      }
    }
    for (int i = 0; i < num_queues; ++i) {
      ServerQueue* queue = queues_[i].get();
      const int cpu = config.cpus.empty() ? -1 : config.cpus[i];
      std::string error = StartPinnedThread(
          cpu, "server", [queue] { queue->Poll(); }, &threads_);
      if (!error.empty()) return error;
    }
    return std::string();
  }

 private:
  BenchmarkService::AsyncService service_;
  RequestCounter requests_;  // outlives the queues
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::unique_ptr<ServerQueue>> queues_;
  std::vector<std::thread> threads_;
  int port_ = 0;  // 0 on a unix-domain socket
};

// ---------------------------------------------------------------------------
// Client

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

std::unique_ptr<BenchServer> StartGrpcppServer(const ServerConfig& config,
                                               std::string* error) {
  auto server = std::make_unique<GrpcppServer>();
  std::string start_error = server->Start(config);
  if (!start_error.empty()) {
    *error = std::move(start_error);
    return nullptr;
  }
  return server;
}

std::unique_ptr<BenchClient> NewGrpcppClient(const ClientConfig& config,
                                             OpStats* stats) {
  return std::make_unique<GrpcppClient>(config, stats);
}

}  // namespace h2rpc::benchmark
