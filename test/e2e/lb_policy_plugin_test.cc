// Load-balancing policy plugins (rpc/load_balancing.h) in real channels to
// real servers: chosen by the service config or ChannelOptions::lb_policy,
// configs checked, the resolver's attributes seen, call outcomes and
// trailers observed, out-of-band load reports, timers, a resolver's config
// switching policies, and plugins that fail, throw or pick what they may
// not.
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/messages.pb.h"
#include "rpc/channel.h"
#include "rpc/load_balancing.h"
#include "rpc/orca.h"
#include "rpc/orca_service.h"
#include "rpc/resolver.h"
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
using ::testing::HasSubstr;

constexpr char kWho[] = "/lb.Test/Who";
constexpr char kFail[] = "/lb.Test/Fail";

// Answers kWho with its name and a trailer; kFail with UNAVAILABLE. With
// `orca` options, serves ORCA's out-of-band reports of metrics() too.
class NamedServer {
 public:
  explicit NamedServer(std::string name,
                       const OrcaServiceOptions* orca = nullptr)
      : name_(std::move(name)) {
    if (orca != nullptr) {
      orca_ = std::make_unique<OrcaService>(&metrics_, *orca);
      orca_->AddTo(server_.builder());
    }
    server_.builder()
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kWho,
            [this](ServerContext* context, const SimpleRequest&,
                   SimpleResponse* out) {
              out->mutable_payload()->set_body(name_);
              context->AddTrailingMetadata("served-by", name_);
              return Status();
            })
        .RegisterUnary<SimpleRequest, SimpleResponse>(
            kFail, [](ServerContext*, const SimpleRequest&, SimpleResponse*) {
              return Status(StatusCode::kUnavailable, "failing on purpose");
            });
    const Status status = server_.Start();
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  std::string address() const { return server_.target(); }
  OrcaServerMetrics& metrics() { return metrics_; }
  OrcaService& orca() { return *orca_; }

 private:
  const std::string name_;
  // Declared before the server, which they outlive.
  OrcaServerMetrics metrics_;
  std::unique_ptr<OrcaService> orca_;
  StubServer server_;
};

// What the test policy saw, shared with the test.
struct PolicyLog {
  Mutex mu;
  std::vector<std::string> configs ABSL_GUARDED_BY(mu);  // one per policy
  std::vector<ResolvedAddress> addresses ABSL_GUARDED_BY(mu);
  int ok_calls ABSL_GUARDED_BY(mu) = 0;
  int failed_calls ABSL_GUARDED_BY(mu) = 0;
  std::set<std::string> served_by ABSL_GUARDED_BY(mu);  // from trailers
  int timers_fired ABSL_GUARDED_BY(mu) = 0;
  // Out-of-band reports ("oob" mode), as ParseLoadReport read them.
  std::vector<LoadReport> load_reports ABSL_GUARDED_BY(mu);
  int destroyed ABSL_GUARDED_BY(mu) = 0;

  int Configs() {
    MutexLock lock(&mu);
    return static_cast<int>(configs.size());
  }
};

// A foreign LbSubchannel, not made by the channel.
class ForeignSubchannel final : public LbSubchannel {
 public:
  ForeignSubchannel() : LbSubchannel(ResolvedAddress{"127.0.0.1:1", {}}) {}
  ConnectivityState state() const override { return ConnectivityState::kReady; }
  const Status& last_error() const override { return error_; }
  void RequestConnection() override {}

 private:
  void Orphan() override {}
  Status error_;
};

