#include "rpc/etcd/etcd_resolver.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/etcd/etcdserverpb/rpc.pb.h"
#include "rpc/client_context.h"
#include "rpc/client_stream.h"
#include "rpc/etcd/etcd_naming.h"

namespace h2rpc {
namespace {

using etcd_internal::EndpointPrefix;
using etcd_internal::ParseEndpointValue;
using etcd_internal::PrefixEnd;

constexpr char kRangeMethod[] = "/etcdserverpb.KV/Range";
constexpr char kWatchMethod[] = "/etcdserverpb.Watch/Watch";

class Watcher;
struct RangeCall;

// What a resolver and its calls to etcd (whose callbacks run on the etcd
// channel's loop thread) share.
struct Shared {
  // Where the resolver is.
  enum class Phase {
    kNeedRange,  // no sync yet, or the watch's revision was compacted
    kRanging,
    kWatching,
    kBroken,  // the watch ended; resume it from `revision`
  };

  std::shared_ptr<Channel> etcd;
  std::string endpoints;  // as the target names them, for messages
  std::string prefix;
  absl::Duration range_timeout;
  size_t max_endpoints;

  Mutex mu;
  // Null once the resolver is destroyed: nothing is reported after.
  ResolverChannel* channel ABSL_GUARDED_BY(mu);
  Phase phase ABSL_GUARDED_BY(mu) = Phase::kNeedRange;
  // The registered endpoints by key, at most max_endpoints.
  std::map<std::string, ResolvedAddress> endpoints_by_key ABSL_GUARDED_BY(mu);
  // An endpoint was left out for max_endpoints (said once).
  bool over_limit ABSL_GUARDED_BY(mu) = false;
  // The newest store revision the endpoints reflect.
  int64_t revision ABSL_GUARDED_BY(mu) = 0;
  // The calls under way, cancelled by the resolver's destructor.
  RangeCall* range ABSL_GUARDED_BY(mu) = nullptr;
  Watcher* watcher ABSL_GUARDED_BY(mu) = nullptr;
};

// The endpoint a key's value names, into `*out`; false when it names none
// h2rpc can use.
bool ToResolvedAddress(const std::string& key, const std::string& value,
                       ResolvedAddress* out) {
  std::string address, metadata;
  if (!ParseEndpointValue(value, &address, &metadata)) return false;
  out->address = std::move(address);
  out->attributes.clear();
  out->attributes.emplace_back("etcd.key", key);
  if (!metadata.empty()) {
    out->attributes.emplace_back("etcd.metadata", std::move(metadata));
  }
  return true;
}

void ApplyPut(Shared& shared, const mvccpb::KeyValue& kv)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared.mu) {
  ResolvedAddress address;
  if (ToResolvedAddress(kv.key(), kv.value(), &address)) {
    auto it = shared.endpoints_by_key.find(kv.key());
    if (it != shared.endpoints_by_key.end()) {
      it->second = std::move(address);
    } else if (shared.endpoints_by_key.size() < shared.max_endpoints) {
      shared.endpoints_by_key.emplace(kv.key(), std::move(address));
    } else if (!shared.over_limit) {
      shared.over_limit = true;
      std::fprintf(stderr,
                   "h2rpc: etcd at %s has more than %zu endpoints under "
                   "'%s'; the others are not used "
                   "(EtcdResolverFactory::Options::max_endpoints)\n",
                   shared.endpoints.c_str(), shared.max_endpoints,
                   shared.prefix.c_str());
    }
  } else {
    shared.endpoints_by_key.erase(kv.key());
  }
}

// Tells the channel the endpoints as they are now.
void Report(Shared& shared) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared.mu) {
  if (shared.endpoints_by_key.empty()) {
    shared.channel->Error(Status(
        StatusCode::kUnavailable,
        absl::StrCat("etcd at ", shared.endpoints,
                     " has no usable endpoint under '", shared.prefix, "'")));
    return;
  }
  ResolverResult result;
  result.addresses.reserve(shared.endpoints_by_key.size());
  for (const auto& [key, address] : shared.endpoints_by_key) {
    result.addresses.push_back(address);
  }
  shared.channel->Update(std::move(result));
}

