#include "tools/h2rpc_proxy/forwarder.h"

#include <atomic>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "rpc/byte_buffer.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/internal/loop_sharing.h"
#include "rpc/metadata.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"

namespace h2rpc::proxy {

// One forwarded call: the server's call (downstream, events on its server
// loop) and the channel's (upstream, events on the channel's loop), joined
// message by message. Deleted once both have ended (OnDone).
//
// Each direction has one message in flight: client to target, a read
// downstream, then a write upstream, then the next read; target to client
// the mirror. Upstream operations started from downstream events run on
// another thread than the upstream call's own events, so the upstream call
// carries two holds (ClientStreamReactor::AddHold), one per direction,
// removed once that direction starts no more: it cannot end (and be freed)
// under such an operation. The server's call ends only with Finish, which
// runs from the upstream's OnDone, after every operation the upstream's
// events started on it.
class ProxyCall {
 public:
  ProxyCall(Forwarder* forwarder, ServerContext* context)
      : forwarder_(forwarder),
        context_(context),
        child_(*context),
        down_(this),
        up_(this) {}

  // Loop thread of the server call, inside the generic service's factory.
  GenericServerBidiReactor* Start() {
    for (const Metadata::Entry entry : context_->client_metadata()) {
      if (!IsReservedMetadataKey(entry.key)) {
        child_.AddMetadata(entry.key, entry.value);
      }
    }
    child_.set_authority(forwarder_->options_.authority.empty()
                             ? std::string(context_->authority())
                             : forwarder_->options_.authority);
    child_.set_compression_algorithm(context_->client_compression_algorithm());
    forwarder_->LocalTarget().AsyncBidiStreamingCall(
        &child_, context_->method(), &up_);
    up_.AddHold();  // client to target
    up_.AddHold();  // target to client
    up_.StartRead(&response_);
    up_.StartCall();
    down_.StartRead(&request_);
    return &down_;
  }

 private:
  // The server's call.
  class Downstream final : public GenericServerBidiReactor {
   public:
    explicit Downstream(ProxyCall* call) : call_(call) {}
    void OnReadDone(bool ok) override { call_->DownReadDone(ok); }
    void OnWriteDone(bool ok) override { call_->DownWriteDone(ok); }
    void OnDone() override { call_->Unref(); }

   private:
    ProxyCall* const call_;
  };
  // The channel's call.
  class Upstream final : public GenericClientBidiReactor {
   public:
    explicit Upstream(ProxyCall* call) : call_(call) {}
    void OnReadInitialMetadataDone(bool ok) override {
      call_->UpInitialMetadata(ok);
    }
    void OnReadDone(bool ok) override { call_->UpReadDone(ok); }
    void OnWriteDone(bool ok) override { call_->UpWriteDone(ok); }
    void OnDone(const Status& status) override { call_->UpDone(status); }

   private:
    ProxyCall* const call_;
  };

  // Client to target. Server loop: a request message, or the client's
  // half-close (or the call's end).
  void DownReadDone(bool ok) {
    MutexLock lock(&mu_);
    if (!upstream_hold_) return;  // the target's stream is over
    if (!ok) {
      up_.StartWritesDone();
      EndClientToTarget();
      return;
    }
    forwarder_->messages_to_target_.fetch_add(1, std::memory_order_relaxed);
    forwarder_->bytes_to_target_.fetch_add(
        static_cast<int64_t>(request_.size()), std::memory_order_relaxed);
    WriteOptions options;
    if (!context_->last_message_compressed()) options.set_no_compression();
    up_.StartWrite(&request_, options);
  }
  // Channel loop.
  void UpWriteDone(bool ok) {
    if (ok) {
      down_.StartRead(&request_);
      return;
    }
    MutexLock lock(&mu_);
    if (upstream_hold_) EndClientToTarget();
  }
  void EndClientToTarget() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    upstream_hold_ = false;
    up_.RemoveHold();
  }

