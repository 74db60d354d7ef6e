#include "tools/h2rpc_proxy/forwarder.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rpc/byte_buffer.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/internal/loop_sharing.h"
#include "rpc/metadata.h"
#include "rpc/server_context.h"
#include "rpc/server_stream.h"

namespace h2rpc::proxy {

// One forwarded call: the server's call (downstream) and the channel's
// (upstream), both on the loop thread that serves the client's connection
// (the channel is that loop's), joined message by message. Pooled per loop:
// once both have ended (OnDone), the call goes back to its loop's idle
// list, its buffers keeping up to kIdleBufferCapacity each.
//
// Each direction has one message in flight: client to target, a read
// downstream, then a write upstream, then the next read; target to client
// the mirror. The upstream call carries two holds
// (ClientStreamReactor::AddHold), one per direction, removed once that
// direction starts no more upstream operations from downstream events. The
// server's call ends only with Finish, which runs from the upstream's
// OnDone, after every operation the upstream's events started on it.
class ProxyCall {
 public:
  explicit ProxyCall(Forwarder::Loop* loop) : loop_(loop), up_(this) {}

  // The loop's thread, inside the generic service's factory.
  GenericServerBidiReactor* Start(Forwarder* forwarder,
                                  ServerContext* context) {
    forwarder_ = forwarder;
    context_ = context;
    refs_ = 2;
    upstream_hold_ = true;
    ClientContext& child = child_.emplace(*context);
    for (const Metadata::Entry entry : context->client_metadata()) {
      if (!IsReservedMetadataKey(entry.key)) {
        child.AddMetadata(entry.key, entry.value);
      }
    }
    child.set_authority(forwarder->options_.authority.empty()
                            ? std::string(context->authority())
                            : forwarder->options_.authority);
    child.set_compression_algorithm(context->client_compression_algorithm());
    loop_->target->AsyncBidiStreamingCall(&child, context->method(), &up_);
    up_.AddHold();  // client to target
    up_.AddHold();  // target to client
    up_.StartRead(&response_);
    up_.StartCall();
    // Bound to the server's call as it is made (it is, in the factory).
    Downstream& down = down_.emplace(this);
    down.StartRead(&request_);
    return &down;
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

  // Client to target: a request message, or the client's half-close (or
  // the call's end).
  void DownReadDone(bool ok) {
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
  void UpWriteDone(bool ok) {
    if (ok) {
      down_->StartRead(&request_);
      return;
    }
    if (upstream_hold_) EndClientToTarget();
  }
  void EndClientToTarget() {
    upstream_hold_ = false;
    up_.RemoveHold();
  }

  // Target to client.
  void UpInitialMetadata(bool ok) {
    if (!ok) return;
    // The server call reads its context's initial metadata only when it
    // sends it, which StartSendInitialMetadata (below) orders after this.
    for (const Metadata::Entry entry : child_->GetServerInitialMetadata()) {
      context_->AddInitialMetadata(entry.key, entry.value);
    }
    context_->set_compression_algorithm(child_->server_compression_algorithm());
    down_->StartSendInitialMetadata();
  }
  void UpReadDone(bool ok) {
    if (!ok) {
      // The target's stream is over: nothing more goes to it either.
      if (upstream_hold_) EndClientToTarget();
      up_.RemoveHold();  // target to client
      return;
    }
    forwarder_->messages_to_clients_.fetch_add(1, std::memory_order_relaxed);
    forwarder_->bytes_to_clients_.fetch_add(
        static_cast<int64_t>(response_.size()), std::memory_order_relaxed);
    WriteOptions options;
    if (!child_->last_message_compressed()) options.set_no_compression();
    down_->StartWrite(&response_, options);
  }
  void DownWriteDone(bool ok) {
    if (ok) {
      up_.StartRead(&response_);
    } else {
      up_.RemoveHold();  // the client is gone (its call cancelled the child)
    }
  }
  // The target's status, relayed with its trailing metadata.
  void UpDone(const Status& status) {
    for (const Metadata::Entry entry : child_->GetServerTrailingMetadata()) {
      context_->AddTrailingMetadata(entry.key, entry.value);
    }
    forwarder_->CallEnded(status.code());
    down_->Finish(status);
    Unref();
  }

  void Unref() {
    if (--refs_ > 0) return;
    // The context must not outlive the server call it was made from.
    child_.reset();
    Trim(&request_);
    Trim(&response_);
    loop_->idle.push_back(this);
  }

  // An idle call keeps a buffer's capacity only up to kIdleBufferCapacity:
  // the pool holds as many calls as were ever in flight at once, and large
  // messages must not stay pinned in all of them.
  static void Trim(ByteBuffer* buffer) {
    std::string* storage = internal::ByteBufferAccess::Storage(buffer);
    if (storage->capacity() > kIdleBufferCapacity) {
      std::string().swap(*storage);
    } else {
      storage->clear();
    }
  }
  static constexpr size_t kIdleBufferCapacity = 64 << 10;

  Forwarder::Loop* const loop_;
  Forwarder* forwarder_ = nullptr;
  ServerContext* context_ = nullptr;
  std::optional<ClientContext> child_;
  std::optional<Downstream> down_;
  Upstream up_;
  ByteBuffer request_;   // client to target
  ByteBuffer response_;  // target to client
  // Both OnDones.
  int refs_ = 0;
  // Whether the client-to-target hold is still on the upstream call.
  bool upstream_hold_ = false;
};

Forwarder::Forwarder(std::vector<std::shared_ptr<Channel>> targets,
                     Options options)
    : options_(std::move(options)) {
  for (std::shared_ptr<Channel>& target : targets) {
    loops_.push_back(std::make_unique<Loop>());
    loops_.back()->target = std::move(target);
  }
}

Forwarder::~Forwarder() {
  for (const std::unique_ptr<Loop>& loop : loops_) {
    for (ProxyCall* call : loop->idle) delete call;
  }
}

Forwarder::Loop& Forwarder::LocalLoop() {
  for (const std::unique_ptr<Loop>& loop : loops_) {
    if (internal::ChannelLoop(*loop->target).InLoopThread()) return *loop;
  }
  return *loops_.front();  // not reached: the server runs on their loops
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
  for (const std::unique_ptr<Loop>& loop : loops_) {
    loops.push_back(&internal::ChannelLoop(*loop->target));
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
        Loop& loop = LocalLoop();
        ProxyCall* call;
        if (loop.idle.empty()) {
          call = new ProxyCall(&loop);
        } else {
          call = loop.idle.back();
          loop.idle.pop_back();
        }
        return call->Start(this, context);
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
