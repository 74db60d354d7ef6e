// The benchmark's server on h2rpc with coroutine handlers (server stack
// "h2rpc_coro", //rpc/coro): the generated BenchmarkService::CoroService,
// every handler a coroutine on its connection's loop thread. The same
// workloads as the callback server (callback_server.cc), written as
// straight-line code.

#include <memory>
#include <string>

#include "benchmark/bench_stack.h"
#include "benchmark/h2rpc/server_start.h"
#include "proto/grpc/testing/benchmark_service.h2rpc_coro.pb.h"
#include "rpc/coro/event.h"
#include "rpc/coro/server.h"
#include "rpc/coro/task.h"

namespace h2rpc::benchmark {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::h2rpc::BenchmarkService;

using BidiStream = coro::ServerReaderWriter<SimpleResponse, SimpleRequest>;

// StreamingBothWays's writer: writes `response` back to back until a write
// fails or the reader has seen the client half-close.
coro::Task<void> WriteUntil(BidiStream* stream, const SimpleResponse* response,
                            const bool* reads_done) {
  while (!*reads_done) {
    const bool written = co_await stream->Write(*response);
    if (!written) break;
  }
}

// The four methods the workloads use; StreamingFromClient answers
// UNIMPLEMENTED (the generated default). Every request received is counted
// in `requests`.
class CoroBenchmarkHandlers final : public BenchmarkService::CoroService {
 public:
  explicit CoroBenchmarkHandlers(RequestCounter* requests)
      : requests_(requests) {}

  coro::Task<Status> UnaryCall(ServerContext*, const SimpleRequest* request,
                               SimpleResponse* response) override {
    requests_->Count();
    FillResponse(*request, response);
    co_return Status();
  }

  // One response per request, until the client half-closes.
  coro::Task<Status> StreamingCall(ServerContext*,
                                   BidiStream* stream) override {
    SimpleRequest request;
    SimpleResponse response;
    while (true) {
      const bool read = co_await stream->Read(&request);
      if (!read) break;
      requests_->Count();
      FillResponse(request, &response);
      const bool written = co_await stream->Write(response);
      if (!written) co_return Status(StatusCode::kCancelled, "write failed");
    }
    co_return Status();
  }

  // Responses back to back until a write fails (the client cancelled).
  coro::Task<Status> StreamingFromServer(
      ServerContext*, const SimpleRequest* request,
      coro::ServerWriter<SimpleResponse>* writer) override {
    requests_->Count();
    SimpleResponse response;
    FillResponse(*request, &response);
    bool written = true;
    while (written) written = co_await writer->Write(response);
    co_return Status(StatusCode::kCancelled, "write failed");
  }

  // Reads and discards requests; once the first one gives the response
  // size, a second coroutine writes responses back to back until the
  // client half-closes. Both run on the loop thread.
  coro::Task<Status> StreamingBothWays(ServerContext*,
                                       BidiStream* stream) override {
    SimpleRequest request;
    const bool first = co_await stream->Read(&request);
    if (!first) co_return Status();
    requests_->Count();
    SimpleResponse response;
    FillResponse(request, &response);
    bool reads_done = false;
    coro::Event writer_done;
    coro::Spawn(WriteUntil(stream, &response, &reads_done),
                [&writer_done] { writer_done.Set(); });
    bool read = true;
    while (read) {
      read = co_await stream->Read(&request);
      if (read) requests_->Count();
    }
    reads_done = true;
    co_await writer_done;
    co_return Status();
  }

 private:
  RequestCounter* const requests_;
};

}  // namespace

std::unique_ptr<BenchServer> StartH2rpcCoroServer(const ServerConfig& config,
                                                  std::string* error) {
  return StartH2rpcServerOf<CoroBenchmarkHandlers>(config, error);
}

}  // namespace h2rpc::benchmark
