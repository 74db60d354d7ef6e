#include "rpc/name_resolver.h"

#include <memory>
#include <utility>

#include "rpc/internal/name_resolver_impl.h"
#include "transport/io/resolver.h"

namespace h2rpc {

NameResolver::NameResolver()
    : impl_(std::make_unique<internal::NameResolverImpl>(
          internal::NameResolverImpl{
              std::make_shared<transport::io::Resolver>()})) {}

NameResolver::NameResolver(std::unique_ptr<internal::NameResolverImpl> impl)
    : impl_(std::move(impl)) {}

NameResolver::~NameResolver() = default;

}  // namespace h2rpc