  // Target to client. Channel loop.
  void UpInitialMetadata(bool ok) {
    if (!ok) return;
    // The server call reads its context's initial metadata only when it
    // sends it, which StartSendInitialMetadata (below) orders after this.
    for (const Metadata::Entry entry : child_.GetServerInitialMetadata()) {
      context_->AddInitialMetadata(entry.key, entry.value);
    }
    context_->set_compression_algorithm(child_.server_compression_algorithm());
    down_.StartSendInitialMetadata();
  }
  void UpReadDone(bool ok) {
    if (!ok) {
      // The target's stream is over: nothing more goes to it either.
      {
        MutexLock lock(&mu_);
        if (upstream_hold_) EndClientToTarget();
      }
      up_.RemoveHold();  // target to client
      return;
    }
    forwarder_->messages_to_clients_.fetch_add(1, std::memory_order_relaxed);
    forwarder_->bytes_to_clients_.fetch_add(
        static_cast<int64_t>(response_.size()), std::memory_order_relaxed);
    WriteOptions options;
    if (!child_.last_message_compressed()) options.set_no_compression();
    down_.StartWrite(&response_, options);
  }
  // Server loop.
  void DownWriteDone(bool ok) {
    if (ok) {
      up_.StartRead(&response_);
    } else {
      up_.RemoveHold();  // the client is gone (its call cancelled the child)
    }
  }
  // Channel loop: the target's status, relayed with its trailing metadata.
  void UpDone(const Status& status) {
    for (const Metadata::Entry entry : child_.GetServerTrailingMetadata()) {
      context_->AddTrailingMetadata(entry.key, entry.value);
    }
    forwarder_->CallEnded(status.code());
    down_.Finish(status);
    Unref();
  }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  Forwarder* const forwarder_;
  ServerContext* const context_;
  ClientContext child_;
  Downstream down_;
  Upstream up_;
  ByteBuffer request_;   // client to target
  ByteBuffer response_;  // target to client
  // Both OnDones.
  std::atomic<int> refs_{2};
  // Whether the client-to-target hold is still on the upstream call: taken
  // by the server loop to start an upstream operation, by the channel loop
  // to remove the hold.
  Mutex mu_;
  bool upstream_hold_ ABSL_GUARDED_BY(mu_) = true;
};

Forwarder::Forwarder(std::vector<std::shared_ptr<Channel>> targets,
                     Options options)
    : targets_(std::move(targets)), options_(std::move(options)) {}

Channel& Forwarder::LocalTarget() const {
  for (const std::shared_ptr<Channel>& target : targets_) {
    if (internal::ChannelLoop(*target).InLoopThread()) return *target;
  }
  return *targets_.front();  // not reached: the server runs on their loops
}

namespace {

// Whether `path` is "/package.Service/Method" (non-empty service and
// method names).
bool IsMethodPath(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return path.size() >= 4 && path[0] == '/' && slash != 0 &&
         slash != absl::string_view::npos && slash != path.size() - 1;
}

// Answers a call the forwarder does not forward.
class Refusal final : public GenericServerBidiReactor {
 public:
  explicit Refusal(Status status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

void Forwarder::AddTo(Server::Builder& builder) {
  std::vector<transport::io::EventLoop*> loops;
  for (const std::shared_ptr<Channel>& target : targets_) {
    loops.push_back(&internal::ChannelLoop(*target));
  }
  internal::ServerBuilderAccess::RunOnLoops(builder, std::move(loops));
  builder.RegisterCallbackGenericService(
      [this](ServerContext* context) -> GenericServerBidiReactor* {
        calls_started_.fetch_add(1, std::memory_order_relaxed);
        if (!IsMethodPath(context->method())) {
          CallEnded(StatusCode::kUnimplemented);
          return new Refusal(Status(
              StatusCode::kUnimplemented,
              absl::StrCat("the path '", context->method(),
                           "' is not of the form /package.Service/Method")));
        }
        return (new ProxyCall(this, context))->Start();
      });
}

void Forwarder::CallEnded(StatusCode code) {
  const size_t index = static_cast<size_t>(code);
  if (index < calls_ended_by_code_.size()) {
    calls_ended_by_code_[index].fetch_add(1, std::memory_order_relaxed);
  }
  calls_ended_.fetch_add(1, std::memory_order_relaxed);
}

ForwarderStats Forwarder::stats() const {
  ForwarderStats stats;
  stats.calls_started = calls_started_.load(std::memory_order_relaxed);
  stats.calls_active =
      stats.calls_started - calls_ended_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < calls_ended_by_code_.size(); ++i) {
    stats.calls_ended_by_code[i] =
        calls_ended_by_code_[i].load(std::memory_order_relaxed);
  }
  stats.messages_to_target =
      messages_to_target_.load(std::memory_order_relaxed);
  stats.messages_to_clients =
      messages_to_clients_.load(std::memory_order_relaxed);
  stats.bytes_to_target = bytes_to_target_.load(std::memory_order_relaxed);
  stats.bytes_to_clients = bytes_to_clients_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace h2rpc::proxy
