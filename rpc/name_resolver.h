#ifndef H2RPC_RPC_NAME_RESOLVER_H_
#define H2RPC_RPC_NAME_RESOLVER_H_

#include <memory>

namespace h2rpc {

namespace internal {
struct NameResolverImpl;
}  // namespace internal

// Looks up the host names of channel targets on a thread of its own, so
// that a lookup that blocks (a slow DNS server) never stalls a channel's
// event loop. The thread starts on the first lookup; lookups run one at a
// time, in request order. Share one between channels with
// ChannelOptions::resolver; by default each channel makes its own. Any
// thread may hold and release it; the last owner's release returns promptly
// even while a lookup blocks (the lookup finishes on its own and its result
// is dropped).
class NameResolver final {
 public:
  // Looks names up with getaddrinfo.
  NameResolver();
  // Looks names up as `impl` says (tests inject lookups that block; the
  // type is internal, see rpc/internal/name_resolver_impl.h). Neither `impl`
  // nor its resolver may be null.
  explicit NameResolver(std::unique_ptr<internal::NameResolverImpl> impl);
  ~NameResolver();
  NameResolver(const NameResolver&) = delete;
  NameResolver& operator=(const NameResolver&) = delete;

  // For the channel.
  internal::NameResolverImpl& impl() const { return *impl_; }

 private:
  const std::unique_ptr<internal::NameResolverImpl> impl_;
};

}  // namespace h2rpc

#endif  // H2RPC_RPC_NAME_RESOLVER_H_
