// The benchmark's client on h2rpc: callback reactors, so the client adds no
// thread hand-off of its own (except the handshake workload's opener
// thread, see HandshakeLoops).
#include <pthread.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "benchmark/bench_stack.h"
#include "benchmark/cpu_affinity.h"
#include "benchmark/h2rpc/client_setup.h"
#include "proto/grpc/testing/benchmark_service.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/credentials.h"

namespace h2rpc::benchmark {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::h2rpc::BenchmarkService;

struct ClientShared {
  const ClientConfig* config;
  OpStats* stats;
  SimpleRequest request;
  std::shared_ptr<ChannelCredentials> credentials;
  std::atomic<bool> stopping{false};
  Outstanding outstanding;
};

// One unary closed loop: each completion starts the next call.
class UnaryLoop {
 public:
  UnaryLoop(BenchmarkService::Stub* stub, ClientShared* shared)
      : stub_(stub), shared_(shared) {}
  void Issue() {
    if (shared_->stopping.load(std::memory_order_relaxed)) {
      shared_->outstanding.Done();
      return;
    }
    context_.emplace();
    context_->set_compression_algorithm(shared_->config->compression);
    start_ = absl::Now();
    stub_->AsyncUnaryCall(&*context_, shared_->request, &response_,
                          [this](const Status& status) { Done(status); });
  }

 private:
  void Done(const Status& status) {
    if (status.ok()) {
      shared_->stats->RecordRoundTrip(absl::Now() - start_);
    } else {
      shared_->stats->RecordError(status.ToString());
    }
    Issue();
  }

  BenchmarkService::Stub* const stub_;
  ClientShared* const shared_;
  std::optional<ClientContext> context_;
  SimpleResponse response_;
  absl::Time start_;
};

// One ping-pong stream: write a request, read its response, repeat; the
// next round starts once both the write and the read have completed.
class PingPongClient final
    : public ClientBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  PingPongClient(BenchmarkService::Stub* stub, ClientShared* shared)
      : shared_(shared) {
    context_.set_compression_algorithm(shared->config->compression);
    stub->AsyncStreamingCall(&context_, this);
    Round();
    StartCall();
  }
  void OnWriteDone(bool ok) override { Step(ok); }
  void OnReadDone(bool ok) override {
    if (ok) shared_->stats->RecordRoundTrip(absl::Now() - start_);
    Step(ok);
  }
  void OnDone(const Status& status) override {
    if (!status.ok()) shared_->stats->RecordError(status.ToString());
    ClientShared* shared = shared_;
    delete this;
    shared->outstanding.Done();
  }

 private:
  void Round() {
    pending_ = 2;
    start_ = absl::Now();
    StartWrite(&shared_->request);
    StartRead(&response_);
  }
  // Loop thread: completions of one round arrive one at a time.
  void Step(bool ok) {
    ok_ = ok_ && ok;
    if (--pending_ > 0) return;
    if (ok_ && !shared_->stopping.load(std::memory_order_relaxed)) {
      Round();
    } else if (ok_) {
      StartWritesDone();
      StartRead(&response_);  // sees the end of the stream
    }
  }

  ClientShared* const shared_;
  ClientContext context_;
  SimpleResponse response_;
  absl::Time start_;
  int pending_ = 0;
  bool ok_ = true;
};

