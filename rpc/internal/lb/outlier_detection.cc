#include "rpc/internal/lb/outlier_detection.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "rpc/internal/config/service_config.h"

namespace h2rpc::internal {
namespace {

using Json = nlohmann::json;

Status Invalid(absl::string_view field, absl::string_view what) {
  return Status(StatusCode::kInvalidArgument, absl::StrCat(field, ": ", what));
}

// `object`'s member `key` into `*out` when present and not null.
Status ReadDuration(const Json& object, const char* key, absl::Duration* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status();
  std::string why = "must be a duration string like \"10s\"";
  if (!it->is_string() ||
      !ParseJsonDuration(it->get_ref<const std::string&>(), out, &why)) {
    return Invalid(key, absl::StrCat(why, ", got ", it->dump()));
  }
  return Status();
}

Status ReadCount(const Json& object, const char* key, uint32_t max,
                 uint32_t* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status();
  if (!it->is_number_unsigned() || it->get<uint64_t>() > max) {
    return Invalid(key, absl::StrCat("must be an integer from 0 to ", max,
                                     ", got ", it->dump()));
  }
  *out = static_cast<uint32_t>(it->get<uint64_t>());
  return Status();
}

}  // namespace

Status ParseOutlierDetectionConfig(absl::string_view json,
                                   const ChildPolicyFinder& find,
                                   OutlierDetectionConfig* out) {
  const Json root = Json::parse(json.begin(), json.end(), nullptr, false);
  if (!root.is_object()) {
    return Status(StatusCode::kInvalidArgument, "must be a JSON object");
  }
  OutlierDetectionConfig config;
  constexpr uint32_t kAny = 0xffffffffu;
  Status status = ReadDuration(root, "interval", &config.interval);
  if (status.ok()) {
    status = ReadDuration(root, "baseEjectionTime", &config.base_ejection_time);
  }
  if (status.ok()) {
    status = ReadDuration(root, "maxEjectionTime", &config.max_ejection_time);
  }
  if (status.ok()) {
    status = ReadCount(root, "maxEjectionPercent", 100,
                       &config.max_ejection_percent);
  }
  if (!status.ok()) return status;
  if (config.interval <= absl::ZeroDuration()) {
    return Invalid("interval", "must be more than 0s");
  }
  auto success = root.find("successRateEjection");
  if (success != root.end() && !success->is_null()) {
    if (!success->is_object()) {
      return Invalid("successRateEjection", "must be an object");
    }
    OutlierDetectionConfig::SuccessRate rate;
    status = ReadCount(*success, "stdevFactor", kAny, &rate.stdev_factor);
    if (status.ok()) {
      status = ReadCount(*success, "enforcementPercentage", 100,
                         &rate.enforcement_percentage);
    }
    if (status.ok()) {
      status = ReadCount(*success, "minimumHosts", kAny, &rate.minimum_hosts);
    }
    if (status.ok()) {
      status = ReadCount(*success, "requestVolume", kAny, &rate.request_volume);
    }
    if (!status.ok()) {
      return Status(status.code(),
                    absl::StrCat("successRateEjection.", status.message()));
    }
    config.success_rate = rate;
  }
  auto failure = root.find("failurePercentageEjection");
  if (failure != root.end() && !failure->is_null()) {
    if (!failure->is_object()) {
      return Invalid("failurePercentageEjection", "must be an object");
    }
    OutlierDetectionConfig::FailurePercentage percentage;
    status = ReadCount(*failure, "threshold", 100, &percentage.threshold);
    if (status.ok()) {
      status = ReadCount(*failure, "enforcementPercentage", 100,
                         &percentage.enforcement_percentage);
    }
    if (status.ok()) {
      status =
          ReadCount(*failure, "minimumHosts", kAny, &percentage.minimum_hosts);
    }
    if (status.ok()) {
      status = ReadCount(*failure, "requestVolume", kAny,
                         &percentage.request_volume);
    }
    if (!status.ok()) {
      return Status(status.code(), absl::StrCat("failurePercentageEjection.",
                                                status.message()));
    }
    config.failure_percentage = percentage;
  }
  auto child = root.find("childPolicy");
  if (child == root.end() || !child->is_array()) {
    return Invalid("childPolicy",
                   "must be a list of policies, e.g. [{\"round_robin\": {}}]");
  }
  for (const Json& entry : *child) {
    if (!entry.is_object() || entry.size() != 1 ||
        !entry.begin().value().is_object()) {
      return Invalid("childPolicy",
                     "each entry must be {\"policy_name\": {config}}");
    }
    std::shared_ptr<LbPolicyFactory> factory = find(entry.begin().key());
    if (factory == nullptr) continue;
    std::string child_config = entry.begin().value().dump();
    status = factory->CheckConfig(child_config);
    if (!status.ok()) {
      return Invalid(absl::StrCat("childPolicy.", entry.begin().key()),
                     status.message());
    }
    config.child_policy = entry.begin().key();
    config.child_config = std::move(child_config);
    *out = std::move(config);
    return Status();
  }
  return Invalid("childPolicy", "names no policy this channel has");
}

// What the outlier detection knows of one address.
struct OutlierDetection::AddressState {
  // Call outcomes: those of the interval under way, and of the last one.
  uint64_t successes = 0;
  uint64_t failures = 0;
  uint64_t last_successes = 0;
  uint64_t last_failures = 0;
  bool ejected = false;
  absl::Time ejected_at;
  // Ejections in a row (less one per interval spent not ejected).
  int multiplier = 0;
  // In the latest address list (else kept while a subchannel uses it).
  bool listed = false;
  std::vector<EjectableSubchannel*> subchannels;
};

// What the child policy holds: the channel's subchannel, shown in
// TRANSIENT_FAILURE while its address is ejected; its load reports are
// the channel's subchannel's.
class OutlierDetection::EjectableSubchannel final
    : public LbSubchannel,
      private LbLoadReportWatcher {
 public:
  EjectableSubchannel(OutlierDetection* owner, SubchannelPtr real,
                      AddressState* state)
      : LbSubchannel(real->address()),
        owner_(owner),
        real_(std::move(real)),
        state_(state) {}

  ConnectivityState state() const override {
    return state_->ejected ? ConnectivityState::kTransientFailure
                           : real_->state();
  }
  const Status& last_error() const override {
    static const Status* const ejected =
        new Status(StatusCode::kUnavailable, "ejected by outlier detection");
    return state_->ejected ? *ejected : real_->last_error();
  }
  void RequestConnection() override { real_->RequestConnection(); }
  void WatchLoadReports(LbLoadReportWatcher* watcher,
                        absl::Duration interval) override {
    load_report_watcher_ = watcher;
    real_->WatchLoadReports(watcher == nullptr ? nullptr : this, interval);
  }

  LbSubchannel* real() const { return real_.get(); }
  const OutlierDetection* owner() const { return owner_; }

 private:
  void Orphan() override {
    owner_->wrappers_.erase(real_.get());
    auto& list = state_->subchannels;
    list.erase(std::remove(list.begin(), list.end(), this), list.end());
    if (list.empty() && !state_->listed) {
      owner_->addresses_.erase(address().address);
    }
    delete this;  // orphans the channel's subchannel
  }

  void OnLoadReport(LbSubchannel*, absl::string_view report) override {
    load_report_watcher_->OnLoadReport(this, report);
  }

  OutlierDetection* const owner_;
  const SubchannelPtr real_;
  AddressState* const state_;
  LbLoadReportWatcher* load_report_watcher_ = nullptr;
};

OutlierDetection::OutlierDetection(LbPolicy::Helper* helper,
                                   OutlierDetectionConfig config,
                                   std::shared_ptr<LbPolicyFactory> child,
                                   std::function<absl::Time()> now)
    : helper_(helper),
      config_(std::move(config)),
      now_(std::move(now)),
      random_(std::random_device()()) {
  child_ =
      child->Create(static_cast<LbPolicy::Helper*>(this), config_.child_config);
  if (counting()) ScheduleInterval();
}

OutlierDetection::~OutlierDetection() {
  helper_->CancelTimer(interval_timer_);
  child_.reset();
}

void OutlierDetection::UpdateAddresses(
    const std::vector<ResolvedAddress>& addresses) {
  for (auto& [address, state] : addresses_) state.listed = false;
  for (const ResolvedAddress& address : addresses) {
    addresses_[address.address].listed = true;
  }
  child_->UpdateAddresses(addresses);
  for (auto it = addresses_.begin(); it != addresses_.end();) {
    if (!it->second.listed && it->second.subchannels.empty()) {
      it = addresses_.erase(it);
    } else {
      ++it;
    }
  }
}

LbSubchannel* OutlierDetection::Pick() {
  LbSubchannel* const picked = child_->Pick();
  if (picked == nullptr) return nullptr;
  // The child picks among the wrappers it was given; anything else goes
  // to the channel as it is, which refuses it.
  auto* const wrapper = static_cast<EjectableSubchannel*>(picked);
  return wrapper->owner() == this ? wrapper->real() : picked;
}

void OutlierDetection::OnSubchannelStateChange(LbSubchannel* subchannel) {
  EjectableSubchannel* const wrapper = Wrapper(subchannel);
  if (wrapper == nullptr) return;
  auto it = addresses_.find(wrapper->address().address);
  // An ejected address looks TRANSIENT_FAILURE whatever its connection
  // does.
  if (it != addresses_.end() && it->second.ejected) return;
  child_->OnSubchannelStateChange(wrapper);
}

bool OutlierDetection::ejected(const std::string& address) const {
  auto it = addresses_.find(address);
  return it != addresses_.end() && it->second.ejected;
}

SubchannelPtr OutlierDetection::CreateSubchannel(
    const ResolvedAddress& address) {
  SubchannelPtr real = helper_->CreateSubchannel(address);
  if (counting()) real->set_call_observer(this);
  AddressState& state = addresses_[real->address().address];
  LbSubchannel* const key = real.get();
  auto* wrapper = new EjectableSubchannel(this, std::move(real), &state);
  state.subchannels.push_back(wrapper);
  wrappers_[key] = wrapper;
  return SubchannelPtr(wrapper);
}

void OutlierDetection::OnCallEnded(LbSubchannel* subchannel,
                                   const Status& status,
                                   const Metadata& trailers) {
  EjectableSubchannel* const wrapper = Wrapper(subchannel);
  if (wrapper == nullptr) return;
  auto it = addresses_.find(wrapper->address().address);
  if (it != addresses_.end()) {
    ++(status.ok() ? it->second.successes : it->second.failures);
  }
  if (LbCallObserver* const observer = wrapper->call_observer()) {
    observer->OnCallEnded(wrapper, status, trailers);
  }
}

OutlierDetection::EjectableSubchannel* OutlierDetection::Wrapper(
    LbSubchannel* subchannel) const {
  auto it = wrappers_.find(subchannel);
  return it == wrappers_.end() ? nullptr : it->second;
}

void OutlierDetection::ScheduleInterval() {
  interval_timer_ =
      helper_->StartTimer(config_.interval, [this] { RunInterval(); });
}

void OutlierDetection::RunInterval() {
  for (auto& [address, state] : addresses_) {
    state.last_successes = std::exchange(state.successes, 0);
    state.last_failures = std::exchange(state.failures, 0);
  }
  if (config_.success_rate.has_value()) SuccessRateEjection();
  if (config_.failure_percentage.has_value()) FailurePercentageEjection();
  const absl::Time now = now_();
  for (auto& [address, state] : addresses_) {
    if (!state.ejected) {
      if (state.multiplier > 0) --state.multiplier;
      continue;
    }
    const absl::Duration ejection = std::min(
        config_.base_ejection_time * state.multiplier,
        std::max(config_.base_ejection_time, config_.max_ejection_time));
    if (now >= state.ejected_at + ejection) Uneject(state);
  }
  ScheduleInterval();
}

void OutlierDetection::SuccessRateEjection() {
  const OutlierDetectionConfig::SuccessRate& rule = *config_.success_rate;
  std::vector<std::pair<AddressState*, double>> candidates;
  for (auto& [address, state] : addresses_) {
    const uint64_t volume = state.last_successes + state.last_failures;
    if (volume > 0 && volume >= rule.request_volume) {
      candidates.emplace_back(
          &state, static_cast<double>(state.last_successes) / volume);
    }
  }
  if (candidates.empty() || candidates.size() < rule.minimum_hosts) return;
  double mean = 0;
  for (const auto& [state, rate] : candidates) mean += rate;
  mean /= candidates.size();
  double variance = 0;
  for (const auto& [state, rate] : candidates) {
    variance += (rate - mean) * (rate - mean);
  }
  const double stdev = std::sqrt(variance / candidates.size());
  const double threshold = mean - stdev * (rule.stdev_factor / 1000.0);
  const absl::Time now = now_();
  for (const auto& [state, rate] : candidates) {
    if (rate >= threshold || state->ejected) continue;
    if (!MayEject()) return;
    if (std::uniform_int_distribution<uint32_t>(0, 99)(random_) <
        rule.enforcement_percentage) {
      Eject(*state, now);
    }
  }
}

void OutlierDetection::FailurePercentageEjection() {
  const OutlierDetectionConfig::FailurePercentage& rule =
      *config_.failure_percentage;
  std::vector<AddressState*> candidates;
  for (auto& [address, state] : addresses_) {
    const uint64_t volume = state.last_successes + state.last_failures;
    if (volume > 0 && volume >= rule.request_volume) {
      candidates.push_back(&state);
    }
  }
  if (candidates.empty() || candidates.size() < rule.minimum_hosts) return;
  const absl::Time now = now_();
  for (AddressState* state : candidates) {
    const uint64_t volume = state->last_successes + state->last_failures;
    const double failure_percent = 100.0 * state->last_failures / volume;
    if (failure_percent <= rule.threshold || state->ejected) continue;
    if (!MayEject()) return;
    if (std::uniform_int_distribution<uint32_t>(0, 99)(random_) <
        rule.enforcement_percentage) {
      Eject(*state, now);
    }
  }
}

bool OutlierDetection::MayEject() const {
  size_t ejected = 0;
  for (const auto& [address, state] : addresses_) ejected += state.ejected;
  return ejected * 100 < config_.max_ejection_percent * addresses_.size();
}

void OutlierDetection::Eject(AddressState& state, absl::Time now) {
  state.ejected = true;
  state.ejected_at = now;
  ++state.multiplier;
  ReportTo(state);
}

void OutlierDetection::Uneject(AddressState& state) {
  state.ejected = false;
  ReportTo(state);
}

void OutlierDetection::ReportTo(AddressState& state) {
  // The child may orphan wrappers (even all of them) as it is told.
  const std::vector<EjectableSubchannel*> wrappers = state.subchannels;
  for (EjectableSubchannel* wrapper : wrappers) {
    if (wrappers_.count(wrapper->real()) == 0) continue;
    child_->OnSubchannelStateChange(wrapper);
  }
}

namespace {

class OutlierDetectionFactory final : public LbPolicyFactory {
 public:
  explicit OutlierDetectionFactory(ChildPolicyFinder find)
      : find_(std::move(find)) {}
  std::string name() const override { return "outlier_detection_experimental"; }
  Status CheckConfig(absl::string_view config) const override {
    OutlierDetectionConfig parsed;
    return ParseOutlierDetectionConfig(config, find_, &parsed);
  }
  std::unique_ptr<LbPolicy> Create(LbPolicy::Helper* helper,
                                   absl::string_view config) override {
    OutlierDetectionConfig parsed;
    if (!ParseOutlierDetectionConfig(config, find_, &parsed).ok()) {
      return nullptr;
    }
    std::shared_ptr<LbPolicyFactory> child = find_(parsed.child_policy);
    return std::make_unique<OutlierDetection>(helper, std::move(parsed),
                                              std::move(child));
  }

 private:
  const ChildPolicyFinder find_;
};

}  // namespace

std::shared_ptr<LbPolicyFactory> NewOutlierDetectionFactory(
    ChildPolicyFinder find) {
  return std::make_shared<OutlierDetectionFactory>(std::move(find));
}

}  // namespace h2rpc::internal
