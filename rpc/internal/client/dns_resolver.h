#ifndef H2RPC_RPC_INTERNAL_CLIENT_DNS_RESOLVER_H_
#define H2RPC_RPC_INTERNAL_CLIENT_DNS_RESOLVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "rpc/resolver.h"
#include "transport/io/event_loop.h"
#include "transport/io/resolver.h"

namespace h2rpc::internal {

// gRPC's "dns" scheme, the default, on the public resolver API: looks a
// "host:port" up with getaddrinfo on the lookup thread of a
// transport::io::Resolver (ChannelOptions::resolver), gives up on a lookup
// after `lookup_timeout` (UNAVAILABLE naming the option), and looks the
// name up again `refresh_interval` after each success (never when
// infinite). A ResolveNow() while a lookup is under way is dropped: its
// result is still to come. Loop thread only, as every resolver.
class DnsResolver final : public Resolver {
 public:
  struct Options {
    absl::Duration lookup_timeout;
    absl::Duration refresh_interval;
  };

  // `host_port` as ParsedTarget::dns_host_port has it. `lookups`, `loop`
  // (the channel's) and `channel` outlive the resolver.
  DnsResolver(std::string host_port, ResolverChannel* channel,
              transport::io::Resolver* lookups, transport::io::EventLoop* loop,
              Options options);
  // Cancels the lookup under way (its result is dropped) and the timers.
  ~DnsResolver() override;

  void ResolveNow() override;

 private:
  void OnLookup(transport::io::Resolver::Result result);
  void OnLookupTimeout();

  const std::string host_port_;
  ResolverChannel* const channel_;
  transport::io::Resolver* const lookups_;
  transport::io::EventLoop* const loop_;
  const Options options_;
  transport::io::Resolver::Resolution lookup_;
  uint64_t timeout_timer_ = 0;
  uint64_t refresh_timer_ = 0;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_DNS_RESOLVER_H_
