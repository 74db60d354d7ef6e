#include "test/soak/mixed_load.h"

#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "rpc/client_context.h"

namespace h2rpc::testing {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;

namespace {

// Payload sizes asked for.
constexpr int kUnaryResponseSize = 16;
constexpr int kStreamResponseSize = 32;

}  // namespace

struct MixedLoad::State {
  State(TestService::Stub* stub_, const Options& options_)
      : stub(stub_), options(options_) {}

  // Counts a call of `kind` as started; false (nothing counted) once the
  // load has stopped.
  bool Begin(CallKind kind) {
    MutexLock lock(&mu);
    if (stopped) return false;
    ++in_flight;
    ++tally.kinds[kind].started;
    return true;
  }
  void End(CallKind kind, const Status& status, bool wrong_answer) {
    MutexLock lock(&mu);
    tally.kinds[kind].Record(status.code(), status.message(), wrong_answer);
    --in_flight;
    changed.SignalAll();
  }

  // Owned by the MixedLoad; used only to start calls, which stops before
  // the MixedLoad is destroyed.
  TestService::Stub* const stub;
  const Options options;
  mutable Mutex mu;
  mutable CondVar changed;  // in_flight went down
  bool stopped ABSL_GUARDED_BY(mu) = false;
  int64_t in_flight ABSL_GUARDED_BY(mu) = 0;
  CallTally tally ABSL_GUARDED_BY(mu);
};

// A UnaryCall; answered by a backend with its name and the payload asked
// for.
class MixedLoad::Unary {
 public:
  static void Start(const std::shared_ptr<State>& state, CallKind kind) {
    auto call = std::make_unique<Unary>();
    const bool wait = kind == CallKind::kUnaryWaitForReady;
    call->context.set_wait_for_ready(wait);
    call->context.set_timeout(wait ? state->options.wait_for_ready_timeout
                                   : state->options.call_timeout);
    call->request.set_response_size(kUnaryResponseSize);
    Unary* const raw = call.get();
    state->stub->AsyncUnaryCall(
        &raw->context, raw->request, &raw->response,
        [state, kind, call = std::move(call)](const Status& status) {
          const bool wrong =
              status.ok() &&
              (call->response.hostname().empty() ||
               call->response.payload().body().size() != kUnaryResponseSize);
          state->End(kind, status, wrong);
          StartNext(state, kind);
        });
  }

  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
};

// A StreamingOutputCall asking for stream_messages responses, read to the
// end. Deletes itself in OnDone.
class MixedLoad::ServerStreaming final
    : public ClientReadReactor<StreamingOutputCallResponse> {
 public:
  explicit ServerStreaming(std::shared_ptr<State> state)
      : state_(std::move(state)) {
    context_.set_timeout(state_->options.call_timeout);
    StreamingOutputCallRequest request;
    for (int i = 0; i < state_->options.stream_messages; ++i) {
      request.add_response_parameters()->set_size(kStreamResponseSize);
    }
    state_->stub->AsyncStreamingOutputCall(&context_, request, this);
    StartRead(&response_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    ++received_;
    if (response_.payload().body().size() != kStreamResponseSize) {
      wrong_ = true;
    }
    StartRead(&response_);
  }
  void OnDone(const Status& status) override {
    const bool wrong =
        status.ok() && (wrong_ || received_ != state_->options.stream_messages);
    std::shared_ptr<State> state = std::move(state_);
    delete this;
    state->End(CallKind::kServerStreaming, status, wrong);
    StartNext(state, CallKind::kServerStreaming);
  }

 private:
  std::shared_ptr<State> state_;
  ClientContext context_;
  StreamingOutputCallResponse response_;
  int received_ = 0;
  bool wrong_ = false;
};

// A FullDuplexCall of stream_messages rounds (write a request, read its
// answer), then a half-close and a read of the end. Deletes itself in
// OnDone. Its events run on the channel's loop thread, one at a time.
class MixedLoad::BidiStreaming final
    : public ClientBidiReactor<StreamingOutputCallRequest,
                               StreamingOutputCallResponse> {
 public:
  explicit BidiStreaming(std::shared_ptr<State> state)
      : state_(std::move(state)) {
    context_.set_timeout(state_->options.call_timeout);
    request_.add_response_parameters()->set_size(kStreamResponseSize);
    state_->stub->AsyncFullDuplexCall(&context_, this);
    Round();
    StartCall();
  }
  void OnWriteDone(bool ok) override { Step(ok); }
  void OnReadDone(bool ok) override {
    if (ok && response_.payload().body().size() != kStreamResponseSize) {
      wrong_ = true;
    }
    if (ok) ++received_;
    if (half_closed_) return;  // the read of the end
    Step(ok);
  }
  void OnDone(const Status& status) override {
    const bool wrong =
        status.ok() && (wrong_ || received_ != state_->options.stream_messages);
    std::shared_ptr<State> state = std::move(state_);
    delete this;
    state->End(CallKind::kBidiStreaming, status, wrong);
    StartNext(state, CallKind::kBidiStreaming);
  }

 private:
  void Round() {
    pending_ = 2;
    StartWrite(&request_);
    StartRead(&response_);
  }
  // One of a round's two operations completed.
  void Step(bool ok) {
    ok_ = ok_ && ok;
    if (--pending_ > 0 || !ok_) return;  // a failed call ends by itself
    if (++rounds_ < state_->options.stream_messages) {
      Round();
      return;
    }
    half_closed_ = true;
    StartWritesDone();
    StartRead(&response_);
  }

  std::shared_ptr<State> state_;
  ClientContext context_;
  StreamingOutputCallRequest request_;
  StreamingOutputCallResponse response_;
  int pending_ = 0;
  int rounds_ = 0;
  int received_ = 0;
  bool ok_ = true;
  bool half_closed_ = false;
  bool wrong_ = false;
};

MixedLoad::MixedLoad(std::shared_ptr<Channel> channel, Options options)
    : stub_(std::make_unique<TestService::Stub>(std::move(channel))),
      state_(std::make_shared<State>(stub_.get(), options)) {
  const std::pair<CallKind, int> kinds[] = {
      {CallKind::kUnary, options.unary},
      {CallKind::kUnaryWaitForReady, options.unary_wait_for_ready},
      {CallKind::kServerStreaming, options.server_streaming},
      {CallKind::kBidiStreaming, options.bidi_streaming}};
  for (const auto& [kind, count] : kinds) {
    for (int i = 0; i < count; ++i) StartNext(state_, kind);
  }
}

MixedLoad::~MixedLoad() {
  Stop();
  WaitAllEnded(state_->options.wait_for_ready_timeout + absl::Seconds(30));
}

void MixedLoad::Stop() {
  MutexLock lock(&state_->mu);
  state_->stopped = true;
}

bool MixedLoad::WaitAllEnded(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&state_->mu);
  while (state_->in_flight > 0) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    state_->changed.WaitWithTimeout(&state_->mu, left);
  }
  return true;
}

CallTally MixedLoad::Tally() const {
  MutexLock lock(&state_->mu);
  return state_->tally;
}

void MixedLoad::StartNext(const std::shared_ptr<State>& state, CallKind kind) {
  if (!state->Begin(kind)) return;
  switch (kind) {
    case CallKind::kUnary:
    case CallKind::kUnaryWaitForReady:
      Unary::Start(state, kind);
      return;
    case CallKind::kServerStreaming:
      new ServerStreaming(state);
      return;
    case CallKind::kBidiStreaming:
      new BidiStreaming(state);
      return;
  }
}

}  // namespace h2rpc::testing