// A Watch stream over the prefix from a revision on; deletes itself when
// it ends.
class Watcher final : public ClientBidiReactor<etcdserverpb::WatchRequest,
                                               etcdserverpb::WatchResponse> {
 public:
  Watcher(std::shared_ptr<Shared> shared, int64_t start_revision)
      : shared_(std::move(shared)) {
    etcdserverpb::WatchCreateRequest* create =
        request_.mutable_create_request();
    create->set_key(shared_->prefix);
    create->set_range_end(PrefixEnd(shared_->prefix));
    create->set_start_revision(start_revision);
  }

  // Any thread, with shared.mu held (the watcher is shared.watcher).
  void Start() {
    shared_->etcd->AsyncBidiStreamingCall(&context_, kWatchMethod, this);
    StartWrite(&request_);
    StartRead(&response_);
    StartCall();
  }
  // Any thread, with shared.mu held: ends the stream (OnDone follows).
  void Cancel() { context_.TryCancel(); }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) return;
    {
      MutexLock lock(&shared_->mu);
      if (shared_->channel == nullptr) return;
      if (response_.compact_revision() > 0) {
        // The revision to resume from is gone: start over with a Range.
        compacted_ = true;
        context_.TryCancel();
        return;
      }
      if (response_.canceled()) {
        cancel_reason_ = response_.cancel_reason();
        return;  // etcd ends the stream
      }
      if (response_.events_size() > 0) {
        for (const mvccpb::Event& event : response_.events()) {
          if (event.type() == mvccpb::Event::PUT) {
            ApplyPut(*shared_, event.kv());
          } else {
            shared_->endpoints_by_key.erase(event.kv().key());
          }
          shared_->revision =
              std::max(shared_->revision, event.kv().mod_revision());
        }
        Report(*shared_);
      }
    }
    StartRead(&response_);
  }

  void OnDone(const Status& status) override {
    {
      MutexLock lock(&shared_->mu);
      if (shared_->watcher == this) shared_->watcher = nullptr;
      if (shared_->channel != nullptr) {
        shared_->phase =
            compacted_ ? Shared::Phase::kNeedRange : Shared::Phase::kBroken;
        std::string why =
            compacted_ ? "its revision was compacted"
            : !cancel_reason_.empty()
                ? absl::StrCat("etcd cancelled it: ", cancel_reason_)
                : status.ToString();
        shared_->channel->Error(
            Status(StatusCode::kUnavailable,
                   absl::StrCat("the etcd watch of '", shared_->prefix, "' at ",
                                shared_->endpoints, " ended: ", why)));
      }
    }
    delete this;
  }

  const std::shared_ptr<Shared> shared_;
  ClientContext context_;
  etcdserverpb::WatchRequest request_;
  etcdserverpb::WatchResponse response_;
  // Loop thread of the etcd channel.
  bool compacted_ = false;
  std::string cancel_reason_;
};

// A Range of the prefix; deletes itself when it completes.
struct RangeCall {
  explicit RangeCall(std::shared_ptr<Shared> shared_in)
      : shared(std::move(shared_in)) {
    request.set_key(shared->prefix);
    request.set_range_end(PrefixEnd(shared->prefix));
    context.set_timeout(shared->range_timeout);
  }

  // Any thread, with shared.mu held (the call is shared.range).
  void Start() {
    shared->etcd->AsyncUnaryCall(
        &context, kRangeMethod, request, &response,
        [this](const Status& status) { Done(status); });
  }

  void Done(const Status& status) {
    {
      MutexLock lock(&shared->mu);
      if (shared->range == this) shared->range = nullptr;
      if (shared->channel != nullptr) Apply(status);
    }
    delete this;
  }

  void Apply(const Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared->mu) {
    if (!status.ok()) {
      shared->phase = Shared::Phase::kNeedRange;
      shared->channel->Error(Status(
          StatusCode::kUnavailable,
          absl::StrCat("etcd Range of '", shared->prefix, "' at ",
                       shared->endpoints, " failed: ", status.ToString())));
      return;
    }
    shared->endpoints_by_key.clear();
    for (const mvccpb::KeyValue& kv : response.kvs()) ApplyPut(*shared, kv);
    shared->revision = response.header().revision();
    shared->phase = Shared::Phase::kWatching;
    shared->watcher = new Watcher(shared, shared->revision + 1);
    shared->watcher->Start();
    Report(*shared);
  }

