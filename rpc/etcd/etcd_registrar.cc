#include "rpc/etcd/etcd_registrar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/etcd/etcdserverpb/rpc.pb.h"
#include "rpc/client_stream.h"
#include "rpc/etcd/etcd_naming.h"

namespace h2rpc {
namespace {

constexpr char kLeaseGrantMethod[] = "/etcdserverpb.Lease/LeaseGrant";
constexpr char kLeaseRevokeMethod[] = "/etcdserverpb.Lease/LeaseRevoke";
constexpr char kLeaseKeepAliveMethod[] = "/etcdserverpb.Lease/LeaseKeepAlive";
constexpr char kPutMethod[] = "/etcdserverpb.KV/Put";

// Between two attempts to register again.
constexpr absl::Duration kRetryInterval = absl::Seconds(1);

// The lease TTL etcd is asked for: whole seconds, at least 1.
int64_t TtlSeconds(absl::Duration ttl) {
  return std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(ttl))));
}

}  // namespace

Status EtcdRegistrar::Start(Options options,
                            std::unique_ptr<EtcdRegistrar>* out) {
  if (options.service.empty() || options.address.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "EtcdRegistrar: the service and the address must be set");
  }
  if (options.ttl <= absl::ZeroDuration()) {
    return Status(StatusCode::kInvalidArgument,
                  "EtcdRegistrar: ttl must be positive");
  }
  std::string target;
  Status status = etcd_internal::EtcdChannelTarget(options.etcd, &target);
  if (!status.ok()) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("EtcdRegistrar: ", status.message()));
  }
  std::shared_ptr<Channel> etcd = CreateChannel(
      target, options.credentials != nullptr ? options.credentials
                                             : InsecureChannelCredentials());
  std::unique_ptr<EtcdRegistrar> registrar(
      new EtcdRegistrar(std::move(options), std::move(etcd)));
  status = registrar->Register();
  if (!status.ok()) return status;
  registrar->thread_ = std::thread([r = registrar.get()] { r->KeepAlive(); });
  *out = std::move(registrar);
  return Status();
}

EtcdRegistrar::EtcdRegistrar(Options options, std::shared_ptr<Channel> etcd)
    : options_(std::move(options)),
      key_(absl::StrCat(etcd_internal::EndpointPrefix(options_.service),
                        options_.address)),
      value_(etcd_internal::EndpointValue(options_.address,
                                          options_.metadata_json)),
      etcd_(std::move(etcd)) {}

EtcdRegistrar::~EtcdRegistrar() {
  const Status status = Stop();
  if (!status.ok()) {
    std::fprintf(stderr,
                 "h2rpc EtcdRegistrar: %s (the key stays until its "
                 "lease expires)\n",
                 status.ToString().c_str());
  }
}

Status EtcdRegistrar::Register() {
  ClientContext grant_context;
  grant_context.set_timeout(options_.call_timeout);
  grant_context.set_wait_for_ready(true);
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(TtlSeconds(options_.ttl));
  etcdserverpb::LeaseGrantResponse granted;
  Status status =
      etcd_->UnaryCall(&grant_context, kLeaseGrantMethod, grant, &granted);
  if (!status.ok()) {
    return Status(status.code(),
                  absl::StrCat("etcd LeaseGrant at ", options_.etcd,
                               " failed: ", status.message()));
  }
  if (!granted.error().empty()) {
    return Status(StatusCode::kUnavailable,
                  absl::StrCat("etcd LeaseGrant at ", options_.etcd,
                               " failed: ", granted.error()));
  }
  ClientContext put_context;
  put_context.set_timeout(options_.call_timeout);
  etcdserverpb::PutRequest put;
  put.set_key(key_);
  put.set_value(value_);
  put.set_lease(granted.id());
  etcdserverpb::PutResponse put_response;
  status = etcd_->UnaryCall(&put_context, kPutMethod, put, &put_response);
  if (!status.ok()) {
    return Status(status.code(),
                  absl::StrCat("etcd Put of '", key_, "' at ", options_.etcd,
                               " failed: ", status.message()));
  }
  MutexLock lock(&mu_);
  lease_id_ = granted.id();
  ++registrations_;
  return Status();
}