// Connects to every address and picks the first READY one. Its config's
// "mode" makes it misbehave: "not_ready" picks a subchannel it never
// connected, "foreign" one it made itself, "timer" reports READY only
// after a timer (a cancelled one before it never fires); "oob" watches
// its subchannels' out-of-band load reports.
class TestPolicy final : public LbPolicy,
                         private LbCallObserver,
                         private LbLoadReportWatcher {
 public:
  TestPolicy(Helper* helper, std::string mode, std::shared_ptr<PolicyLog> log)
      : helper_(helper), mode_(std::move(mode)), log_(std::move(log)) {}
  ~TestPolicy() override {
    MutexLock lock(&log_->mu);
    ++log_->destroyed;
  }

  void UpdateAddresses(const std::vector<ResolvedAddress>& addresses) override {
    {
      MutexLock lock(&log_->mu);
      log_->addresses = addresses;
    }
    subchannels_.clear();
    for (const ResolvedAddress& address : addresses) {
      subchannels_.push_back(helper_->CreateSubchannel(address));
      subchannels_.back()->set_call_observer(this);
      if (mode_ == "oob") {
        subchannels_.back()->WatchLoadReports(this, absl::Milliseconds(10));
      }
    }
    if (mode_ == "not_ready") {
      // One more, never asked to connect.
      spare_ = helper_->CreateSubchannel(addresses.front());
    }
    if (!idle_) ExitIdle();
  }
  void ExitIdle() override {
    idle_ = false;
    for (auto& subchannel : subchannels_) subchannel->RequestConnection();
    if (mode_ == "timer" && timer_ == 0) {
      helper_->CancelTimer(helper_->StartTimer(absl::Milliseconds(5), [this] {
        ADD_FAILURE() << "a cancelled timer fired";
      }));
      timer_ = helper_->StartTimer(absl::Milliseconds(20), [this] {
        timer_done_ = true;
        {
          MutexLock lock(&log_->mu);
          ++log_->timers_fired;
        }
        Report();
      });
    }
    Report();
  }
  LbSubchannel* Pick() override {
    if (mode_ == "timer" && !timer_done_) return nullptr;
    for (auto& subchannel : subchannels_) {
      if (subchannel->state() != ConnectivityState::kReady) continue;
      if (mode_ == "not_ready") return spare_.get();
      if (mode_ == "foreign") return &foreign_;
      return subchannel.get();
    }
    return nullptr;
  }
  void OnSubchannelStateChange(LbSubchannel* subchannel) override {
    if (subchannel->state() == ConnectivityState::kIdle) {
      subchannel->RequestConnection();
    }
    Report();
  }

 private:
  void OnCallEnded(LbSubchannel*, const Status& status,
                   const Metadata& trailers) override {
    MutexLock lock(&log_->mu);
    ++(status.ok() ? log_->ok_calls : log_->failed_calls);
    if (absl::optional<absl::string_view> by = trailers.Get("served-by")) {
      log_->served_by.insert(std::string(*by));
    }
  }

  void OnLoadReport(LbSubchannel* subchannel,
                    absl::string_view report) override {
    LoadReport parsed;
    ASSERT_TRUE(ParseLoadReport(report, &parsed));
    bool first = false;
    {
      MutexLock lock(&log_->mu);
      log_->load_reports.push_back(parsed);
      first = log_->load_reports.size() == 1;
    }
    // From inside the report: another interval restarts the stream.
    if (first) subchannel->WatchLoadReports(this, absl::Milliseconds(20));
  }

  void Report() {
    bool ready = false;
    for (auto& subchannel : subchannels_) {
      ready = ready || subchannel->state() == ConnectivityState::kReady;
    }
    if (mode_ == "timer" && !timer_done_) ready = false;
    helper_->UpdateState(
        ready ? ConnectivityState::kReady : ConnectivityState::kConnecting,
        Status());
  }

  Helper* const helper_;
  const std::string mode_;
  const std::shared_ptr<PolicyLog> log_;
  std::vector<SubchannelPtr> subchannels_;
  SubchannelPtr spare_;
  ForeignSubchannel foreign_;
  bool idle_ = true;
  uint64_t timer_ = 0;
  bool timer_done_ = false;
};

// How TestFactory misbehaves, if it does.
enum class Fault { kNone, kNullPolicy, kThrow };

class TestFactory final : public LbPolicyFactory {
 public:
  explicit TestFactory(Fault fault = Fault::kNone) : fault_(fault) {}
  std::string name() const override { return "test_first"; }
  Status CheckConfig(absl::string_view config) const override {
    if (config.find("\"bad\"") != absl::string_view::npos) {
      return Status(StatusCode::kInvalidArgument, "mode: \"bad\" is not one");
    }
    return Status();
  }
  std::unique_ptr<LbPolicy> Create(LbPolicy::Helper* helper,
                                   absl::string_view config) override {
    {
      MutexLock lock(&log->mu);
      log->configs.emplace_back(config);
    }
    if (fault_ == Fault::kNullPolicy) return nullptr;
    if (fault_ == Fault::kThrow) throw std::runtime_error("policy boom");
    std::string mode;
    for (const char* candidate : {"not_ready", "foreign", "timer", "oob"}) {
      if (config.find(candidate) != absl::string_view::npos) mode = candidate;
    }
    return std::make_unique<TestPolicy>(helper, mode, log);
  }