// One unconstrained stream: writes back to back and reads back to back,
// independently.
class BothWaysClient final
    : public ClientBidiReactor<SimpleRequest, SimpleResponse> {
 public:
  BothWaysClient(BenchmarkService::Stub* stub, ClientShared* shared)
      : shared_(shared) {
    context_.set_compression_algorithm(shared->config->compression);
    stub->AsyncStreamingBothWays(&context_, this);
    StartWrite(&shared_->request);
    StartRead(&response_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return;
    shared_->stats->CountSend();
    if (shared_->stopping.load(std::memory_order_relaxed)) {
      StartWritesDone();
    } else {
      StartWrite(&shared_->request);
    }
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    shared_->stats->CountRecv();
    StartRead(&response_);
  }
  void OnDone(const Status& status) override {
    if (!status.ok()) shared_->stats->RecordError(status.ToString());
    ClientShared* shared = shared_;
    delete this;
    shared->outstanding.Done();
  }

 private:
  ClientShared* const shared_;
  ClientContext context_;
  SimpleResponse response_;
};

// One server-streaming call: one request, then reads back to back. On
// Stop(), the next completed read cancels the stream; the CANCELLED it ends
// with is the expected end, not an error.
class FromServerClient final : public ClientReadReactor<SimpleResponse> {
 public:
  FromServerClient(BenchmarkService::Stub* stub, ClientShared* shared)
      : shared_(shared) {
    context_.set_compression_algorithm(shared->config->compression);
    stub->AsyncStreamingFromServer(&context_, shared->request, this);
    StartRead(&response_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    shared_->stats->CountRecv();
    if (shared_->stopping.load(std::memory_order_relaxed)) {
      cancelled_ = true;
      context_.TryCancel();
    } else {
      StartRead(&response_);
    }
  }
  void OnDone(const Status& status) override {
    if (!status.ok() &&
        !(cancelled_ && status.code() == StatusCode::kCancelled)) {
      shared_->stats->RecordError(status.ToString());
    }
    ClientShared* shared = shared_;
    delete this;
    shared->outstanding.Done();
  }

 private:
  ClientShared* const shared_;
  ClientContext context_;
  SimpleResponse response_;
  bool cancelled_ = false;  // loop thread only
};

// Handshake: `concurrency` closed loops, each op opening a channel (its own
// connection and event loop thread), making one unary call on it, and
// closing it. A call completes on its channel's loop thread, which cannot
// destroy its own channel; the opener thread destroys each finished channel
// (stopping its loop and closing the connection) and opens the next. The
// opener is named as a channel thread so that its allocations and CPU time
// count as the client's (see test/util/allocation_counter.h).
class HandshakeLoops {
 public:
  explicit HandshakeLoops(ClientShared* shared) : shared_(shared) {
    const int concurrency = shared->config->concurrency;
    for (int i = 0; i < concurrency; ++i) {
      slots_.push_back(std::make_unique<Slot>());
      slots_.back()->index = i;
    }
    finished_.reserve(slots_.size());
    batch_.reserve(slots_.size());
  }
  // Joins the opener, which has returned once every slot is closed after
  // `stopping`.
  ~HandshakeLoops() {
    if (opener_.joinable()) opener_.join();
  }
  HandshakeLoops(const HandshakeLoops&) = delete;
  HandshakeLoops& operator=(const HandshakeLoops&) = delete;

  // Once: counts each loop in `outstanding` and starts the opener; each
  // loop is Done() once `stopping` is seen and its channel is closed.
  void Start() {
    for (size_t i = 0; i < slots_.size(); ++i) shared_->outstanding.Add();
    opener_ = std::thread([this] { Run(); });
  }

 private:
  struct Slot {
    int index = 0;  // which loop: spreads the channels over the client CPUs
    std::shared_ptr<Channel> channel;
    std::unique_ptr<BenchmarkService::Stub> stub;
    std::optional<ClientContext> context;
    SimpleResponse response;
    absl::Time start;
  };

  // The opener thread.
  void Run() {
    pthread_setname_np(pthread_self(), "h2rpc-channel-o");
    // Unpinned if that fails: the channels' loops report a bad CPU.
    (void)PinThisThread(shared_->config->cpus);
    size_t open = slots_.size();
    for (const std::unique_ptr<Slot>& slot : slots_) Open(slot.get());
    while (open > 0) {
      {
        MutexLock lock(&mu_);
        while (finished_.empty()) cv_.Wait(&mu_);
        batch_.assign(finished_.begin(), finished_.end());
        finished_.clear();
      }
      for (Slot* slot : batch_) {
        // The last reference: stops the channel's loop, closes the
        // connection.
        slot->stub.reset();
        slot->channel.reset();
        if (shared_->stopping.load(std::memory_order_relaxed)) {
          --open;
          shared_->outstanding.Done();
        } else {
          Open(slot);
        }
      }
    }
  }

  // The opener thread: a new channel and its one call.
  void Open(Slot* slot) {
    slot->start = absl::Now();
    slot->channel =
        CreateChannel(shared_->config->target, shared_->credentials,
                      BenchChannelOptions(*shared_->config, slot->index));
    slot->stub = std::make_unique<BenchmarkService::Stub>(slot->channel);
    slot->context.emplace();
    slot->context->set_compression_algorithm(shared_->config->compression);
    slot->stub->AsyncUnaryCall(
        &*slot->context, shared_->request, &slot->response,
        [this, slot](const Status& status) { Finished(slot, status); });
  }

  // The channel's loop thread: the call is over; the opener takes it on.
  void Finished(Slot* slot, const Status& status) {
    if (status.ok()) {
      shared_->stats->RecordRoundTrip(absl::Now() - slot->start);
    } else {
      shared_->stats->RecordError(status.ToString());
    }
    MutexLock lock(&mu_);
    finished_.push_back(slot);
    cv_.Signal();
  }

  ClientShared* const shared_;
  std::vector<std::unique_ptr<Slot>> slots_;
  Mutex mu_;
  CondVar cv_;
  // Slots whose call is over, for the opener (capacity reserved: pushing
  // does not allocate).
  std::vector<Slot*> finished_ ABSL_GUARDED_BY(mu_);
  std::vector<Slot*> batch_;  // opener thread only
  std::thread opener_;
};

class H2rpcClient final : public BenchClient {
 public:
  H2rpcClient(const ClientConfig& config, OpStats* stats) : config_(config) {
    shared_.config = &config_;
    shared_.stats = stats;
    shared_.request.mutable_payload()->set_body(
        std::string(static_cast<size_t>(config.req_size), 'q'));
    shared_.request.set_response_size(config.resp_size);
    shared_.credentials = BenchChannelCredentials(config);
    if (config.workload == Workload::kHandshake) {
      handshakes_ = std::make_unique<HandshakeLoops>(&shared_);
      return;
    }
    for (int i = 0; i < config.connections; ++i) {
      channels_.push_back(CreateChannel(config.target, shared_.credentials,
                                        BenchChannelOptions(config, i)));
      stubs_.push_back(
          std::make_unique<BenchmarkService::Stub>(channels_.back()));
    }
  }
  ~H2rpcClient() override { Stop(); }

  void Start() override {
    if (handshakes_ != nullptr) {
      handshakes_->Start();
      return;
    }
    for (int i = 0; i < config_.concurrency; ++i) {
      BenchmarkService::Stub* stub = stubs_[i % stubs_.size()].get();
      shared_.outstanding.Add();
      switch (config_.workload) {
        case Workload::kUnary:
          unary_.push_back(std::make_unique<UnaryLoop>(stub, &shared_));
          unary_.back()->Issue();
          break;
        case Workload::kStreaming:
          new PingPongClient(stub, &shared_);
          break;
        case Workload::kUnconstrained:
          new BothWaysClient(stub, &shared_);
          break;
        case Workload::kStreamingFromServer:
          new FromServerClient(stub, &shared_);
          break;
        case Workload::kHandshake:  // handshakes_
          break;
      }
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
  std::vector<std::unique_ptr<BenchmarkService::Stub>> stubs_;
  std::vector<std::unique_ptr<UnaryLoop>> unary_;
  std::unique_ptr<HandshakeLoops> handshakes_;
};

}  // namespace

std::unique_ptr<BenchClient> NewH2rpcClient(const ClientConfig& config,
                                            OpStats* stats) {
  return std::make_unique<H2rpcClient>(config, stats);
}

}  // namespace h2rpc::benchmark
