// Unary calls between a ClientSession and a ServerSession joined in memory:
// the transport's share of a call's CPU (encoding and decoding headers,
// framing, flow control, nghttp2) without sockets, threads or the rpc layer.
// Each iteration runs one call per stream slot to completion, the slots
// running concurrently, so Arg(120) is the main job's 120 calls in flight
// batched as a loop batches them. Requests and responses carry 1 KiB, the
// headers are those of a gRPC unary call. Reports calls per second and
// allocations per call. main() comes from the benchmark target's main
// library.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "base/metadata.h"
#include "base/status.h"
#include "benchmark/benchmark.h"
#include "test/util/allocation_counter.h"
#include "transport/core/memory_quota.h"
#include "transport/core/message_framer.h"
#include "transport/http2/client_session.h"
#include "transport/http2/server_session.h"
#include "transport/io/byte_session.h"
#include "transport/io/fake_scheduler.h"

namespace h2rpc::transport::http2 {
namespace {

constexpr absl::string_view kMethod =
    "/grpc.testing.BenchmarkService/UnaryCall";

// One end of the in-memory connection: what the session writes is handed to
// the peer session's Feed() by Pump().
class PipeEnd final : public io::Wire {
 public:
  explicit PipeEnd(io::ByteSession* session) : session_(session) {}
  io::ByteSession* session() const { return session_; }
  void RequestFlush() override {}
  void ShutdownWrite() override {}
  void CloseWire(bool) override { closed_ = true; }
  bool closed() const { return closed_; }

 private:
  io::ByteSession* const session_;
  bool closed_ = false;
};

// Moves everything `from` has written into `to`; true if anything moved.
bool Transfer(PipeEnd* from, PipeEnd* to) {
  bool moved = false;
  while (!from->closed() && !to->closed()) {
    const absl::string_view out = from->session()->PendingOutput();
    if (out.empty()) break;
    to->session()->Feed(out);
    from->session()->ConsumeOutput(out.size());
    moved = true;
  }
  return moved;
}

// Echoes each request message and finishes OK at half-close, reusing its
// call objects.
class EchoServer final : public ServerDispatcher,
                         public ServerSession::Listener {
 public:
  class Call final : public ServerStream::Observer {
   public:
    explicit Call(EchoServer* server) : server_(server) {}
    void Start(ServerStream* stream) { stream_ = stream; }
    Status OnMessage(absl::string_view message, bool compressed) override {
      Status status = AppendFramedMessage(message, false, 1 << 20,
                                          &stream_->outgoing().buffer());
      if (status.ok()) status = stream_->outgoing().ChargeAppended();
      if (!status.ok()) return status;
      stream_->ResumeSend();
      return Status();
    }
    void OnHalfClose() override {
      stream_->Finish(Status(), nullptr);
      Done();
    }
    void OnCancel() override { Done(); }

   private:
    void Done() {
      stream_->Release();
      server_->free_.push_back(this);
    }
    EchoServer* const server_;
    ServerStream* stream_ = nullptr;
  };

  Status Dispatch(ServerStream* stream) override {
    if (free_.empty()) calls_.push_back(std::make_unique<Call>(this));
    Call* call = free_.empty() ? calls_.back().get() : free_.back();
    if (!free_.empty()) free_.pop_back();
    call->Start(stream);
    stream->observer = call;
    return Status();
  }
  void OnConnectionClosed(ServerSession*) override {}

 private:
  std::vector<std::unique_ptr<Call>> calls_;
  std::vector<Call*> free_;
};

class ClientCall final : public ClientStream::Observer {
 public:
  explicit ClientCall(const std::string* request) : request_(request) {}
  void Start(ClientSession* session) {
    stream_.Reset();
    stream_.observer = this;
    stream_.description.method_path = kMethod;
    stream_.description.authority = "127.0.0.1:50051";
    stream_.description.user_agent = "h2rpc-cpp/0.1.0";
    stream_.outgoing().buffer().assign(*request_);
    stream_.outgoing().set_end_of_data();
    closed_ = false;
    responses_ = 0;
    session->StartCall(&stream_);
  }
  Status OnMessage(absl::string_view, bool) override {
    ++responses_;
    return Status();
  }
  void OnClose(const Status& status, Metadata&) override {
    closed_ = true;
    ok_ = status.ok();
  }
  // The call ended OK with one response.
  bool succeeded() const { return closed_ && ok_ && responses_ == 1; }

 private:
  const std::string* const request_;
  ClientStream stream_;
  bool closed_ = false;
  bool ok_ = false;
  int responses_ = 0;
};

class ClientListener final : public ClientSession::Listener {
 public:
  void OnConnectionClosed(ClientSession*, const Status&) override {}
};

void BM_UnaryCallsInMemory(benchmark::State& state) {
  const int in_flight = static_cast<int>(state.range(0));
  io::FakeScheduler scheduler;
  ConnectionOptions options;
  MemoryQuota quota(64 << 20);
  EchoServer server;
  ClientListener listener;
  ServerSession server_session(&scheduler, "bench-client", options, &quota,
                               &server, &server);
  ClientSession client_session(&scheduler, "bench-server", options, &listener);
  PipeEnd server_end(&server_session);
  PipeEnd client_end(&client_session);
  server_session.Start(&server_end);
  client_session.Start(&client_end);
  auto pump = [&] {
    while (Transfer(&client_end, &server_end) |
           Transfer(&server_end, &client_end)) {
    }
  };
  pump();

  std::string request;
  if (!AppendFramedMessage(std::string(1024, 'q'), false, 1 << 20, &request)
           .ok()) {
    state.SkipWithError("cannot frame the request");
    return;
  }
  std::vector<std::unique_ptr<ClientCall>> calls;
  for (int i = 0; i < in_flight; ++i) {
    calls.push_back(std::make_unique<ClientCall>(&request));
  }
  auto run_round = [&] {
    for (auto& call : calls) call->Start(&client_session);
    pump();
    for (auto& call : calls) {
      if (!call->succeeded()) return false;
    }
    return true;
  };
  // Warm-up: buffers and pools reach their working sizes.
  for (int i = 0; i < 3; ++i) {
    if (!run_round()) {
      state.SkipWithError("a warm-up call failed");
      return;
    }
  }
  h2rpc::testing::AllocationCounter counter;
  for (auto _ : state) {
    if (!run_round()) {
      state.SkipWithError("a call failed");
      break;
    }
  }
  const double allocations = static_cast<double>(counter.allocations());
  const double calls_made = static_cast<double>(state.iterations()) * in_flight;
  state.counters["calls/s"] =
      benchmark::Counter(calls_made, benchmark::Counter::kIsRate);
  state.counters["allocs/call"] = allocations / calls_made;
  client_session.Close(Status(StatusCode::kUnavailable, "benchmark over"));
  server_session.Close(Status(StatusCode::kUnavailable, "benchmark over"));
}

BENCHMARK(BM_UnaryCallsInMemory)->Arg(1)->Arg(120);

}  // namespace
}  // namespace h2rpc::transport::http2