  const std::shared_ptr<PolicyLog> log = std::make_shared<PolicyLog>();

 private:
  const Fault fault_;
};

// A resolver whose result the test sets and pushes.
struct ResolverState {
  Mutex mu;
  ResolverResult result ABSL_GUARDED_BY(mu);
  ResolverChannel* channel ABSL_GUARDED_BY(mu) = nullptr;

  void Push(ResolverResult next) {
    MutexLock lock(&mu);
    result = std::move(next);
    if (channel != nullptr) channel->Update(result);
  }
};

class PushedResolverFactory final : public ResolverFactory {
 public:
  class PushedResolver final : public Resolver {
   public:
    PushedResolver(std::shared_ptr<ResolverState> state,
                   ResolverChannel* channel)
        : state_(std::move(state)) {
      MutexLock lock(&state_->mu);
      state_->channel = channel;
    }
    ~PushedResolver() override {
      MutexLock lock(&state_->mu);
      state_->channel = nullptr;
    }
    void ResolveNow() override {
      MutexLock lock(&state_->mu);
      state_->channel->Update(state_->result);
    }

   private:
    const std::shared_ptr<ResolverState> state_;
  };

  std::string scheme() const override { return "pushed"; }
  std::unique_ptr<Resolver> Create(const ResolverTarget&,
                                   ResolverChannel* channel) override {
    return std::make_unique<PushedResolver>(state, channel);
  }

  const std::shared_ptr<ResolverState> state =
      std::make_shared<ResolverState>();
};

ResolverResult Result(std::vector<std::string> addresses, std::string config) {
  ResolverResult result;
  for (std::string& address : addresses) {
    result.addresses.push_back(
        ResolvedAddress{std::move(address), {{"weight", "7"}}});
  }
  result.service_config = std::move(config);
  return result;
}

// A call of `method`: the server's name, or "error: " and the status.
std::string Call(Channel& channel, const char* method = kWho,
                 bool wait_for_ready = true) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  context.set_wait_for_ready(wait_for_ready);
  SimpleRequest request;
  SimpleResponse response;
  const Status status = channel.UnaryCall(&context, method, request, &response);
  if (!status.ok()) return absl::StrCat("error: ", status.ToString());
  return response.payload().body();
}

ChannelOptions WithPolicy(std::shared_ptr<LbPolicyFactory> factory,
                          std::string service_config) {
  ChannelOptions options;
  options.lb_policy_factories.push_back(std::move(factory));
  options.service_config = std::move(service_config);
  return options;
}

TEST(LbPolicyPluginTest, ChosenByTheServiceConfigWithItsConfig) {
  NamedServer a("a");
  auto factory = std::make_shared<TestFactory>();
  std::shared_ptr<Channel> channel = CreateChannel(
      a.address(), InsecureChannelCredentials(),
      WithPolicy(factory, R"({"loadBalancingConfig": [{"unknown": {}},
          {"test_first": {"mode": "normal"}}, {"round_robin": {}}]})"));
  EXPECT_EQ(Call(*channel), "a");
  MutexLock lock(&factory->log->mu);
  EXPECT_EQ(factory->log->configs,
            std::vector<std::string>{R"({"mode":"normal"})"});
}

TEST(LbPolicyPluginTest, ChosenByChannelOptionsLbPolicy) {
  NamedServer a("a");
  auto factory = std::make_shared<TestFactory>();
  ChannelOptions options = WithPolicy(factory, "");
  options.lb_policy = "test_first";
  std::shared_ptr<Channel> channel =
      CreateChannel(a.address(), InsecureChannelCredentials(), options);
  EXPECT_EQ(Call(*channel), "a");
  MutexLock lock(&factory->log->mu);
  EXPECT_EQ(factory->log->configs, std::vector<std::string>{"{}"});
}

TEST(LbPolicyPluginTest, ARegisteredPolicyIsFoundByName) {
  NamedServer a("a");
  auto factory = std::make_shared<TestFactory>();
  ASSERT_TRUE(RegisterLbPolicyFactory(factory).ok());
  EXPECT_EQ(FindLbPolicyFactory("test_first"), factory);
  ChannelOptions options;
  options.service_config = R"({"loadBalancingConfig": [{"test_first": {}}]})";
  std::shared_ptr<Channel> channel =
      CreateChannel(a.address(), InsecureChannelCredentials(), options);
  EXPECT_EQ(Call(*channel), "a");
  EXPECT_EQ(factory->log->Configs(), 1);
}

