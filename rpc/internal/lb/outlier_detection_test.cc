#include "rpc/internal/lb/outlier_detection.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/xds/data/orca/v3/orca_load_report.pb.h"
#include "rpc/internal/lb/builtin_policies.h"
#include "rpc/internal/lb/fake_lb_helper.h"

namespace h2rpc::internal {
namespace {

using S = ConnectivityState;
using ::testing::HasSubstr;

OutlierDetectionConfig Parse(const std::string& json) {
  OutlierDetectionConfig config;
  const Status status =
      ParseOutlierDetectionConfig(json, BuiltinLbPolicyFactory, &config);
  EXPECT_TRUE(status.ok()) << json << ": " << status.ToString();
  return config;
}

TEST(OutlierDetectionConfigTest, DefaultsAndFields) {
  OutlierDetectionConfig config =
      Parse(R"({"childPolicy": [{"round_robin": {}}]})");
  EXPECT_EQ(config.interval, absl::Seconds(10));
  EXPECT_EQ(config.base_ejection_time, absl::Seconds(30));
  EXPECT_EQ(config.max_ejection_time, absl::Seconds(300));
  EXPECT_EQ(config.max_ejection_percent, 10u);
  EXPECT_FALSE(config.success_rate.has_value());
  EXPECT_FALSE(config.failure_percentage.has_value());
  EXPECT_EQ(config.child_policy, "round_robin");

  config = Parse(R"({"interval": "1.5s", "baseEjectionTime": "2s",
      "maxEjectionTime": "20s", "maxEjectionPercent": 50,
      "successRateEjection": {"stdevFactor": 1000, "minimumHosts": 3},
      "failurePercentageEjection": {"threshold": 40, "requestVolume": 7},
      "childPolicy": [{"ring_hash": {}}, {"pick_first": {}}]})");
  EXPECT_EQ(config.interval, absl::Milliseconds(1500));
  EXPECT_EQ(config.base_ejection_time, absl::Seconds(2));
  EXPECT_EQ(config.max_ejection_time, absl::Seconds(20));
  EXPECT_EQ(config.max_ejection_percent, 50u);
  ASSERT_TRUE(config.success_rate.has_value());
  EXPECT_EQ(config.success_rate->stdev_factor, 1000u);
  EXPECT_EQ(config.success_rate->minimum_hosts, 3u);
  EXPECT_EQ(config.success_rate->request_volume, 100u);  // default
  ASSERT_TRUE(config.failure_percentage.has_value());
  EXPECT_EQ(config.failure_percentage->threshold, 40u);
  EXPECT_EQ(config.failure_percentage->request_volume, 7u);
  EXPECT_EQ(config.failure_percentage->enforcement_percentage, 100u);
  EXPECT_EQ(config.child_policy, "pick_first");
}

TEST(OutlierDetectionConfigTest, BadConfigsSayWhat) {
  const struct {
    const char* json;
    const char* message;
  } cases[] = {
      {"[]", "must be a JSON object"},
      {R"({})", "childPolicy: must be a list"},
      {R"({"childPolicy": [{"ring_hash": {}}]})",
       "childPolicy: names no policy"},
      {R"({"childPolicy": [{"pick_first": {"shuffleAddressList": 1}}]})",
       "childPolicy.pick_first: shuffleAddressList"},
      {R"({"interval": "0s", "childPolicy": [{"round_robin": {}}]})",
       "interval: must be more than 0s"},
      {R"({"interval": 10, "childPolicy": [{"round_robin": {}}]})",
       "interval: must be a duration"},
      {R"({"maxEjectionPercent": 101, "childPolicy": [{"round_robin": {}}]})",
       "maxEjectionPercent: must be an integer from 0 to 100, got 101"},
      {R"({"failurePercentageEjection": {"threshold": -1},
           "childPolicy": [{"round_robin": {}}]})",
       "failurePercentageEjection.threshold: must be an integer"},
      {R"({"successRateEjection": 3, "childPolicy": [{"round_robin": {}}]})",
       "successRateEjection: must be an object"},
  };
  for (const auto& c : cases) {
    OutlierDetectionConfig config;
    const Status status =
        ParseOutlierDetectionConfig(c.json, BuiltinLbPolicyFactory, &config);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.json;
  }
}

