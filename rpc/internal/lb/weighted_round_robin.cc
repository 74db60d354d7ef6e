#include "rpc/internal/lb/weighted_round_robin.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "rpc/internal/config/service_config.h"
#include "rpc/internal/lb/connect_all.h"

namespace h2rpc::internal {
namespace {

using Json = nlohmann::json;

constexpr char kLoadReportTrailer[] = "endpoint-load-metrics-bin";
constexpr absl::Duration kMinWeightUpdatePeriod = absl::Milliseconds(100);

Status ReadDuration(const Json& object, const char* key, absl::Duration* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status();
  std::string why = "must be a duration string like \"10s\"";
  if (!it->is_string() ||
      !ParseJsonDuration(it->get_ref<const std::string&>(), out, &why)) {
    return Status(StatusCode::kInvalidArgument,
                  absl::StrCat(key, ": ", why, ", got ", it->dump()));
  }
  return Status();
}

}  // namespace

Status ParseWeightedRoundRobinConfig(absl::string_view json,
                                     WeightedRoundRobinConfig* out) {
  const Json root = Json::parse(json.begin(), json.end(), nullptr, false);
  if (!root.is_object()) {
    return Status(StatusCode::kInvalidArgument, "must be a JSON object");
  }
  WeightedRoundRobinConfig config;
  auto oob = root.find("enableOobLoadReport");
  if (oob != root.end() && !oob->is_null()) {
    if (!oob->is_boolean()) {
      return Status(StatusCode::kInvalidArgument,
                    "enableOobLoadReport: must be true or false");
    }
    config.enable_oob_load_report = oob->get<bool>();
  }
  for (const auto& [key, field] :
       {std::pair{"oobReportingPeriod", &config.oob_reporting_period},
        std::pair{"blackoutPeriod", &config.blackout_period},
        std::pair{"weightExpirationPeriod", &config.weight_expiration_period},
        std::pair{"weightUpdatePeriod", &config.weight_update_period}}) {
    Status status = ReadDuration(root, key, field);
    if (!status.ok()) return status;
  }
  // As gRPC: a shorter update period is raised to the minimum.
  config.weight_update_period =
      std::max(config.weight_update_period, kMinWeightUpdatePeriod);
  auto penalty = root.find("errorUtilizationPenalty");
  if (penalty != root.end() && !penalty->is_null()) {
    if (!penalty->is_number() || penalty->get<double>() < 0) {
      return Status(StatusCode::kInvalidArgument,
                    absl::StrCat("errorUtilizationPenalty: must be a number "
                                 "of at least 0, got ",
                                 penalty->dump()));
    }
    config.error_utilization_penalty = penalty->get<double>();
  }
  *out = config;
  return Status();
}

WeightedRoundRobin::WeightedRoundRobin(Helper* helper,
                                       WeightedRoundRobinConfig config,
                                       std::function<absl::Time()> now)
    : helper_(helper),
      config_(config),
      now_(std::move(now)),
      random_(std::random_device()()) {
  ScheduleUpdate();
}

WeightedRoundRobin::~WeightedRoundRobin() {
  helper_->CancelTimer(update_timer_);
}

void WeightedRoundRobin::UpdateAddresses(
    const std::vector<ResolvedAddress>& addresses) {
  if (config_.enable_oob_load_report) {
    UpdateConnectAllSubchannels(addresses, helper_, idle_, nullptr,
                                &subchannels_);
    // A no-op for a subchannel already watched.
    for (SubchannelPtr& subchannel : subchannels_) {
      subchannel->WatchLoadReports(this, config_.oob_reporting_period);
    }
  } else {
    UpdateConnectAllSubchannels(addresses, helper_, idle_, this, &subchannels_);
  }
  // An address still listed keeps its weight.
  std::map<std::string, Endpoint> endpoints;
  for (const ResolvedAddress& address : addresses) {
    auto it = endpoints_.find(address.address);
    endpoints[address.address] =
        it == endpoints_.end() ? Endpoint() : it->second;
  }
  endpoints_ = std::move(endpoints);
  Rebuild();
  ReportState();
}

void WeightedRoundRobin::ExitIdle() {
  idle_ = false;
  for (SubchannelPtr& subchannel : subchannels_) {
    subchannel->RequestConnection();
  }
  ReportState();
}

LbSubchannel* WeightedRoundRobin::Pick() {
  if (schedule_.empty()) return nullptr;
  std::pop_heap(schedule_.begin(), schedule_.end(), Later);
  Entry& next = schedule_.back();
  LbSubchannel* const picked = next.subchannel;
  now_deadline_ = next.deadline;
  next.deadline += next.period;
  std::push_heap(schedule_.begin(), schedule_.end(), Later);  // moves `next`
  return picked;
}

void WeightedRoundRobin::OnSubchannelStateChange(LbSubchannel* subchannel) {
  OnConnectAllSubchannelChange(subchannel, helper_, &last_error_);
  Rebuild();
  ReportState();
}

double WeightedRoundRobin::weight(const std::string& address) const {
  return WeightOf(address, now_());
}

void WeightedRoundRobin::OnCallEnded(LbSubchannel* subchannel, const Status&,
                                     const Metadata& trailers) {
  absl::optional<absl::string_view> bytes = trailers.Get(kLoadReportTrailer);
  if (bytes.has_value()) OnLoadReport(subchannel, *bytes);
}

void WeightedRoundRobin::OnLoadReport(LbSubchannel* subchannel,
                                      absl::string_view report) {
  if (!report_.ParseFromArray(report.data(), static_cast<int>(report.size()))) {
    return;
  }
  const double utilization = report_.application_utilization() > 0
                                 ? report_.application_utilization()
                                 : report_.cpu_utilization();
  const double qps = report_.rps_fractional();
  // A58: a report without both says nothing of the weight.
  if (utilization <= 0 || qps <= 0) return;
  auto it = endpoints_.find(subchannel->address().address);
  if (it == endpoints_.end()) return;
  Endpoint& endpoint = it->second;
  const absl::Time now = now_();
  if (now - endpoint.last_update >= config_.weight_expiration_period) {
    // Expired, or the first report: a blackout period starts.
    endpoint.non_empty_since = absl::InfinitePast();
  }
  endpoint.weight = qps / (utilization + report_.eps() / qps *
                                             config_.error_utilization_penalty);
  if (endpoint.non_empty_since == absl::InfinitePast()) {
    endpoint.non_empty_since = now;
  }
  endpoint.last_update = now;
}

double WeightedRoundRobin::WeightOf(const std::string& address,
                                    absl::Time now) const {
  auto it = endpoints_.find(address);
  if (it == endpoints_.end()) return 0;
  const Endpoint& endpoint = it->second;
  if (now - endpoint.last_update >= config_.weight_expiration_period) {
    return 0;
  }
  if (now - endpoint.non_empty_since < config_.blackout_period) return 0;
  return endpoint.weight;
}

void WeightedRoundRobin::Rebuild() {
  const absl::Time now = now_();
  schedule_.clear();
  double sum = 0;
  int weighted = 0;
  for (const SubchannelPtr& subchannel : subchannels_) {
    if (subchannel->state() != ConnectivityState::kReady) continue;
    const double weight = WeightOf(subchannel->address().address, now);
    if (weight > 0) {
      sum += weight;
      ++weighted;
    }
    schedule_.push_back(Entry{subchannel.get(), weight, 0, 0});
  }
  // Fewer than two weights: every backend alike (round robin).
  const double mean = weighted >= 2 ? sum / weighted : 1;
  std::uniform_real_distribution<double> offset(0, 1);
  for (Entry& entry : schedule_) {
    if (weighted < 2 || entry.weight <= 0) entry.weight = mean;
    entry.period = 1 / entry.weight;
    // Spread out, so that clients do not pick in step.
    entry.deadline = now_deadline_ + offset(random_) * entry.period;
  }
  std::make_heap(schedule_.begin(), schedule_.end(), Later);
}

void WeightedRoundRobin::ReportState() {
  ReportConnectAllState(subchannels_, !schedule_.empty(), idle_, last_error_,
                        helper_);
}

void WeightedRoundRobin::ScheduleUpdate() {
  update_timer_ = helper_->StartTimer(config_.weight_update_period, [this] {
    Rebuild();
    ScheduleUpdate();
  });
}

namespace {

class WeightedRoundRobinFactory final : public LbPolicyFactory {
 public:
  std::string name() const override { return "weighted_round_robin"; }
  Status CheckConfig(absl::string_view config) const override {
    WeightedRoundRobinConfig parsed;
    return ParseWeightedRoundRobinConfig(config, &parsed);
  }
  std::unique_ptr<LbPolicy> Create(LbPolicy::Helper* helper,
                                   absl::string_view config) override {
    WeightedRoundRobinConfig parsed;
    if (!ParseWeightedRoundRobinConfig(config, &parsed).ok()) return nullptr;
    return std::make_unique<WeightedRoundRobin>(helper, parsed);
  }
};

}  // namespace

std::shared_ptr<LbPolicyFactory> NewWeightedRoundRobinFactory() {
  return std::make_shared<WeightedRoundRobinFactory>();
}

}  // namespace h2rpc::internal
