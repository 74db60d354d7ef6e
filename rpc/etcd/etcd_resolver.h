#ifndef H2RPC_RPC_ETCD_ETCD_RESOLVER_H_
#define H2RPC_RPC_ETCD_ETCD_RESOLVER_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "rpc/channel.h"
#include "rpc/resolver.h"

namespace h2rpc {

// Resolves "etcd://HOST:PORT[,HOST:PORT...]/SERVICE" targets through etcd's
// v3 API (itself gRPC, spoken by an h2rpc channel to etcd): the endpoints
// registered under "SERVICE/" in the layout of etcd's naming/endpoints
// package (rpc/etcd/etcd_naming.h; EtcdRegistrar writes it), read with one
// KV.Range and then followed with a Watch stream from the revision it
// returned. A broken watch is reported to the channel (which keeps its
// addresses) and resumed from the last revision seen once the channel's
// backoff passes; a watch whose revision etcd has compacted away starts
// over with a fresh Range. Each address carries the attributes "etcd.key"
// (its key) and, when set, "etcd.metadata" (its Metadata as JSON text).
// Values that do not parse, and Addr values that are not numeric (h2rpc
// does not look up the host names of resolved addresses), are skipped.
//
// Register it once: RegisterResolverFactory(
//     std::make_shared<EtcdResolverFactory>());
// Channels to the same etcd endpoints share one channel to etcd, made on
// the first and closed with the last. Thread-safe.
class EtcdResolverFactory final : public ResolverFactory {
 public:
  struct Options {
    // Credentials of the channels to etcd; null: plaintext.
    std::shared_ptr<ChannelCredentials> credentials;
    // Options of the channels to etcd. Their keepalive (by default every
    // 30 s, 10 s to answer, also without calls) finds a dead etcd
    // connection under an idle watch.
    ChannelOptions channel_options = DefaultChannelOptions();
    // Deadline of each Range.
    absl::Duration range_timeout = absl::Seconds(10);
    // Most endpoints a resolver uses: beyond it, the first by key (in a
    // Range) or by arrival (on the watch) are kept and the others left
    // out, said once on stderr; one left out is not taken up when a kept
    // one goes, until the next Range (after a compaction). The Range
    // response itself is bounded by channel_options'
    // max_receive_message_size. Endpoints.
    size_t max_endpoints = 1000;

    static ChannelOptions DefaultChannelOptions();
  };

  EtcdResolverFactory() : EtcdResolverFactory(Options()) {}
  explicit EtcdResolverFactory(Options options);

  std::string scheme() const override { return "etcd"; }
  // INVALID_ARGUMENT without etcd endpoints or a service, or for several
  // endpoints that are not numeric addresses of one family.
  Status CheckTarget(const ResolverTarget& target) const override;
  // The service name.
  std::string DefaultAuthority(const ResolverTarget& target) const override;
  std::unique_ptr<Resolver> Create(const ResolverTarget& target,
                                   ResolverChannel* channel) override;

 private:
  // The channel to the etcd endpoints `target` names, shared.
  std::shared_ptr<Channel> EtcdChannel(const std::string& endpoints);

  const Options options_;
  Mutex mu_;
  std::map<std::string, std::weak_ptr<Channel>> channels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_ETCD_ETCD_RESOLVER_H_
