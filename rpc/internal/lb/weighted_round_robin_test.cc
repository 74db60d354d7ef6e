#include "rpc/internal/lb/weighted_round_robin.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/xds/data/orca/v3/orca_load_report.pb.h"
#include "rpc/internal/lb/fake_lb_helper.h"
#include "test/util/allocation_counter.h"

namespace h2rpc::internal {
namespace {

using S = ConnectivityState;
using ::testing::HasSubstr;

WeightedRoundRobinConfig Parse(const std::string& json) {
  WeightedRoundRobinConfig config;
  const Status status = ParseWeightedRoundRobinConfig(json, &config);
  EXPECT_TRUE(status.ok()) << json << ": " << status.ToString();
  return config;
}

TEST(WeightedRoundRobinConfigTest, DefaultsFieldsAndErrors) {
  WeightedRoundRobinConfig config = Parse("{}");
  EXPECT_FALSE(config.enable_oob_load_report);
  EXPECT_EQ(config.blackout_period, absl::Seconds(10));
  EXPECT_EQ(config.weight_expiration_period, absl::Minutes(3));
  EXPECT_EQ(config.weight_update_period, absl::Seconds(1));
  EXPECT_EQ(config.error_utilization_penalty, 1.0);

  config = Parse(R"({"blackoutPeriod": "0s", "weightUpdatePeriod": "0.01s",
      "weightExpirationPeriod": "60s", "errorUtilizationPenalty": 2.5,
      "enableOobLoadReport": false, "oobReportingPeriod": "5s"})");
  EXPECT_EQ(config.blackout_period, absl::ZeroDuration());
  EXPECT_EQ(config.weight_update_period, absl::Milliseconds(100));  // raised
  EXPECT_EQ(config.weight_expiration_period, absl::Seconds(60));
  EXPECT_EQ(config.error_utilization_penalty, 2.5);
  EXPECT_EQ(config.oob_reporting_period, absl::Seconds(5));

  const struct {
    const char* json;
    const char* message;
  } bad[] = {
      {"[]", "must be a JSON object"},
      {R"({"enableOobLoadReport": 1})", "must be true or false"},
      {R"({"blackoutPeriod": "-1s"})", "blackoutPeriod: must not be negative"},
      {R"({"errorUtilizationPenalty": -1})", "at least 0, got -1"},
  };
  for (const auto& c : bad) {
    WeightedRoundRobinConfig unused;
    const Status status = ParseWeightedRoundRobinConfig(c.json, &unused);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.json;
  }
}

class WeightedRoundRobinTest : public ::testing::Test {
 protected:
  // Three READY addresses, ports 1 to 3.
  void Start(const std::string& json) {
    policy_ = std::make_unique<WeightedRoundRobin>(&helper_, Parse(json),
                                                   [this] { return now_; });
    policy_->UpdateAddresses(LoopbackAddresses({1, 2, 3}));
    policy_->ExitIdle();
    for (int port = 1; port <= 3; ++port) {
      helper_.For(port)->Set(policy_.get(), S::kReady);
    }
  }

  // A call on `port` ends with a load report.
  void Report(int port, double qps, double utilization, double eps = 0,
              bool application = false) {
    Metadata trailers;
    trailers.Add("endpoint-load-metrics-bin",
                 Serialized(qps, utilization, eps, application));
    helper_.For(port)->EndCall(Status(), trailers);
  }

  static std::string Serialized(double qps, double utilization, double eps,
                                bool application) {
    xds::data::orca::v3::OrcaLoadReport report;
    report.set_rps_fractional(qps);
    if (application) {
      report.set_application_utilization(utilization);
      report.set_cpu_utilization(0.99);  // ignored
    } else {
      report.set_cpu_utilization(utilization);
    }
    report.set_eps(eps);
    return report.SerializeAsString();
  }

  // Runs the weight update timer (the only timer).
  void Update() {
    ASSERT_EQ(helper_.timers.size(), 1u);
    ASSERT_TRUE(helper_.FireTimer());
  }

  // How many of `n` picks each port gets.
  std::map<int, int> Spread(int n) {
    std::map<int, int> out;
    for (int i = 0; i < n; ++i) ++out[PortOf(policy_->Pick())];
    return out;
  }