class OutlierDetectionTest : public ::testing::Test {
 protected:
  // Five READY addresses, ports 1 to 5, under round_robin.
  void Start(const std::string& json) {
    policy_ = std::make_unique<OutlierDetection>(
        &helper_, Parse(json), BuiltinLbPolicyFactory("round_robin"),
        [this] { return now_; });
    policy_->UpdateAddresses(LoopbackAddresses({1, 2, 3, 4, 5}));
    policy_->ExitIdle();
    for (int port = 1; port <= 5; ++port) {
      helper_.For(port)->Set(policy_.get(), S::kReady);
    }
  }

  // `n` calls on `port`'s subchannel, `failed` of them failing.
  void Calls(int port, int n, int failed) {
    for (int i = 0; i < n; ++i) {
      helper_.For(port)->EndCall(
          i < failed ? Status(StatusCode::kUnavailable, "down") : Status());
    }
  }

  // How many of 100 picks each port gets.
  std::map<int, int> Spread() {
    std::map<int, int> out;
    for (int i = 0; i < 100; ++i) ++out[PortOf(policy_->Pick())];
    return out;
  }

  // Runs the interval timer (the only timer).
  void Interval() {
    ASSERT_EQ(helper_.timers.size(), 1u);
    ASSERT_TRUE(helper_.FireTimer());
  }

  FakeLbHelper helper_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::unique_ptr<OutlierDetection> policy_;
};

TEST_F(OutlierDetectionTest, WithoutAnAlgorithmItOnlyPassesThrough) {
  Start(R"({"childPolicy": [{"round_robin": {}}]})");
  EXPECT_TRUE(helper_.timers.empty());
  EXPECT_EQ(helper_.state, S::kReady);
  // Picks are the channel's subchannels, not the child's wrappers.
  EXPECT_EQ(Spread(),
            (std::map<int, int>{{1, 20}, {2, 20}, {3, 20}, {4, 20}, {5, 20}}));
  EXPECT_EQ(helper_.For(1)->call_observer(), nullptr);
}

// A child's out-of-band load report watch reaches the channel's
// subchannels, and their reports reach the child as its wrappers'.
TEST_F(OutlierDetectionTest, LoadReportsPassThroughToTheChild) {
  policy_ = std::make_unique<OutlierDetection>(
      &helper_, Parse(R"({"childPolicy": [{"weighted_round_robin": {
          "blackoutPeriod": "0s", "enableOobLoadReport": true}}]})"),
      BuiltinLbPolicyFactory("weighted_round_robin"), [this] { return now_; });
  policy_->UpdateAddresses(LoopbackAddresses({1, 2}));
  policy_->ExitIdle();
  for (int port = 1; port <= 2; ++port) {
    helper_.For(port)->Set(policy_.get(), S::kReady);
  }
  ASSERT_NE(helper_.For(1)->load_report_watcher, nullptr);
  EXPECT_EQ(helper_.For(1)->load_report_interval, absl::Seconds(10));
  xds::data::orca::v3::OrcaLoadReport report;
  report.set_rps_fractional(100);
  report.set_cpu_utilization(0.25);  // weight 400
  helper_.For(1)->SendLoadReport(report.SerializeAsString());
  report.set_cpu_utilization(1);  // weight 100
  helper_.For(2)->SendLoadReport(report.SerializeAsString());
  // The weight update timer of the child (no ejection algorithm: no
  // interval timer).
  ASSERT_EQ(helper_.timers.size(), 1u);
  ASSERT_TRUE(helper_.FireTimer());
  std::map<int, int> spread = Spread();
  EXPECT_NEAR(spread[1], 80, 1);
  EXPECT_NEAR(spread[2], 20, 1);
}

