#include "rpc/load_balancing.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"

namespace h2rpc {
namespace {

bool IsPolicyName(absl::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

struct Registry {
  Mutex mu;
  std::map<std::string, std::shared_ptr<LbPolicyFactory>, std::less<>> factories
      ABSL_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* const registry = new Registry;  // never destroyed
  return *registry;
}

}  // namespace

Status LbPolicyFactory::CheckConfig(absl::string_view) const {
  return Status();
}

Status RegisterLbPolicyFactory(std::shared_ptr<LbPolicyFactory> factory) {
  if (factory == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "RegisterLbPolicyFactory: null factory");
  }
  std::string name = factory->name();
  if (!IsPolicyName(name)) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat("RegisterLbPolicyFactory: '", name,
                               "' is not a policy name (letters, digits, "
                               "'_', '-', '.')"));
  }
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mu);
  registry.factories[std::move(name)] = std::move(factory);
  return Status();
}

std::shared_ptr<LbPolicyFactory> FindLbPolicyFactory(absl::string_view name) {
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mu);
  auto it = registry.factories.find(name);
  return it == registry.factories.end() ? nullptr : it->second;
}

}  // namespace h2rpc
