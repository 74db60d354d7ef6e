// weighted_round_robin (gRPC's A58) over real servers that send ORCA load
// reports (rpc/orca.h) in their calls' trailers or out of band
// (rpc/orca_service.h): the calls follow the weights qps / utilization,
// and follow them again when a server's load changes; round_robin on the
// same servers spreads evenly.
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "proto/xds/data/orca/v3/orca_load_report.pb.h"
#include "rpc/channel.h"
#include "rpc/orca.h"
#include "rpc/orca_service.h"
#include "rpc/server.h"
#include "test/util/stub_server.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::StubServer;
using ::h2rpc::testing::WaitFor;

constexpr char kWho[] = "/wrr.Test/Who";
// How far a server's share of the calls may be from its expected one.
constexpr double kShareTolerance = 0.05;

// How a ReportingServer sends its load.
enum class Reports { kPerCall, kOutOfBand };

// Answers kWho with its name, and sends its load report in each call's
// trailers or out of band (a report every 20 ms at most).
class ReportingServer {
 public:
  ReportingServer(std::string name, double utilization,
                  Reports reports = Reports::kPerCall)
      : name_(std::move(name)) {
    metrics_.SetQps(100);
    metrics_.SetCpuUtilization(utilization);
    if (reports == Reports::kOutOfBand) {
      OrcaServiceOptions options;
      options.min_report_interval = absl::Milliseconds(20);
      orca_ = std::make_unique<OrcaService>(&metrics_, options);
      orca_->AddTo(server_.builder());
    }
    server_.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
        kWho, [this, reports](ServerContext* context, const SimpleRequest&,
                              SimpleResponse* out) {
          out->mutable_payload()->set_body(name_);
          if (reports == Reports::kPerCall) metrics_.AttachTo(context);
          return Status();
        });
    const Status status = server_.Start();
    EXPECT_TRUE(status.ok()) << status.ToString();
  }

  std::string address() const { return server_.target(); }
  OrcaServerMetrics& metrics() { return metrics_; }

 private:
  const std::string name_;
  // Declared before the server, which they outlive.
  OrcaServerMetrics metrics_;
  std::unique_ptr<OrcaService> orca_;
  StubServer server_;
};

// The share of `calls` blocking calls each server answers.
std::map<std::string, double> Shares(Channel& channel, int calls) {
  std::map<std::string, int> counts;
  for (int i = 0; i < calls; ++i) {
    ClientContext context;
    context.set_timeout(kHangTimeout);
    context.set_wait_for_ready(true);
    SimpleRequest request;
    SimpleResponse response;
    if (channel.UnaryCall(&context, kWho, request, &response).ok()) {
      ++counts[response.payload().body()];
    }
  }
  std::map<std::string, double> shares;
  for (const auto& [name, count] : counts) {
    shares[name] = static_cast<double>(count) / calls;
  }
  return shares;
}

std::string Describe(const std::map<std::string, double>& shares) {
  return absl::StrJoin(shares, ", ", absl::PairFormatter("="));
}

bool Near(const std::map<std::string, double>& shares,
          const std::map<std::string, double>& expected) {
  if (shares.size() != expected.size()) return false;
  for (const auto& [name, share] : expected) {
    auto it = shares.find(name);
    if (it == shares.end() || std::abs(it->second - share) > kShareTolerance) {
      return false;
    }
  }
  return true;
}

// Waits until `calls` calls spread as `expected` (the last spread in
// `*shares`); false after WaitFor's deadline.
bool SpreadsAs(Channel& channel, const std::map<std::string, double>& expected,
               int calls, std::map<std::string, double>* shares) {
  return WaitFor([&] {
    *shares = Shares(channel, calls);
    return Near(*shares, expected);
  });
}

class WeightedRoundRobinTest : public ::testing::Test {
 protected:
  std::string Target() const {
    return absl::StrCat("ipv4:", light_.address(), ",", medium_.address(), ",",
                        heavy_.address());
  }

  // Utilizations 0.2, 0.4 and 0.8 at 100 qps: weights 500, 250 and 125.
  ReportingServer light_{"light", 0.2};
  ReportingServer medium_{"medium", 0.4};
  ReportingServer heavy_{"heavy", 0.8};
};

TEST_F(WeightedRoundRobinTest, CallsFollowTheReportedLoad) {
  ChannelOptions options;
  options.service_config = R"({"loadBalancingConfig": [{"weighted_round_robin":
      {"blackoutPeriod": "0s", "weightUpdatePeriod": "0.1s"}}]})";
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(), InsecureChannelCredentials(), options);
  const std::map<std::string, double> expected = {
      {"light", 4.0 / 7}, {"medium", 2.0 / 7}, {"heavy", 1.0 / 7}};
  std::map<std::string, double> shares;
  // The weights take effect at the first update after the first reports.
  EXPECT_TRUE(SpreadsAs(*channel, expected, 700, &shares)) << Describe(shares);
  shares = Shares(*channel, 7000);
  EXPECT_TRUE(Near(shares, expected)) << Describe(shares);

  // The heavy server becomes the lightest: the calls follow.
  heavy_.metrics().SetCpuUtilization(0.1);  // weight 1000
  const std::map<std::string, double> after = {
      {"light", 4.0 / 14}, {"medium", 2.0 / 14}, {"heavy", 8.0 / 14}};
  EXPECT_TRUE(SpreadsAs(*channel, after, 700, &shares)) << Describe(shares);
}

