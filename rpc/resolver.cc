#include "rpc/resolver.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"

namespace h2rpc {

namespace {

// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), lowercase here.
bool IsLowercaseScheme(absl::string_view text) {
  if (text.empty() || !absl::ascii_islower(static_cast<unsigned char>(text[0])))
    return false;
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (!absl::ascii_islower(byte) && !absl::ascii_isdigit(byte) && c != '+' &&
        c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

struct Registry {
  Mutex mu;
  std::map<std::string, std::shared_ptr<ResolverFactory>, std::less<>> factories
      ABSL_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* const registry = new Registry;  // never destroyed
  return *registry;
}

}  // namespace

Status ResolverFactory::CheckTarget(const ResolverTarget&) const {
  return Status();
}

std::string ResolverFactory::DefaultAuthority(
    const ResolverTarget& target) const {
  return target.endpoint;
}

Status RegisterResolverFactory(std::shared_ptr<ResolverFactory> factory) {
  if (factory == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "RegisterResolverFactory: null factory");
  }
  std::string scheme = factory->scheme();
  if (!IsLowercaseScheme(scheme)) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("RegisterResolverFactory: '", scheme,
                               "' is not a lowercase URI scheme (a letter, "
                               "then letters, digits, '+', '-', '.')"));
  }
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mu);
  registry.factories[std::move(scheme)] = std::move(factory);
  return Status();
}

std::shared_ptr<ResolverFactory> FindResolverFactory(absl::string_view scheme) {
  const std::string lower = absl::AsciiStrToLower(scheme);
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mu);
  auto it = registry.factories.find(lower);
  return it == registry.factories.end() ? nullptr : it->second;
}

}  // namespace h2rpc
