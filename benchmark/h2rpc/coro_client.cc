// The benchmark's client on h2rpc with coroutines (client stack
// "h2rpc_coro", //rpc/coro): the generated BenchmarkService::CoroStub, one
// coroutine per call loop or stream, running on its channel's loop thread
// from its first await on. The workloads of the callback client (client.cc)
// but the handshake one, written as straight-line code.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "benchmark/bench_stack.h"
#include "benchmark/h2rpc/client_setup.h"
#include "proto/grpc/testing/benchmark_service.h2rpc_coro.pb.h"
#include "rpc/channel.h"
#include "rpc/coro/client.h"
#include "rpc/coro/event.h"
#include "rpc/coro/task.h"
#include "rpc/credentials.h"

namespace h2rpc::benchmark {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::h2rpc::BenchmarkService;

using BidiCall = coro::BidiStreamingCall<SimpleRequest, SimpleResponse>;

struct ClientShared {
  const ClientConfig* config;
  OpStats* stats;
  SimpleRequest request;
  std::atomic<bool> stopping{false};
  Outstanding outstanding;

  bool stopping_now() const { return stopping.load(std::memory_order_relaxed); }
  void Finished(const Status& status) {
    if (!status.ok()) stats->RecordError(status.ToString());
  }
};

// One unary closed loop.
coro::Task<void> UnaryLoop(BenchmarkService::CoroStub* stub,
                           ClientShared* shared) {
  SimpleResponse response;
  while (!shared->stopping_now()) {
    ClientContext context;
    context.set_compression_algorithm(shared->config->compression);
    const absl::Time start = absl::Now();
    const Status status =
        co_await stub->UnaryCall(&context, shared->request, &response);
    if (status.ok()) {
      shared->stats->RecordRoundTrip(absl::Now() - start);
    } else {
      shared->stats->RecordError(status.ToString());
    }
  }
}

// One ping-pong stream: write a request, read its response, repeat; each
// round's read starts before its write, as the callback client's does, so
// the response always finds it waiting.
coro::Task<void> PingPong(BenchmarkService::CoroStub* stub,
                          ClientShared* shared) {
  BidiCall call;
  call.context().set_compression_algorithm(shared->config->compression);
  stub->StreamingCall(&call);
  SimpleResponse response;
  bool ok = true;
  while (ok && !shared->stopping_now()) {
    const absl::Time start = absl::Now();
    auto read = call.Read(&response);
    const bool written = co_await call.Write(shared->request);
    ok = co_await read;
    ok = ok && written;
    if (ok) shared->stats->RecordRoundTrip(absl::Now() - start);
  }
  if (ok) {
    co_await call.WritesDone();
    bool read = true;
    while (read) read = co_await call.Read(&response);
  }
  shared->Finished(co_await call.Finish());
}

// StreamingBothWays's reader: reads back to back until the end of the
// stream.
coro::Task<void> ReadAll(BidiCall* call, ClientShared* shared) {
  SimpleResponse response;
  bool read = true;
  while (read) {
    read = co_await call->Read(&response);
    if (read) shared->stats->CountRecv();
  }
}

// One unconstrained stream: this coroutine writes back to back while a
// second one reads, independently.
coro::Task<void> BothWays(BenchmarkService::CoroStub* stub,
                          ClientShared* shared) {
  BidiCall call;
  call.context().set_compression_algorithm(shared->config->compression);
  stub->StreamingBothWays(&call);
  coro::Event reader_done;
  coro::Spawn(ReadAll(&call, shared), [&reader_done] { reader_done.Set(); });
  bool ok = true;
  while (ok && !shared->stopping_now()) {
    ok = co_await call.Write(shared->request);
    if (ok) shared->stats->CountSend();
  }
  if (ok) {
    co_await call.WritesDone();
  }
  co_await reader_done;
  shared->Finished(co_await call.Finish());
}

// One server-streaming call: one request, then reads back to back; on
// Stop(), cancels the stream, whose CANCELLED is the expected end.
coro::Task<void> FromServer(BenchmarkService::CoroStub* stub,
                            ClientShared* shared) {
  coro::ServerStreamingCall<SimpleRequest, SimpleResponse> call;
  call.context().set_compression_algorithm(shared->config->compression);
  stub->StreamingFromServer(&call, shared->request);
  SimpleResponse response;
  bool cancelled = false;
  while (true) {
    const bool read = co_await call.Read(&response);
    if (!read) break;
    shared->stats->CountRecv();
    if (shared->stopping_now() && !cancelled) {
      cancelled = true;
      call.context().TryCancel();
    }
  }
  const Status status = co_await call.Finish();
  if (!(cancelled && status.code() == StatusCode::kCancelled)) {
    shared->Finished(status);
  }
}

class H2rpcCoroClient final : public BenchClient {
 public:
  H2rpcCoroClient(const ClientConfig& config, OpStats* stats)
      : config_(config) {
    shared_.config = &config_;
    shared_.stats = stats;
    shared_.request.mutable_payload()->set_body(
        std::string(static_cast<size_t>(config.req_size), 'q'));
    shared_.request.set_response_size(config.resp_size);
    const std::shared_ptr<ChannelCredentials> credentials =
        BenchChannelCredentials(config);
    for (int i = 0; i < config.connections; ++i) {
      channels_.push_back(CreateChannel(config.target, credentials,
                                        BenchChannelOptions(config, i)));
      stubs_.push_back(
          std::make_unique<BenchmarkService::CoroStub>(channels_.back()));
    }
  }
  ~H2rpcCoroClient() override { Stop(); }

  void Start() override {
    for (int i = 0; i < config_.concurrency; ++i) {
      BenchmarkService::CoroStub* stub = stubs_[i % stubs_.size()].get();
      shared_.outstanding.Add();
      coro::Task<void> loop;
      switch (config_.workload) {
        case Workload::kUnary:
          loop = UnaryLoop(stub, &shared_);
          break;
        case Workload::kStreaming:
          loop = PingPong(stub, &shared_);
          break;
        case Workload::kUnconstrained:
          loop = BothWays(stub, &shared_);
          break;
        case Workload::kStreamingFromServer:
          loop = FromServer(stub, &shared_);
          break;
        case Workload::kHandshake:  // refused by benchmain
          break;
      }
      if (!loop.valid()) {
        shared_.outstanding.Done();
        continue;
      }
      ClientShared* shared = &shared_;
      coro::Spawn(std::move(loop), [shared] { shared->outstanding.Done(); });
    }
  }

  void Stop() override {
    shared_.stopping.store(true);
    shared_.outstanding.WaitForZero();
  }

 private:
  const ClientConfig config_;
  ClientShared shared_;
  std::vector<std::shared_ptr<Channel>> channels_;
  std::vector<std::unique_ptr<BenchmarkService::CoroStub>> stubs_;
};

}  // namespace

std::unique_ptr<BenchClient> NewH2rpcCoroClient(const ClientConfig& config,
                                                OpStats* stats) {
  return std::make_unique<H2rpcCoroClient>(config, stats);
}

}  // namespace h2rpc::benchmark
