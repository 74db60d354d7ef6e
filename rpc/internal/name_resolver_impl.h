#ifndef H2RPC_RPC_INTERNAL_NAME_RESOLVER_IMPL_H_
#define H2RPC_RPC_INTERNAL_NAME_RESOLVER_IMPL_H_

#include <memory>

#include "transport/io/resolver.h"

namespace h2rpc::internal {

// What a NameResolver holds: the transport's resolver, shared with every
// channel that uses it (a channel keeps it as long as the channel lives, so
// the NameResolver may go first).
struct NameResolverImpl {
  std::shared_ptr<transport::io::Resolver> resolver;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_NAME_RESOLVER_IMPL_H_
