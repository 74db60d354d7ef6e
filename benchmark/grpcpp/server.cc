// The benchmark's server on gRPC C++ (Debian's 1.51) with its fastest API,
// the asynchronous completion-queue API, as gRPC's own QPS benchmark uses it
// (test/cpp/qps/server_async.cc): one completion queue per core, each polled
// by one thread, and a state machine per call driven by that thread. Call
// objects are reused from call to call, so the only per-call allocations
// are gRPC's own.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

void FillResponse(const SimpleRequest& request, SimpleResponse* response) {
  response->mutable_payload()->mutable_body()->resize(
      static_cast<size_t>(request.response_size()));
}

enum Method {
  kUnaryMethod = 0,
  kStreamingMethod,
  kBothWaysMethod,
  kFromServerMethod
};
constexpr int kNumMethods = 4;

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

// StreamingFromServer: writes responses of the size the request asks for
// back to back until a write fails (the client cancelled the stream).
class FromServerRpc final : public ServerRpc {
 public:
  explicit FromServerRpc(ServerQueue* queue) : ServerRpc(queue) {}
  ~FromServerRpc() override { writer_.reset(); }

  void Request() override {
    writer_.reset();
    context_.emplace();
    writer_.emplace(&*context_);
    queue_->service()->RequestStreamingFromServer(&*context_, &request_,
                                                  &*writer_, queue_->cq(),
                                                  queue_->cq(), &request_tag_);
  }
  void Proceed(Event event, bool ok) override {
    switch (event) {
      case kRequest:
        if (!ok) return;  // the server is shutting down
        queue_->RequestCall(kFromServerMethod);
        queue_->requests()->Count();
        FillResponse(request_, &response_);
        writer_->Write(response_, &write_tag_);
        return;
      case kWrite:
        if (ok) {
          writer_->Write(response_, &write_tag_);
        } else {
          writer_->Finish(
              grpc::Status(grpc::StatusCode::CANCELLED, "write failed"),
              &finish_tag_);
        }
        return;
      case kFinish:
        queue_->Recycle(kFromServerMethod, this);
        return;
      default:
        return;
    }
  }

 private:
  std::optional<grpc::ServerAsyncWriter<SimpleResponse>> writer_;
  SimpleRequest request_;
  SimpleResponse response_;
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
      case kFromServerMethod:
        rpcs_.push_back(std::make_unique<FromServerRpc>(this));
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

}  // namespace h2rpc::benchmark