TEST(LbPolicyPluginTest, BadConfigsAndNamesAreInvalidArguments) {
  auto factory = std::make_shared<TestFactory>();
  std::shared_ptr<Channel> bad_config = CreateChannel(
      "127.0.0.1:1", InsecureChannelCredentials(),
      WithPolicy(
          factory,
          R"({"loadBalancingConfig": [{"test_first": {"mode": "bad"}}]})"));
  EXPECT_THAT(Call(*bad_config),
              HasSubstr("INVALID_ARGUMENT: service config: "
                        "loadBalancingConfig[0].test_first: mode: \"bad\" is "
                        "not one"));
  ChannelOptions options;
  options.lb_policy = "nonesuch";
  std::shared_ptr<Channel> bad_name =
      CreateChannel("127.0.0.1:1", InsecureChannelCredentials(), options);
  EXPECT_THAT(Call(*bad_name),
              HasSubstr("ChannelOptions::lb_policy is \"nonesuch\"; it must "
                        "name a policy"));
  EXPECT_EQ(factory->log->Configs(), 0);
  EXPECT_EQ(RegisterLbPolicyFactory(nullptr).code(),
            StatusCode::kInvalidArgument);
}

TEST(LbPolicyPluginTest, FactoriesThatFailPutTheChannelInTransientFailure) {
  const struct {
    Fault fault;
    const char* message;
  } cases[] = {
      {Fault::kNullPolicy,
       "the 'test_first' load-balancing policy's factory made no policy"},
      {Fault::kThrow,
       "the 'test_first' load-balancing policy threw: policy boom"},
  };
  for (const auto& c : cases) {
    auto factory = std::make_shared<TestFactory>(c.fault);
    std::shared_ptr<Channel> channel = CreateChannel(
        "127.0.0.1:1", InsecureChannelCredentials(),
        WithPolicy(factory,
                   R"({"loadBalancingConfig": [{"test_first": {}}]})"));
    const std::string outcome = Call(*channel, kWho, /*wait_for_ready=*/false);
    EXPECT_THAT(outcome, HasSubstr("UNAVAILABLE"));
    EXPECT_THAT(outcome, HasSubstr(c.message));
    EXPECT_EQ(channel->GetState(false), ConnectivityState::kTransientFailure);
  }
}

TEST(LbPolicyPluginTest, PicksOfWhatAPolicyMayNotPickFailTheCall) {
  NamedServer a("a");
  for (const char* mode : {"not_ready", "foreign"}) {
    auto factory = std::make_shared<TestFactory>();
    std::shared_ptr<Channel> channel = CreateChannel(
        a.address(), InsecureChannelCredentials(),
        WithPolicy(factory,
                   absl::StrCat(R"({"loadBalancingConfig": [{"test_first":
                       {"mode": ")",
                                mode, R"("}}]})")));
    const std::string outcome = Call(*channel);
    EXPECT_THAT(outcome, HasSubstr("INTERNAL: the 'test_first' "
                                   "load-balancing policy picked a "
                                   "subchannel that is not one of its READY "
                                   "ones"))
        << mode;
  }
}

TEST(LbPolicyPluginTest, ObserversSeeOutcomesAndTrailersAndTimersRun) {
  NamedServer a("a");
  auto factory = std::make_shared<TestFactory>();
  std::shared_ptr<Channel> channel =
      CreateChannel(a.address(), InsecureChannelCredentials(),
                    WithPolicy(factory,
                               R"({"loadBalancingConfig": [{"test_first":
                     {"mode": "timer"}}]})"));
  EXPECT_EQ(Call(*channel), "a");
  EXPECT_EQ(Call(*channel), "a");
  EXPECT_THAT(Call(*channel, kFail), HasSubstr("failing on purpose"));
  MutexLock lock(&factory->log->mu);
  EXPECT_EQ(factory->log->timers_fired, 1);
  EXPECT_EQ(factory->log->ok_calls, 2);
  EXPECT_EQ(factory->log->failed_calls, 1);
  EXPECT_EQ(factory->log->served_by, std::set<std::string>{"a"});
}

