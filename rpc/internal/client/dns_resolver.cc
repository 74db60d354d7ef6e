#include "rpc/internal/client/dns_resolver.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace h2rpc::internal {

DnsResolver::DnsResolver(std::string host_port, ResolverChannel* channel,
                         transport::io::Resolver* lookups,
                         transport::io::EventLoop* loop, Options options)
    : host_port_(std::move(host_port)),
      channel_(channel),
      lookups_(lookups),
      loop_(loop),
      options_(options) {}

DnsResolver::~DnsResolver() {
  lookup_.Cancel();
  channel_->CancelTimer(timeout_timer_);
  channel_->CancelTimer(refresh_timer_);
}

void DnsResolver::ResolveNow() {
  if (lookup_.active()) return;
  channel_->CancelTimer(refresh_timer_);
  timeout_timer_ = channel_->StartTimer(options_.lookup_timeout,
                                        [this] { OnLookupTimeout(); });
  // Safe to capture `this`: the destructor cancels the lookup, and a
  // cancelled one never calls back.
  lookup_ = lookups_->Resolve(host_port_, loop_,
                              [this](transport::io::Resolver::Result result) {
                                OnLookup(std::move(result));
                              });
}

void DnsResolver::OnLookup(transport::io::Resolver::Result result) {
  channel_->CancelTimer(timeout_timer_);
  if (!result.status.ok()) {
    channel_->Error(result.status);
    return;
  }
  ResolverResult resolved;
  resolved.addresses.reserve(result.addresses.size());
  for (const transport::io::SocketAddress& address : result.addresses) {
    resolved.addresses.push_back(ResolvedAddress{address.ToString(), {}});
  }
  channel_->Update(std::move(resolved));
  if (options_.refresh_interval != absl::InfiniteDuration()) {
    refresh_timer_ = channel_->StartTimer(options_.refresh_interval,
                                          [this] { ResolveNow(); });
  }
}

void DnsResolver::OnLookupTimeout() {
  lookup_.Cancel();
  channel_->Error(
      Status(StatusCode::kUnavailable,
             absl::StrCat("resolving '", host_port_, "' timed out after ",
                          absl::FormatDuration(options_.lookup_timeout),
                          " (ChannelOptions::min_connect_timeout)")));
}

}  // namespace h2rpc::internal