TEST_F(OutlierDetectionTest, FailurePercentageEjectsAndTimeBringsBack) {
  Start(R"({"interval": "10s", "baseEjectionTime": "30s",
      "maxEjectionPercent": 50,
      "failurePercentageEjection": {"threshold": 50, "requestVolume": 10},
      "childPolicy": [{"round_robin": {}}]})");
  for (int port = 1; port <= 5; ++port) Calls(port, 10, port == 3 ? 6 : 0);
  Interval();
  EXPECT_TRUE(policy_->ejected("127.0.0.1:3"));
  EXPECT_EQ(Spread().count(3), 0u) << "an ejected address was picked";
  EXPECT_EQ(Spread().size(), 4u);

  // Not yet: 30 s after the ejection.
  now_ += absl::Seconds(20);
  Interval();
  EXPECT_TRUE(policy_->ejected("127.0.0.1:3"));
  now_ += absl::Seconds(10);
  Interval();
  EXPECT_FALSE(policy_->ejected("127.0.0.1:3"));
  EXPECT_EQ(Spread()[3], 20);

  // Ejected again at once: twice as long this time.
  for (int port = 1; port <= 5; ++port) Calls(port, 10, port == 3 ? 10 : 0);
  Interval();
  ASSERT_TRUE(policy_->ejected("127.0.0.1:3"));
  now_ += absl::Seconds(30);
  Interval();
  EXPECT_TRUE(policy_->ejected("127.0.0.1:3"));
  now_ += absl::Seconds(30);
  Interval();
  EXPECT_FALSE(policy_->ejected("127.0.0.1:3"));
}

TEST_F(OutlierDetectionTest, SuccessRateEjectsWhatFallsBelowTheOthers) {
  Start(R"({"maxEjectionPercent": 100,
      "successRateEjection": {"requestVolume": 10},
      "childPolicy": [{"round_robin": {}}]})");
  // Success rates 1, 1, 1, 1 and 0.5: mean 0.9, stdev 0.2, threshold
  // 0.9 - 0.2 * 1.9 = 0.52.
  for (int port = 1; port <= 5; ++port) Calls(port, 10, port == 5 ? 5 : 0);
  Interval();
  EXPECT_TRUE(policy_->ejected("127.0.0.1:5"));
  for (int port = 1; port <= 4; ++port) {
    EXPECT_FALSE(policy_->ejected(absl::StrCat("127.0.0.1:", port)));
  }
}

TEST_F(OutlierDetectionTest, TooFewHostsOrCallsEjectNothing) {
  Start(R"({"maxEjectionPercent": 100,
      "failurePercentageEjection": {"requestVolume": 10, "minimumHosts": 5},
      "childPolicy": [{"round_robin": {}}]})");
  // Four addresses with enough calls: fewer than minimumHosts.
  for (int port = 1; port <= 4; ++port) Calls(port, 10, port == 1 ? 10 : 0);
  Calls(5, 9, 0);
  Interval();
  EXPECT_FALSE(policy_->ejected("127.0.0.1:1"));
}

TEST_F(OutlierDetectionTest, MaxEjectionPercentCapsTheEjections) {
  Start(R"({"maxEjectionPercent": 20,
      "failurePercentageEjection": {"requestVolume": 10},
      "childPolicy": [{"round_robin": {}}]})");
  for (int port = 1; port <= 5; ++port) Calls(port, 10, port <= 4 ? 10 : 0);
  Interval();
  int ejected = 0;
  for (int port = 1; port <= 5; ++port) {
    ejected += policy_->ejected(absl::StrCat("127.0.0.1:", port));
  }
  EXPECT_EQ(ejected, 1);
}

TEST_F(OutlierDetectionTest, AnEjectedAddressStaysOutWhateverItsConnection) {
  Start(R"({"maxEjectionPercent": 100,
      "failurePercentageEjection": {"requestVolume": 10},
      "childPolicy": [{"round_robin": {}}]})");
  for (int port = 1; port <= 5; ++port) Calls(port, 10, port == 2 ? 10 : 0);
  Interval();
  ASSERT_TRUE(policy_->ejected("127.0.0.1:2"));
  // It reconnects meanwhile: still out.
  helper_.For(2)->Set(policy_.get(), S::kIdle);
  helper_.For(2)->Set(policy_.get(), S::kReady);
  EXPECT_EQ(Spread().count(2), 0u);
  // Every address gone but the ejected one: the child sees it failing.
  policy_->UpdateAddresses(LoopbackAddresses({2}));
  EXPECT_EQ(helper_.state, S::kTransientFailure);
  EXPECT_EQ(helper_.error.message(), "ejected by outlier detection");
  EXPECT_EQ(policy_->Pick(), nullptr);
}

}  // namespace
}  // namespace h2rpc::internal
