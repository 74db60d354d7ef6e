#include "transport/io/resolver.h"

#include <pthread.h>

#include <deque>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"

namespace h2rpc::transport::io {

// One resolution: shared by its Resolution (the requester), the resolver's
// queue and thread, and the task that delivers it on the loop, so that none
// of them can outlive it.
struct Resolver::Request : std::enable_shared_from_this<Request> {
  Request(absl::string_view target, EventLoop* loop, Callback done)
      : target(target), loop(loop), done(std::move(done)) {}

  // Not cancelled, not delivered.
  bool active() {
    MutexLock lock(&mu);
    return loop != nullptr;
  }
  // Loop thread (or once the loop has stopped).
  void Cancel();
  // Resolver thread: posts `resolved` to the loop unless cancelled.
  void Deliver(Result resolved);
  // Loop thread: runs the callback unless cancelled.
  void RunOnLoop();

  const std::string target;
  Mutex mu;
  // Null once cancelled or delivered. The resolver posts to `loop` only while
  // it is set and under `mu`, so once Cancel() has cleared it the loop is
  // never touched again.
  EventLoop* loop ABSL_GUARDED_BY(mu);
  Callback done ABSL_GUARDED_BY(mu);
  Result result ABSL_GUARDED_BY(mu);
};

// The resolver thread's state, shared with the thread so that ~Resolver can
// leave a thread blocked in a lookup behind without waiting for it.
struct Resolver::Shared {
  explicit Shared(ResolveFunction resolve) : resolve(std::move(resolve)) {}

  // The resolver thread's body.
  void Run();

  const ResolveFunction resolve;
  Mutex mu;
  CondVar wake;
  std::deque<std::shared_ptr<Request>> queue ABSL_GUARDED_BY(mu);
  std::thread thread ABSL_GUARDED_BY(mu);  // started by the first Resolve()
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool busy ABSL_GUARDED_BY(mu) = false;  // the thread is in a lookup
};

void Resolver::Request::Cancel() {
  Callback dropped;  // destroyed after the unlock
  MutexLock lock(&mu);
  loop = nullptr;
  dropped = std::move(done);
  done = nullptr;
}

void Resolver::Request::Deliver(Result resolved) {
  MutexLock lock(&mu);
  if (loop == nullptr) return;  // cancelled during the lookup
  result = std::move(resolved);
  // Under `mu`: a Cancel() on the loop thread waits for this Post(), which
  // never blocks, and no Post() can follow that Cancel().
  loop->Post([self = shared_from_this()] { self->RunOnLoop(); });
}

void Resolver::Request::RunOnLoop() {
  Callback callback;
  Result delivered;
  {
    MutexLock lock(&mu);
    if (loop == nullptr) return;  // cancelled after the post
    loop = nullptr;
    callback = std::move(done);
    done = nullptr;
    delivered = std::move(result);
  }
  callback(std::move(delivered));
}

void Resolver::Shared::Run() {
  pthread_setname_np(pthread_self(), "h2rpc-resolver");
  for (;;) {
    std::shared_ptr<Request> request;
    {
      MutexLock lock(&mu);
      while (queue.empty() && !stopping) wake.Wait(&mu);
      if (stopping) return;
      request = std::move(queue.front());
      queue.pop_front();
      busy = true;
    }
    // A resolution cancelled while queued costs no lookup.
    Result result;
    const bool looked_up = request->active();
    if (looked_up) {
      result.status = resolve(request->target, &result.addresses);
      if (result.status.ok() && result.addresses.empty()) {
        result.status = Status(
            StatusCode::kUnavailable,
            absl::StrCat("cannot resolve '", request->target, "': no address"));
      }
    }
    MutexLock lock(&mu);
    busy = false;
    // Once ~Resolver has begun, nothing is delivered: its owner's loops may
    // be going away.
    if (looked_up && !stopping) request->Deliver(std::move(result));
  }
}

Resolver::Resolution& Resolver::Resolution::operator=(
    Resolution&& other) noexcept {
  if (this != &other) {
    Cancel();
    request_ = std::move(other.request_);
  }
  return *this;
}

void Resolver::Resolution::Cancel() {
  if (request_ == nullptr) return;
  request_->Cancel();
  request_.reset();
}

bool Resolver::Resolution::active() const {
  return request_ != nullptr && request_->active();
}

Resolver::Resolver(ResolveFunction resolve)
    : shared_(std::make_shared<Shared>(std::move(resolve))) {}

Resolver::~Resolver() {
  std::thread thread;
  std::deque<std::shared_ptr<Request>> dropped;  // destroyed after the unlock
  bool busy;
  {
    MutexLock lock(&shared_->mu);
    shared_->stopping = true;
    busy = shared_->busy;
    dropped.swap(shared_->queue);
    thread = std::move(shared_->thread);
  }
  shared_->wake.SignalAll();
  if (!thread.joinable()) return;
  // A busy thread cannot start another lookup (it sees `stopping` first);
  // it keeps `shared_` alive until it exits.
  if (busy) {
    thread.detach();
  } else {
    thread.join();
  }
}

Resolver::Resolution Resolver::Resolve(absl::string_view target,
                                       EventLoop* loop, Callback done) {
  auto request = std::make_shared<Request>(target, loop, std::move(done));
  {
    MutexLock lock(&shared_->mu);
    shared_->queue.push_back(request);
    if (!shared_->thread.joinable()) {
      shared_->thread = std::thread(&Shared::Run, shared_);
    }
  }
  shared_->wake.Signal();
  return Resolution(std::move(request));
}

}  // namespace h2rpc::transport::io