  const std::shared_ptr<Shared> shared;
  ClientContext context;
  etcdserverpb::RangeRequest request;
  etcdserverpb::RangeResponse response;
};

class EtcdResolver final : public Resolver {
 public:
  explicit EtcdResolver(std::shared_ptr<Shared> shared)
      : shared_(std::move(shared)) {}

  ~EtcdResolver() override {
    MutexLock lock(&shared_->mu);
    shared_->channel = nullptr;
    if (shared_->range != nullptr) shared_->range->context.TryCancel();
    if (shared_->watcher != nullptr) shared_->watcher->Cancel();
  }

  void ResolveNow() override {
    MutexLock lock(&shared_->mu);
    switch (shared_->phase) {
      case Shared::Phase::kNeedRange:
        shared_->phase = Shared::Phase::kRanging;
        shared_->range = new RangeCall(shared_);
        shared_->range->Start();
        return;
      case Shared::Phase::kBroken:
        shared_->phase = Shared::Phase::kWatching;
        shared_->watcher = new Watcher(shared_, shared_->revision + 1);
        shared_->watcher->Start();
        return;
      case Shared::Phase::kRanging:
      case Shared::Phase::kWatching:
        return;  // every change is on its way already
    }
  }

 private:
  const std::shared_ptr<Shared> shared_;
};

}  // namespace

ChannelOptions EtcdResolverFactory::Options::DefaultChannelOptions() {
  ChannelOptions options;
  options.keepalive_time = absl::Seconds(30);
  options.keepalive_timeout = absl::Seconds(10);
  options.keepalive_permit_without_calls = true;
  return options;
}

EtcdResolverFactory::EtcdResolverFactory(Options options)
    : options_(std::move(options)) {}

Status EtcdResolverFactory::CheckTarget(const ResolverTarget& target) const {
  if (target.authority.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "no etcd endpoints: write etcd://HOST:PORT/SERVICE");
  }
  if (target.endpoint.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "no service: write etcd://HOST:PORT/SERVICE");
  }
  std::string unused;
  return etcd_internal::EtcdChannelTarget(target.authority, &unused);
}

std::string EtcdResolverFactory::DefaultAuthority(
    const ResolverTarget& target) const {
  return target.endpoint;
}

std::shared_ptr<Channel> EtcdResolverFactory::EtcdChannel(
    const std::string& endpoints) {
  MutexLock lock(&mu_);
  for (auto it = channels_.begin(); it != channels_.end();) {
    it = it->second.expired() ? channels_.erase(it) : std::next(it);
  }
  std::weak_ptr<Channel>& cached = channels_[endpoints];
  std::shared_ptr<Channel> channel = cached.lock();
  if (channel != nullptr) return channel;
  std::string target;
  const Status status = etcd_internal::EtcdChannelTarget(endpoints, &target);
  // CheckTarget passed: a target that is not one cannot reach here, and a
  // channel to it would fail every call with its error anyway.
  if (!status.ok()) target = endpoints;
  channel = CreateChannel(target,
                          options_.credentials != nullptr
                              ? options_.credentials
                              : InsecureChannelCredentials(),
                          options_.channel_options);
  cached = channel;
  return channel;
}

std::unique_ptr<Resolver> EtcdResolverFactory::Create(
    const ResolverTarget& target, ResolverChannel* channel) {
  auto shared = std::make_shared<Shared>();
  shared->etcd = EtcdChannel(target.authority);
  shared->endpoints = target.authority;
  shared->prefix = EndpointPrefix(target.endpoint);
  shared->range_timeout = options_.range_timeout;
  shared->max_endpoints = options_.max_endpoints;
  {
    MutexLock lock(&shared->mu);
    shared->channel = channel;
  }
  return std::make_unique<EtcdResolver>(std::move(shared));
}

}  // namespace h2rpc
