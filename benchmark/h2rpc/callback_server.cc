// The benchmark's server on h2rpc with callback handlers and reactors
// (server stack "h2rpc"): every call runs on its connection's loop thread,
// with no thread hand-off. The server with synchronous handlers is
// sync_server.cc's.

#include <memory>
#include <string>

#include "benchmark/bench_stack.h"
#include "benchmark/h2rpc/server_start.h"
#include "proto/grpc/testing/benchmark_service.h2rpc.pb.h"
#include "rpc/server.h"

namespace h2rpc::benchmark {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::h2rpc::BenchmarkService;

// StreamingCall: one response per request, until the client half-closes.
class PingPongServer final
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  explicit PingPongServer(RequestCounter* requests) : requests_(requests) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(Status());
      return;
    }
    requests_->Count();
    FillResponse(request_, &response_);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (ok) {
      StartRead(&request_);
    } else {
      Finish(Status(StatusCode::kCancelled, "write failed"));
    }
  }
  void OnDone() override { delete this; }

 private:
  RequestCounter* const requests_;
  SimpleRequest request_;
  SimpleResponse response_;
};

// StreamingBothWays: reads and discards requests; once the first one gives
// the response size, writes responses back to back until the client
// half-closes. Loop thread only, so no locking.
class BothWaysServer final
    : public ServerBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  explicit BothWaysServer(RequestCounter* requests) : requests_(requests) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      reads_done_ = true;
      if (!writing_) Finish(Status());
      return;
    }
    requests_->Count();
    if (!writing_) {
      FillResponse(request_, &response_);
      writing_ = true;
      StartWrite(&response_);
    }
    StartRead(&request_);
  }
  void OnWriteDone(bool ok) override {
    if (ok && !reads_done_) {
      StartWrite(&response_);
      return;
    }
    writing_ = false;
    if (reads_done_) Finish(Status());
  }
  void OnDone() override { delete this; }

 private:
  RequestCounter* const requests_;
  SimpleRequest request_;
  SimpleResponse response_;
  bool writing_ = false;
  bool reads_done_ = false;
};

// StreamingFromServer: writes responses of the size the request asks for
// back to back until a write fails (the client cancelled the stream).
class FromServerServer final : public ServerWriteReactor<SimpleResponse> {
 public:
  FromServerServer(RequestCounter* requests, const SimpleRequest& request) {
    requests->Count();
    FillResponse(request, &response_);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (ok) {
      StartWrite(&response_);
    } else {
      Finish(Status(StatusCode::kCancelled, "write failed"));
    }
  }
  void OnDone() override { delete this; }

 private:
  SimpleResponse response_;
};

// The four methods the workloads use; StreamingFromClient answers
// UNIMPLEMENTED. Every request received is counted in `requests`.
class BenchmarkHandlers final : public BenchmarkService::CallbackService {
 public:
  explicit BenchmarkHandlers(RequestCounter* requests) : requests_(requests) {}
  void UnaryCall(ServerContext*, const SimpleRequest* request,
                 SimpleResponse* response, UnaryDone done) override {
    requests_->Count();
    FillResponse(*request, response);
    done(Status());
  }
  ServerBidiReactor<SimpleRequest, SimpleResponse>* StreamingCall(
      ServerContext*) override {
    return new PingPongServer(requests_);
  }
  ServerWriteReactor<SimpleResponse>* StreamingFromServer(
      ServerContext*, const SimpleRequest* request) override {
    return new FromServerServer(requests_, *request);
  }
  ServerBidiReactor<SimpleRequest, SimpleResponse>* StreamingBothWays(
      ServerContext*) override {
    return new BothWaysServer(requests_);
  }

 private:
  RequestCounter* const requests_;
};

}  // namespace

std::unique_ptr<BenchServer> StartH2rpcServer(const ServerConfig& config,
                                              std::string* error) {
  return StartH2rpcServerOf<BenchmarkHandlers>(config, error);
}

}  // namespace h2rpc::benchmark
