// The benchmark's server on h2rpc with synchronous handlers (server stack
// "h2rpc_sync"): the generated BenchmarkService::Service, as most
// applications write it. Each call's handler runs on one of the server's
// worker threads ("h2rpc-worker", counted as the server's, see
// test/util/allocation_counter.h): a unary call is handed from its loop to a
// worker and back; a stream holds a worker for its whole life, so a run needs a
// worker per stream (ServerOptions::max_sync_threads, 256, bounds the streams).
#include <pthread.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "benchmark/bench_stack.h"
#include "benchmark/h2rpc/server_start.h"
#include "proto/grpc/testing/benchmark_service.h2rpc.pb.h"
#include "rpc/server.h"

namespace h2rpc::benchmark {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::h2rpc::BenchmarkService;

// The four methods the workloads use; StreamingFromClient answers
// UNIMPLEMENTED.
// Every request received is counted in `requests`. The worker threads run
// on the server's CPUs: StartH2rpcBenchServer builds the server on a thread
// pinned to them, and every worker the pool starts gets the CPUs of the
// thread that built it.
class SyncBenchmarkHandlers final : public BenchmarkService::Service {
 public:
  explicit SyncBenchmarkHandlers(RequestCounter* requests)
      : requests_(requests) {}

  Status UnaryCall(ServerContext*, const SimpleRequest* request,
                   SimpleResponse* response) override {
    requests_->Count();
    FillResponse(*request, response);
    return Status();
  }

  // Ping-pong: one response per request, until the client half-closes.
  Status StreamingCall(
      ServerContext*,
      ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) override {
    SimpleRequest request;
    SimpleResponse response;
    while (stream->Read(&request)) {
      requests_->Count();
      FillResponse(request, &response);
      if (!stream->Write(response)) {
        return Status(StatusCode::kCancelled, "write failed");
      }
    }
    return Status();
  }

  // Writes responses of the size the request asks for back to back until a
  // write fails (the client cancelled the stream).
  Status StreamingFromServer(ServerContext*, const SimpleRequest* request,
                             ServerWriter<SimpleResponse>* writer) override {
    requests_->Count();
    SimpleResponse response;
    FillResponse(*request, &response);
    while (writer->Write(response)) {
    }
    return Status(StatusCode::kCancelled, "write failed");
  }

  // Reads and discards requests; once the first one gives the response
  // size, writes responses back to back until the client half-closes. A
  // blocking stream reads and writes independently only from two threads
  // (one read and one write may be outstanding at once, from any thread):
  // a reader thread of the stream's own, named as a worker so that it
  // counts as the server's, reads while the handler's thread writes.
  Status StreamingBothWays(
      ServerContext*,
      ServerReaderWriter<SimpleResponse, SimpleRequest>* stream) override {
    SimpleRequest request;
    if (!stream->Read(&request)) return Status();
    requests_->Count();
    SimpleResponse response;
    FillResponse(request, &response);
    std::atomic<bool> reads_done{false};
    std::thread reader([this, stream, &reads_done] {
      // Inherits the worker's affinity.
      pthread_setname_np(pthread_self(), "h2rpc-worker-rd");
      SimpleRequest next;
      while (stream->Read(&next)) requests_->Count();
      reads_done.store(true, std::memory_order_relaxed);
    });
    while (!reads_done.load(std::memory_order_relaxed) &&
           stream->Write(response)) {
    }
    reader.join();
    return Status();
  }

 private:
  RequestCounter* const requests_;
};

}  // namespace

std::unique_ptr<BenchServer> StartH2rpcSyncServer(const ServerConfig& config,
                                                  std::string* error) {
  return StartH2rpcServerOf<SyncBenchmarkHandlers>(config, error);
}

}  // namespace h2rpc::benchmark
