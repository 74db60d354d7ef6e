#ifndef H2RPC_RPC_RESOLVER_H_
#define H2RPC_RPC_RESOLVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/status.h"

namespace h2rpc {

// Name resolution plugins: a channel whose target has a scheme a
// ResolverFactory is registered for ("etcd://127.0.0.1:2379/greeter") asks
// that factory for a Resolver, which tells the channel the target's
// addresses (and, if it has one, a service config) whenever they change.
// h2rpc's own schemes are "dns" (the default, for a target without one),
// "ipv4", "ipv6", "unix" and "unix-abstract"; a registered factory for one
// of those takes its place. See docs/scaling-out.md.

// One address a resolver found.
struct ResolvedAddress {
  // "IP:PORT" with a numeric IPv4 or IPv6 address ("10.0.0.7:50051",
  // "[::1]:50051", "[fe80::1%eth0]:50051"), "unix:PATH" or
  // "unix-abstract:NAME". A resolver looks host names up itself: a channel
  // never resolves what a resolver returns.
  std::string address;
  // What the resolver knows of the address, for load-balancing policies
  // ("weight", "zone", a registry's metadata); h2rpc's own policies read
  // none of it.
  std::vector<std::pair<std::string, std::string>> attributes;
};

// What a resolver found for its target.
struct ResolverResult {
  // At least one.
  std::vector<ResolvedAddress> addresses;
  // A service config in gRPC's JSON form (the format of
  // ChannelOptions::service_config), or empty: the channel's
  // ChannelOptions::service_config applies.
  std::string service_config;
};

// A target as a resolver factory gets it, split as a URI:
// "etcd://10.0.0.1:2379,10.0.0.2:2379/greeter" has the scheme "etcd", the
// authority "10.0.0.1:2379,10.0.0.2:2379" and the endpoint "greeter";
// "scheme:opaque" (no "//") has an empty authority and the endpoint
// "opaque".
struct ResolverTarget {
  std::string target;  // the whole target, as the channel got it
  std::string scheme;  // lowercase
  std::string authority;
  std::string endpoint;  // the path without its leading '/'
};

// The channel as its resolver sees it. Valid from the resolver's creation
// until its destructor returns: a resolver that reports from threads of its
// own stops them (or has them drop their reports) before then. Reports and
// tasks still on their way to the loop when the resolver is destroyed are
// dropped. Any method may be called from any thread unless it says
// otherwise.
class ResolverChannel {
 public:
  // New addresses, or a new service config: the channel hands them to its
  // load-balancing policy on its event loop (never on the caller's stack).
  // An address that is not one (a host name, no port) is skipped. A result
  // the channel cannot use (no usable address, a service config that does
  // not parse) counts as an Error() saying what is wrong with it.
  // Allocates.
  virtual void Update(ResolverResult result) = 0;
  // The target cannot be resolved now. A channel that has addresses keeps
  // them; one that has none goes TRANSIENT_FAILURE and fails its calls
  // (those not wait_for_ready) with UNAVAILABLE and `error`'s message. In
  // either case the channel calls ResolveNow() again after its connection
  // backoff (ChannelOptions::initial_backoff and what follows it). Allocates.
  virtual void Error(const Status& error) = 0;

  // Runs `task` on the channel's event loop thread, never on the caller's
  // stack; dropped (destroyed, not run) once the resolver is destroyed.
  // Allocates.
  virtual void Post(absl::AnyInvocable<void()> task) = 0;
  // Loop thread only. Runs `task` on the loop thread after `delay` unless
  // CancelTimer(id) comes first; the returned id is never 0. Timers still
  // pending when the resolver is destroyed never run. Allocates.
  virtual uint64_t StartTimer(absl::Duration delay,
                              absl::AnyInvocable<void()> task) = 0;
  // Loop thread only. No-op for a timer that has run or was cancelled.
  virtual void CancelTimer(uint64_t id) = 0;

 protected:
  ~ResolverChannel() = default;
};

// A channel's resolver for one target. Created, called and destroyed on the
// channel's event loop thread, whose other work waits while any of its
// methods runs: a resolver never blocks there (a lookup that may block runs
// on a thread of the resolver's own, or in an asynchronous call). The
// channel makes one when it first needs addresses and destroys it when it
// goes idle (ChannelOptions::idle_timeout) or is destroyed; a later call
// makes another.
class Resolver {
 public:
  virtual ~Resolver() = default;

  // Resolve the target. Called once right after creation (the first
  // resolution), then whenever the channel's addresses may be stale (a
  // connection failed or ended; at most once per
  // ChannelOptions::dns_min_time_between_resolutions), and after a reported
  // Error() once the backoff has passed. A resolver that watches its
  // registry (is told of every change) may ignore all but the first and
  // those after an error.
  virtual void ResolveNow() = 0;
};

// Makes the resolvers of one URI scheme. Register it process-wide with
// RegisterResolverFactory, or for one channel in
// ChannelOptions::resolver_factories. Its methods may run on any thread,
// several at once (several channels use it).
class ResolverFactory {
 public:
  virtual ~ResolverFactory() = default;

  // The scheme this factory resolves: letters, digits, '+', '-', '.',
  // starting with a letter, lowercase ("etcd").
  virtual std::string scheme() const = 0;
  // Whether `target` is one this factory can resolve, checked when a
  // channel is created: not OK makes every call of the channel fail with
  // INVALID_ARGUMENT and this message. Default: OK.
  virtual Status CheckTarget(const ResolverTarget& target) const;
  // The :authority of the channel's calls (unless
  // ChannelOptions::ssl_target_name_override or ClientContext::set_authority
  // says otherwise), and the name a TLS server's certificate must match;
  // a byte not allowed in an authority is sent percent-encoded ("%2F" for
  // '/'). Default: the target's endpoint.
  virtual std::string DefaultAuthority(const ResolverTarget& target) const;
  // A resolver for `target` (which passed CheckTarget), reporting to
  // `channel`. The channel's event loop thread. A null resolver puts the
  // channel in TRANSIENT_FAILURE (with a message naming the scheme) until it
  // next leaves IDLE.
  virtual std::unique_ptr<Resolver> Create(const ResolverTarget& target,
                                           ResolverChannel* channel) = 0;
};

// Registers `factory` for its scheme in this process, replacing any factory
// registered for it before. Channels created from then on use it; channels
// that exist keep what they have. Any thread. INVALID_ARGUMENT for a null
// factory or a scheme that is not valid (see ResolverFactory::scheme()).
Status RegisterResolverFactory(std::shared_ptr<ResolverFactory> factory);

// The factory registered for `scheme` (any case), or null. Any thread.
std::shared_ptr<ResolverFactory> FindResolverFactory(absl::string_view scheme);

}  // namespace h2rpc

#endif  // H2RPC_RPC_RESOLVER_H_