  FakeLbHelper helper_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::unique_ptr<WeightedRoundRobin> policy_;
};

TEST_F(WeightedRoundRobinTest, WithoutReportsItIsRoundRobin) {
  Start("{}");
  EXPECT_EQ(helper_.state, S::kReady);
  EXPECT_EQ(Spread(300), (std::map<int, int>{{1, 100}, {2, 100}, {3, 100}}));
}

// Expects `spread` to hold each of `counts` within one.
void ExpectSpread(const std::map<int, int>& spread,
                  const std::map<int, int>& counts) {
  EXPECT_EQ(spread.size(), counts.size());
  for (const auto& [port, count] : counts) {
    auto it = spread.find(port);
    const int got = it == spread.end() ? 0 : it->second;
    EXPECT_NEAR(got, count, 1) << "port " << port;
  }
}

TEST_F(WeightedRoundRobinTest, PicksFollowQpsOverUtilization) {
  Start(R"({"blackoutPeriod": "10s"})");
  Report(1, 100, 0.5);   // weight 200
  Report(2, 100, 1.0);   // 100: twice as loaded
  Report(3, 100, 0.25);  // 400
  // In their blackout period: still round robin.
  EXPECT_EQ(policy_->weight("127.0.0.1:1"), 0);
  Update();
  ExpectSpread(Spread(699), {{1, 233}, {2, 233}, {3, 233}});

  now_ += absl::Seconds(10);
  EXPECT_EQ(policy_->weight("127.0.0.1:1"), 200);
  EXPECT_EQ(policy_->weight("127.0.0.1:2"), 100);
  EXPECT_EQ(policy_->weight("127.0.0.1:3"), 400);
  Update();
  ExpectSpread(Spread(700), {{1, 200}, {2, 100}, {3, 400}});
}

TEST_F(WeightedRoundRobinTest, ApplicationUtilizationAndErrorsCount) {
  Start(R"({"blackoutPeriod": "0s", "errorUtilizationPenalty": 2})");
  // 100 / (0.5 + 50 / 100 * 2) = 66.7 against 100 / 0.5 = 200.
  Report(1, 100, 0.5, /*eps=*/50);
  Report(2, 100, 0.5, /*eps=*/0, /*application=*/true);
  Report(3, 100, 0.5);
  EXPECT_NEAR(policy_->weight("127.0.0.1:1"), 66.67, 0.01);
  EXPECT_EQ(policy_->weight("127.0.0.1:2"), 200);
  Update();
  ExpectSpread(Spread(933), {{1, 133}, {2, 400}, {3, 400}});
}

TEST_F(WeightedRoundRobinTest, MissingWeightsTakeTheMeanAndExpire) {
  Start(R"({"blackoutPeriod": "0s", "weightExpirationPeriod": "60s"})");
  Report(1, 100, 1.0);  // 100
  Report(2, 300, 1.0);  // 300; port 3 reports nothing: the mean, 200
  Update();
  ExpectSpread(Spread(600), {{1, 100}, {2, 300}, {3, 200}});
  // A report without qps or utilization changes nothing.
  Report(1, 0, 1.0);
  Report(1, 100, 0);
  EXPECT_EQ(policy_->weight("127.0.0.1:1"), 100);

  now_ += absl::Seconds(60);  // no report since: every weight expired
  EXPECT_EQ(policy_->weight("127.0.0.1:2"), 0);
  Update();
  ExpectSpread(Spread(300), {{1, 100}, {2, 100}, {3, 100}});
}

TEST_F(WeightedRoundRobinTest, OneWeightAloneIsRoundRobin) {
  Start(R"({"blackoutPeriod": "0s"})");
  Report(1, 1000, 0.1);
  Update();
  ExpectSpread(Spread(300), {{1, 100}, {2, 100}, {3, 100}});
}

TEST_F(WeightedRoundRobinTest, OnlyReadySubchannelsArePicked) {
  Start(R"({"blackoutPeriod": "0s"})");
  helper_.For(2)->Set(policy_.get(), S::kTransientFailure, "refused");
  ExpectSpread(Spread(200), {{1, 100}, {3, 100}});
  helper_.For(1)->Set(policy_.get(), S::kTransientFailure, "refused");
  helper_.For(3)->Set(policy_.get(), S::kTransientFailure, "refused");
  EXPECT_EQ(policy_->Pick(), nullptr);
  EXPECT_EQ(helper_.state, S::kTransientFailure);
  EXPECT_EQ(helper_.error.message(), "refused");
}

TEST_F(WeightedRoundRobinTest, OutOfBandReportsReplaceTheCallsOnes) {
  Start(R"({"blackoutPeriod": "0s", "enableOobLoadReport": true,
      "oobReportingPeriod": "2s"})");
  for (int port = 1; port <= 3; ++port) {
    EXPECT_EQ(helper_.For(port)->call_observer(), nullptr) << port;
    EXPECT_NE(helper_.For(port)->load_report_watcher, nullptr) << port;
    EXPECT_EQ(helper_.For(port)->load_report_interval, absl::Seconds(2));
  }
  helper_.For(1)->SendLoadReport(Serialized(100, 0.5, 0, false));
  helper_.For(2)->SendLoadReport(Serialized(100, 1.0, 0, false));
  helper_.For(3)->SendLoadReport("not an OrcaLoadReport \xff\xff");
  EXPECT_EQ(policy_->weight("127.0.0.1:1"), 200);
  EXPECT_EQ(policy_->weight("127.0.0.1:2"), 100);
  EXPECT_EQ(policy_->weight("127.0.0.1:3"), 0);
  Update();
  // Port 3 without a weight gets the mean, 150.
  ExpectSpread(Spread(900), {{1, 400}, {2, 200}, {3, 300}});

  // A new address list keeps the watch and adds it to a new subchannel.
  LbLoadReportWatcher* const watcher = helper_.For(1)->load_report_watcher;
  policy_->UpdateAddresses(LoopbackAddresses({1, 2, 3, 4}));
  EXPECT_EQ(helper_.For(1)->load_report_watcher, watcher);
  EXPECT_EQ(helper_.For(4)->load_report_watcher, watcher);
}

TEST_F(WeightedRoundRobinTest, APickAllocatesNothing) {
  Start(R"({"blackoutPeriod": "0s"})");
  Report(1, 100, 0.5);
  Report(2, 100, 1.0);
  Update();
  Spread(10);
  testing::AllocationCounter counter;
  for (int i = 0; i < 1000; ++i) policy_->Pick();
  EXPECT_EQ(counter.allocations(), 0);
}

}  // namespace
}  // namespace h2rpc::internal