// A policy's subchannel streams its backend's load reports, and again
// with another interval asked for from inside a report; a stream the
// backend refuses is made again after the backoff; a backend without the
// service still serves calls.
TEST(LbPolicyPluginTest, OutOfBandLoadReportsReachThePolicy) {
  OrcaServiceOptions orca;
  orca.min_report_interval = absl::Milliseconds(10);
  orca.max_streams = 1;
  NamedServer a("a", &orca);
  a.metrics().SetCpuUtilization(0.5);
  a.metrics().SetNamedMetric("queue", 3);
  const char* const config =
      R"({"loadBalancingConfig": [{"test_first": {"mode": "oob"}}]})";
  auto first_factory = std::make_shared<TestFactory>();
  std::shared_ptr<Channel> first =
      CreateChannel(a.address(), InsecureChannelCredentials(),
                    WithPolicy(first_factory, config));
  EXPECT_EQ(Call(*first), "a");
  ASSERT_TRUE(WaitFor([&] {
    MutexLock lock(&first_factory->log->mu);
    return first_factory->log->load_reports.size() >= 2;
  }));
  {
    MutexLock lock(&first_factory->log->mu);
    const LoadReport& report = first_factory->log->load_reports[0];
    EXPECT_EQ(report.cpu_utilization, 0.5);
    EXPECT_EQ(report.named_metrics.at("queue"), 3);
  }

  // The only stream the backend allows is the first channel's: the second
  // channel's is refused until the first channel goes.
  auto second_factory = std::make_shared<TestFactory>();
  std::shared_ptr<Channel> second =
      CreateChannel(a.address(), InsecureChannelCredentials(),
                    WithPolicy(second_factory, config));
  EXPECT_EQ(Call(*second), "a");
  first.reset();
  ASSERT_TRUE(WaitFor([&] {
    MutexLock lock(&second_factory->log->mu);
    return !second_factory->log->load_reports.empty();
  }));

  // A backend without the service: calls go on, no report comes.
  NamedServer plain("plain");
  auto plain_factory = std::make_shared<TestFactory>();
  std::shared_ptr<Channel> third =
      CreateChannel(plain.address(), InsecureChannelCredentials(),
                    WithPolicy(plain_factory, config));
  EXPECT_EQ(Call(*third), "plain");
  EXPECT_EQ(Call(*third), "plain");
  MutexLock lock(&plain_factory->log->mu);
  EXPECT_TRUE(plain_factory->log->load_reports.empty());
}

TEST(LbPolicyPluginTest, AResolversConfigSwitchesPolicyAndAttributesArrive) {
  NamedServer a("a"), b("b");
  auto policy = std::make_shared<TestFactory>();
  auto resolver = std::make_shared<PushedResolverFactory>();
  resolver->state->Push(Result({a.address()}, ""));
  ChannelOptions options = WithPolicy(policy, "");
  options.resolver_factories.push_back(resolver);
  std::shared_ptr<Channel> channel =
      CreateChannel("pushed:svc", InsecureChannelCredentials(), options);
  EXPECT_EQ(Call(*channel), "a");  // pick_first, the default
  EXPECT_EQ(policy->log->Configs(), 0);

  resolver->state->Push(Result(
      {b.address()}, R"({"loadBalancingConfig": [{"test_first": {}}]})"));
  EXPECT_TRUE(WaitFor([&] { return Call(*channel) == "b"; }));
  {
    MutexLock lock(&policy->log->mu);
    EXPECT_EQ(policy->log->configs, std::vector<std::string>{"{}"});
    ASSERT_EQ(policy->log->addresses.size(), 1u);
    EXPECT_EQ(policy->log->addresses[0].address, b.address());
    EXPECT_EQ(
        policy->log->addresses[0].attributes,
        (std::vector<std::pair<std::string, std::string>>{{"weight", "7"}}));
  }
  // Back to round_robin: the test policy goes.
  resolver->state->Push(Result(
      {a.address()}, R"({"loadBalancingConfig": [{"round_robin": {}}]})"));
  EXPECT_TRUE(WaitFor([&] { return Call(*channel) == "a"; }));
  MutexLock lock(&policy->log->mu);
  EXPECT_EQ(policy->log->destroyed, 1);
}

}  // namespace
}  // namespace h2rpc