void EtcdRegistrar::KeepAlive() {
  for (;;) {
    int64_t lease;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      lease = lease_id_;
    }
    if (lease != 0 && KeepAliveOnStream(lease)) {
      // The stream broke with the lease still valid: a new stream, after
      // a pause.
      if (WaitUnlessStopping(kRetryInterval)) return;
      continue;
    }
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      lease_id_ = 0;
    }
    // The lease is gone (etcd answered TTL 0, or it expired while etcd
    // was unreachable): register again until etcd takes it.
    for (;;) {
      Status status = Register();
      if (status.ok()) break;
      SetLastError(std::move(status));
      if (WaitUnlessStopping(kRetryInterval)) return;
    }
  }
}

bool EtcdRegistrar::KeepAliveOnStream(int64_t lease) {
  ClientContext context;
  {
    MutexLock lock(&mu_);
    if (stopping_) return true;
    stream_context_ = &context;
  }
  auto stream = etcd_->BidiStreamingCall<etcdserverpb::LeaseKeepAliveRequest,
                                         etcdserverpb::LeaseKeepAliveResponse>(
      &context, kLeaseKeepAliveMethod);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse response;
  bool lease_alive = true;
  const absl::Duration interval = absl::Seconds(TtlSeconds(options_.ttl)) / 3;
  while (stream->Write(request) && stream->Read(&response)) {
    if (response.ttl() <= 0) {
      lease_alive = false;
      break;
    }
    if (WaitUnlessStopping(interval)) break;
  }
  {
    MutexLock lock(&mu_);
    stream_context_ = nullptr;
  }
  context.TryCancel();
  Status status = stream->Finish();
  if (!lease_alive) {
    status = Status(StatusCode::kNotFound,
                    absl::StrCat("etcd at ", options_.etcd, " says lease ",
                                 lease, " of '", key_, "' is gone"));
  }
  if (!status.ok()) SetLastError(std::move(status));
  return lease_alive;
}

bool EtcdRegistrar::WaitUnlessStopping(absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Duration left = until - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    stop_requested_.WaitWithTimeout(&mu_, left);
  }
  return true;
}

Status EtcdRegistrar::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopped_) return Status();
    stopped_ = true;
    stopping_ = true;
    if (stream_context_ != nullptr) stream_context_->TryCancel();
    stop_requested_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  int64_t lease;
  {
    MutexLock lock(&mu_);
    lease = lease_id_;
    lease_id_ = 0;
  }
  if (lease == 0) return Status();
  ClientContext context;
  context.set_timeout(options_.call_timeout);
  etcdserverpb::LeaseRevokeRequest revoke;
  revoke.set_id(lease);
  etcdserverpb::LeaseRevokeResponse revoked;
  const Status status =
      etcd_->UnaryCall(&context, kLeaseRevokeMethod, revoke, &revoked);
  if (!status.ok()) {
    return Status(status.code(),
                  absl::StrCat("etcd LeaseRevoke of '", key_, "' at ",
                               options_.etcd, " failed: ", status.message()));
  }
  return Status();
}

void EtcdRegistrar::SetLastError(Status status) {
  MutexLock lock(&mu_);
  if (!stopping_) last_error_ = std::move(status);
}

Status EtcdRegistrar::last_error() {
  MutexLock lock(&mu_);
  return last_error_;
}

int64_t EtcdRegistrar::lease_id() {
  MutexLock lock(&mu_);
  return lease_id_;
}

int EtcdRegistrar::registrations() {
  MutexLock lock(&mu_);
  return registrations_;
}

}  // namespace h2rpc