constexpr char kOutOfBandConfig[] =
    R"({"loadBalancingConfig": [{"weighted_round_robin": {
        "blackoutPeriod": "0s", "weightUpdatePeriod": "0.1s",
        "enableOobLoadReport": true, "oobReportingPeriod": "0.02s"}}]})";

// The same weights from the servers' out-of-band reports alone (their
// calls carry none).
TEST(WeightedRoundRobinOutOfBandTest, CallsFollowTheStreamedLoad) {
  ReportingServer light("light", 0.2, Reports::kOutOfBand);
  ReportingServer medium("medium", 0.4, Reports::kOutOfBand);
  ReportingServer heavy("heavy", 0.8, Reports::kOutOfBand);
  ChannelOptions options;
  options.service_config = kOutOfBandConfig;
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("ipv4:", light.address(), ",",
                                 medium.address(), ",", heavy.address()),
                    InsecureChannelCredentials(), options);
  const std::map<std::string, double> expected = {
      {"light", 4.0 / 7}, {"medium", 2.0 / 7}, {"heavy", 1.0 / 7}};
  std::map<std::string, double> shares;
  EXPECT_TRUE(SpreadsAs(*channel, expected, 700, &shares)) << Describe(shares);

  heavy.metrics().SetCpuUtilization(0.1);  // weight 1000
  const std::map<std::string, double> after = {
      {"light", 4.0 / 14}, {"medium", 2.0 / 14}, {"heavy", 8.0 / 14}};
  EXPECT_TRUE(SpreadsAs(*channel, after, 700, &shares)) << Describe(shares);
}

// With enableOobLoadReport the calls' own reports count for nothing: the
// servers' per-call reports leave the spread even.
TEST_F(WeightedRoundRobinTest, OutOfBandModeIgnoresPerCallReports) {
  ChannelOptions options;
  options.service_config = kOutOfBandConfig;
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(), InsecureChannelCredentials(), options);
  const std::map<std::string, double> even = {
      {"light", 1.0 / 3}, {"medium", 1.0 / 3}, {"heavy", 1.0 / 3}};
  std::map<std::string, double> shares;
  EXPECT_TRUE(SpreadsAs(*channel, even, 300, &shares)) << Describe(shares);
  shares = Shares(*channel, 3000);
  EXPECT_TRUE(Near(shares, even)) << Describe(shares);
}

TEST_F(WeightedRoundRobinTest, RoundRobinIgnoresTheReports) {
  ChannelOptions options;
  options.lb_policy = "round_robin";
  std::shared_ptr<Channel> channel =
      CreateChannel(Target(), InsecureChannelCredentials(), options);
  const std::map<std::string, double> even = {
      {"light", 1.0 / 3}, {"medium", 1.0 / 3}, {"heavy", 1.0 / 3}};
  std::map<std::string, double> shares;
  // Every server READY first: then the calls alternate.
  EXPECT_TRUE(SpreadsAs(*channel, even, 300, &shares)) << Describe(shares);
}

// A per-call report arrives in the call's trailers as OrcaLoadReport.
TEST(OrcaServerMetricsTest, SetCallLoadReportSendsEveryField) {
  StubServer server;
  server.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
      kWho, [](ServerContext* context, const SimpleRequest&, SimpleResponse*) {
        LoadReport report;
        report.cpu_utilization = 0.25;
        report.mem_utilization = 0.5;
        report.application_utilization = 0.6;
        report.qps = 100;
        report.eps = 2;
        report.utilization["queue"] = 0.75;
        report.request_cost["db"] = 3;
        report.named_metrics["shards"] = 7;
        SetCallLoadReport(context, report);
        return Status();
      });
  ASSERT_TRUE(server.Start().ok());
  std::shared_ptr<Channel> channel = server.NewChannel();
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  SimpleResponse response;
  ASSERT_TRUE(channel->UnaryCall(&context, kWho, request, &response).ok());
  absl::optional<absl::string_view> bytes =
      context.GetServerTrailingMetadata().Get(kOrcaLoadReportTrailer);
  ASSERT_TRUE(bytes.has_value());
  xds::data::orca::v3::OrcaLoadReport report;
  ASSERT_TRUE(
      report.ParseFromArray(bytes->data(), static_cast<int>(bytes->size())));
  EXPECT_EQ(report.cpu_utilization(), 0.25);
  EXPECT_EQ(report.mem_utilization(), 0.5);
  EXPECT_EQ(report.application_utilization(), 0.6);
  EXPECT_EQ(report.rps_fractional(), 100);
  EXPECT_EQ(report.eps(), 2);
  EXPECT_EQ(report.utilization().at("queue"), 0.75);
  EXPECT_EQ(report.request_cost().at("db"), 3);
  EXPECT_EQ(report.named_metrics().at("shards"), 7);
}

TEST(OrcaServerMetricsTest, ReportsWhatWasSet) {
  OrcaServerMetrics metrics;
  metrics.SetCpuUtilization(0.5);
  metrics.SetMemoryUtilization(-1);  // taken as 0
  metrics.SetApplicationUtilization(0.7);
  metrics.SetQps(12.5);
  metrics.SetEps(1);
  metrics.SetNamedMetric("queue", 3);
  const LoadReport report = metrics.Report();
  EXPECT_EQ(report.cpu_utilization, 0.5);
  EXPECT_EQ(report.mem_utilization, 0);
  EXPECT_EQ(report.application_utilization, 0.7);
  EXPECT_EQ(report.qps, 12.5);
  EXPECT_EQ(report.eps, 1);
  EXPECT_EQ(report.named_metrics.at("queue"), 3);
}

}  // namespace
}  // namespace h2rpc
