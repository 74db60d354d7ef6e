// The benchmark's server on h2rpc with callback handlers and reactors
// (server stack "h2rpc"): every call runs on its connection's loop thread,
// with no thread hand-off. The server with synchronous handlers is
// sync_server.cc's.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/bench_stack.h"
#include "benchmark/h2rpc/load_reporter.h"
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
  BenchmarkHandlers(RequestCounter* requests, const ServerConfig& config)
      : requests_(requests),
        work_per_call_(config.work_per_call),
        fail_percent_(config.fail_percent),
        load_reporter_(
            config.orca ? std::make_unique<LoadReporter>(requests, &busy_nanos_)
                        : nullptr) {}
  void UnaryCall(ServerContext* context, const SimpleRequest* request,
                 SimpleResponse* response, UnaryDone done) override {
    requests_->Count();
    if (work_per_call_ > absl::ZeroDuration()) Occupy(work_per_call_);
    if (load_reporter_ != nullptr) load_reporter_->AttachTo(context);
    // Evenly spread: the first fail_percent_ of each 100 calls fail.
    if (fail_percent_ > 0 &&
        unary_calls_.fetch_add(1, std::memory_order_relaxed) % 100 <
            static_cast<uint64_t>(fail_percent_)) {
      done(Status(StatusCode::kUnavailable,
                  "--server_fail_percent fails this call"));
      return;
    }
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
  // Holds the loop (and so the connection's other calls) for `work`,
  // sleeping: the server serves at most one call per `work`, the capacity
  // of a backend that takes `work` per call, without taking CPU from the
  // others on a small machine. Counted as busy time.
  void Occupy(absl::Duration work) {
    const absl::Time start = absl::Now();
    absl::SleepFor(work);
    busy_nanos_.fetch_add(absl::ToInt64Nanoseconds(absl::Now() - start),
                          std::memory_order_relaxed);
  }

  RequestCounter* const requests_;
  const absl::Duration work_per_call_;
  const int fail_percent_;
  std::atomic<uint64_t> unary_calls_{0};
  std::atomic<int64_t> busy_nanos_{0};
  const std::unique_ptr<LoadReporter> load_reporter_;
};

}  // namespace

std::unique_ptr<BenchServer> StartH2rpcServer(const ServerConfig& config,
                                              std::string* error) {
  return StartH2rpcServerOf<BenchmarkHandlers>(config, error, config);
}

}  // namespace h2rpc::benchmark
