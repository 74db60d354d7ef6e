#include "rpc/internal/lb/builtin_policies.h"

#include <memory>
#include <string>

#include "nlohmann/json.hpp"
#include "rpc/internal/config/service_config.h"
#include "rpc/internal/lb/outlier_detection.h"
#include "rpc/internal/lb/pick_first.h"
#include "rpc/internal/lb/round_robin.h"
#include "rpc/internal/lb/weighted_round_robin.h"

namespace h2rpc::internal {
namespace {

class PickFirstFactory final : public LbPolicyFactory {
 public:
  std::string name() const override { return "pick_first"; }
  Status CheckConfig(absl::string_view config) const override {
    return BuiltinLbPolicies().Check("pick_first", config);
  }
  std::unique_ptr<LbPolicy> Create(LbPolicy::Helper* helper,
                                   absl::string_view config) override {
    const nlohmann::json parsed =
        nlohmann::json::parse(config.begin(), config.end(), nullptr, false);
    bool shuffle = false;
    if (parsed.is_object()) {
      auto it = parsed.find("shuffleAddressList");
      shuffle = it != parsed.end() && it->is_boolean() && it->get<bool>();
    }
    return std::make_unique<PickFirst>(helper, shuffle);
  }
};

class RoundRobinFactory final : public LbPolicyFactory {
 public:
  std::string name() const override { return "round_robin"; }
  std::unique_ptr<LbPolicy> Create(LbPolicy::Helper* helper,
                                   absl::string_view) override {
    return std::make_unique<RoundRobin>(helper);
  }
};

}  // namespace

std::shared_ptr<LbPolicyFactory> BuiltinLbPolicyFactory(
    absl::string_view name) {
  static const auto* const pick_first = new std::shared_ptr<LbPolicyFactory>(
      std::make_shared<PickFirstFactory>());
  static const auto* const round_robin = new std::shared_ptr<LbPolicyFactory>(
      std::make_shared<RoundRobinFactory>());
  // Its children: registered policies first, as for a channel.
  static const auto* const outlier_detection =
      new std::shared_ptr<LbPolicyFactory>(
          NewOutlierDetectionFactory([](absl::string_view child) {
            std::shared_ptr<LbPolicyFactory> factory =
                FindLbPolicyFactory(child);
            return factory != nullptr ? factory : BuiltinLbPolicyFactory(child);
          }));
  if (name == "pick_first") return *pick_first;
  if (name == "round_robin") return *round_robin;
  static const auto* const weighted_round_robin =
      new std::shared_ptr<LbPolicyFactory>(NewWeightedRoundRobinFactory());
  if (name == "outlier_detection_experimental") return *outlier_detection;
  if (name == "weighted_round_robin") return *weighted_round_robin;
  return nullptr;
}

}  // namespace h2rpc::internal
