// Resolver plugins (rpc/resolver.h) driving real channels to real servers:
// addresses and service configs a resolver reports, new addresses moving
// the calls, errors and the channel's backoff, results the channel cannot
// use, plugins that fail or throw, the order in which factories are found,
// the default authority, timers, and a resolver's life across idleness.
#include <pthread.h>

#include <atomic>
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
#include "rpc/internal/client/channel_core.h"
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

constexpr char kWho[] = "/resolve.Test/Who";

// A server that answers kWho with its name and records the :authority.
class NamedServer {
 public:
  explicit NamedServer(std::string name) : name_(std::move(name)) {
    server_.builder().RegisterUnary<SimpleRequest, SimpleResponse>(
        kWho, [this](ServerContext* context, const SimpleRequest&,
                     SimpleResponse* out) {
          out->mutable_payload()->set_body(name_);
          MutexLock lock(&mu_);
          authority_ = std::string(context->authority());
          return Status();
        });
    const Status status = server_.Start();
    EXPECT_TRUE(status.ok()) << status.ToString();
  }

  std::string address() const { return server_.target(); }
  std::string authority() {
    MutexLock lock(&mu_);
    return authority_;
  }

 private:
  const std::string name_;
  StubServer server_;
  Mutex mu_;
  std::string authority_ ABSL_GUARDED_BY(mu_);
};

// What a ScriptedFactory's resolvers do and what happened to them, shared
// by the test thread and the channels' loops.
struct Script {
  Mutex mu;
  // What ResolveNow() reports: an error when not OK, else `result`.
  Status error ABSL_GUARDED_BY(mu);
  ResolverResult result ABSL_GUARDED_BY(mu);
  // Report from a timer this long after ResolveNow() (zero: at once).
  absl::Duration delay ABSL_GUARDED_BY(mu);
  // The channels of the resolvers alive now.
  std::set<ResolverChannel*> channels ABSL_GUARDED_BY(mu);
  int created ABSL_GUARDED_BY(mu) = 0;
  int destroyed ABSL_GUARDED_BY(mu) = 0;
  int resolve_now ABSL_GUARDED_BY(mu) = 0;
  // A cancelled timer's task ran.
  bool cancelled_timer_ran ABSL_GUARDED_BY(mu) = false;
  std::vector<ResolverTarget> targets ABSL_GUARDED_BY(mu);

  void Answer(std::vector<std::string> addresses, std::string config = "") {
    MutexLock lock(&mu);
    error = Status();
    result = ResolverResult();
    for (std::string& address : addresses) {
      result.addresses.push_back(ResolvedAddress{std::move(address), {}});
    }
    result.service_config = std::move(config);
  }
  void Fail(Status why) {
    MutexLock lock(&mu);
    error = std::move(why);
  }
  // Reports the current answer to every live resolver's channel, from this
  // (the test's) thread.
  void PushToAll() {
    MutexLock lock(&mu);
    for (ResolverChannel* channel : channels) channel->Update(result);
  }
  int Count(int Script::*field) {
    MutexLock lock(&mu);
    return this->*field;
  }
};

class ScriptedResolver final : public Resolver {
 public:
  ScriptedResolver(std::shared_ptr<Script> script, ResolverChannel* channel)
      : script_(std::move(script)), channel_(channel) {
    MutexLock lock(&script_->mu);
    ++script_->created;
    script_->channels.insert(channel_);
  }
  ~ScriptedResolver() override {
    MutexLock lock(&script_->mu);
    ++script_->destroyed;
    script_->channels.erase(channel_);
  }

  void ResolveNow() override {
    absl::Duration delay;
    {
      MutexLock lock(&script_->mu);
      ++script_->resolve_now;
      delay = script_->delay;
    }
    if (delay == absl::ZeroDuration()) {
      Report();
      return;
    }
    // A timer cancelled before it fires never runs; the one kept reports.
    const uint64_t cancelled = channel_->StartTimer(delay / 2, [this] {
      MutexLock lock(&script_->mu);
      script_->cancelled_timer_ran = true;
    });
    channel_->CancelTimer(cancelled);
    channel_->StartTimer(delay, [this] { Report(); });
  }

 private:
  void Report() {
    MutexLock lock(&script_->mu);
    if (!script_->error.ok()) {
      channel_->Error(script_->error);
    } else {
      channel_->Update(script_->result);
    }
  }

  const std::shared_ptr<Script> script_;
  ResolverChannel* const channel_;
};

// How a ScriptedFactory misbehaves, if it does.
enum class Fault { kNone, kNullResolver, kThrowInCreate, kThrowInResolveNow };

class ThrowingResolver final : public Resolver {
 public:
  void ResolveNow() override { throw std::runtime_error("resolve boom"); }
};

class ScriptedFactory final : public ResolverFactory {
 public:
  explicit ScriptedFactory(std::string scheme, Fault fault = Fault::kNone)
      : scheme_(std::move(scheme)), fault_(fault) {}

  std::string scheme() const override { return scheme_; }
  Status CheckTarget(const ResolverTarget& target) const override {
    if (target.endpoint == "bad") {
      return Status(StatusCode::kInvalidArgument, "no service named 'bad'");
    }
    return Status();
  }
  std::string DefaultAuthority(const ResolverTarget& target) const override {
    return absl::StrCat(target.endpoint, ".svc");
  }
  std::unique_ptr<Resolver> Create(const ResolverTarget& target,
                                   ResolverChannel* channel) override {
    {
      MutexLock lock(&script->mu);
      script->targets.push_back(target);
    }
    switch (fault_) {
      case Fault::kNullResolver:
        return nullptr;
      case Fault::kThrowInCreate:
        throw std::runtime_error("create boom");
      case Fault::kThrowInResolveNow:
        return std::make_unique<ThrowingResolver>();
      case Fault::kNone:
        break;
    }
    return std::make_unique<ScriptedResolver>(script, channel);
  }

  const std::shared_ptr<Script> script = std::make_shared<Script>();

 private:
  const std::string scheme_;
  const Fault fault_;
};

// Options for a channel that resolves with `factory`, backing off briefly.
ChannelOptions WithFactory(std::shared_ptr<ResolverFactory> factory) {
  ChannelOptions options;
  options.resolver_factories.push_back(std::move(factory));
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(100);
  return options;
}

// Calls kWho once; the server's name, or "error: " and the status.
std::string Who(Channel& channel, bool wait_for_ready = false) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  context.set_wait_for_ready(wait_for_ready);
  SimpleRequest request;
  SimpleResponse response;
  const Status status = channel.UnaryCall(&context, kWho, request, &response);
  if (!status.ok()) return absl::StrCat("error: ", status.ToString());
  return response.payload().body();
}

TEST(ResolverPluginTest, AddressesAndServiceConfigComeFromTheResolver) {
  NamedServer a("a"), b("b");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  // The resolver's config chooses round_robin: both servers get calls.
  factory->script->Answer({a.address(), b.address()},
                          R"({"loadBalancingConfig": [{"round_robin": {}}]})");
  std::shared_ptr<Channel> channel =
      CreateChannel("scripted://registry.test/greeter",
                    InsecureChannelCredentials(), WithFactory(factory));
  std::set<std::string> seen;
  for (int i = 0; i < 1000 && seen.size() < 2; ++i) {
    seen.insert(Who(*channel, /*wait_for_ready=*/true));
  }
  EXPECT_EQ(seen, (std::set<std::string>{"a", "b"}));
  MutexLock lock(&factory->script->mu);
  ASSERT_EQ(factory->script->targets.size(), 1u);
  const ResolverTarget& target = factory->script->targets[0];
  EXPECT_EQ(target.target, "scripted://registry.test/greeter");
  EXPECT_EQ(target.scheme, "scripted");
  EXPECT_EQ(target.authority, "registry.test");
  EXPECT_EQ(target.endpoint, "greeter");
}

TEST(ResolverPluginTest, WithoutAConfigTheChannelsOwnApplies) {
  NamedServer a("a"), b("b");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({a.address(), b.address()});
  ChannelOptions options = WithFactory(factory);
  options.service_config = R"({"loadBalancingConfig": [{"round_robin": {}}]})";
  std::shared_ptr<Channel> channel =
      CreateChannel("scripted:greeter", InsecureChannelCredentials(), options);
  std::set<std::string> seen;
  for (int i = 0; i < 1000 && seen.size() < 2; ++i) {
    seen.insert(Who(*channel, /*wait_for_ready=*/true));
  }
  EXPECT_EQ(seen, (std::set<std::string>{"a", "b"}));
}

TEST(ResolverPluginTest, NewAddressesFromAnyThreadMoveTheCalls) {
  NamedServer a("a"), b("b");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({a.address()});
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  EXPECT_EQ(Who(*channel), "a");

  factory->script->Answer({b.address()});
  factory->script->PushToAll();  // from the test's thread
  EXPECT_TRUE(WaitFor([&] { return Who(*channel) == "b"; }))
      << "calls did not move to the new address";
  EXPECT_EQ(Who(*channel), "b");
}

TEST(ResolverPluginTest, AnErrorFailsCallsAndTheChannelAsksAgain) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Fail(
      Status(StatusCode::kUnavailable, "registry unreachable"));
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  EXPECT_THAT(Who(*channel), HasSubstr("registry unreachable"));
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kTransientFailure);
  // The channel's backoff asks the resolver again, and again.
  EXPECT_TRUE(WaitFor(
      [&] { return factory->script->Count(&Script::resolve_now) >= 3; }));

  factory->script->Answer({a.address()});
  EXPECT_EQ(Who(*channel, /*wait_for_ready=*/true), "a");
  EXPECT_EQ(factory->script->Count(&Script::created), 1);
}

TEST(ResolverPluginTest, AnErrorAfterAddressesKeepsThem) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({a.address()});
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  EXPECT_EQ(Who(*channel), "a");
  {
    Script& script = *factory->script;
    MutexLock lock(&script.mu);
    for (ResolverChannel* link : script.channels) {
      link->Error(Status(StatusCode::kUnavailable, "watch broke"));
    }
  }
  EXPECT_TRUE(WaitFor([&] {
    return factory->script->Count(&Script::resolve_now) >= 2;
  })) << "the channel did not ask again after the error";
  EXPECT_EQ(Who(*channel), "a");
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);
}

struct UnusableCase {
  const char* name;
  std::vector<std::string> addresses;
  std::string config;
  const char* message;
};

class UnusableResultTest : public ::testing::TestWithParam<UnusableCase> {};

TEST_P(UnusableResultTest, FailsCallsWithWhatIsWrong) {
  const UnusableCase& c = GetParam();
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer(c.addresses, c.config);
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  const std::string outcome = Who(*channel);
  EXPECT_THAT(outcome, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(outcome, HasSubstr(c.message));
  EXPECT_THAT(outcome, HasSubstr("scripted:greeter"));
}

INSTANTIATE_TEST_SUITE_P(
    Results, UnusableResultTest,
    ::testing::Values(
        UnusableCase{"HostName",
                     {"localhost:80"},
                     "",
                     "'localhost' is not a numeric IP address"},
        UnusableCase{"NoPort", {"127.0.0.1"}, "", "no port"},
        UnusableCase{"NoAddresses", {}, "", "returned no addresses"},
        UnusableCase{"BadConfig",
                     {"127.0.0.1:1"},
                     R"({"methodConfig": [{"timeout": "soon"}]})",
                     "unusable service config"},
        UnusableCase{"HedgingConfig",
                     {"127.0.0.1:1"},
                     R"({"methodConfig": [{"name": [{}], "hedgingPolicy":
                         {"maxAttempts": 2, "hedgingDelay": "0s"}}]})",
                     "hedging is not supported"}),
    [](const ::testing::TestParamInfo<UnusableCase>& info) {
      return std::string(info.param.name);
    });

TEST(ResolverPluginTest, UnusableAddressesAreSkipped) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({"localhost:1", a.address(), "127.0.0.1"});
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  EXPECT_EQ(Who(*channel), "a");
}

TEST(ResolverPluginTest, PluginsThatFailPutTheChannelInTransientFailure) {
  const struct {
    Fault fault;
    const char* message;
  } cases[] = {
      {Fault::kNullResolver, "made no resolver for 'scripted:greeter'"},
      {Fault::kThrowInCreate, "resolver factory threw: create boom"},
      {Fault::kThrowInResolveNow, "ResolveNow() threw: resolve boom"},
  };
  for (const auto& c : cases) {
    auto factory = std::make_shared<ScriptedFactory>("scripted", c.fault);
    std::shared_ptr<Channel> channel = CreateChannel(
        "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
    const std::string outcome = Who(*channel);
    EXPECT_THAT(outcome, HasSubstr("UNAVAILABLE")) << c.message;
    EXPECT_THAT(outcome, HasSubstr(c.message));
    EXPECT_EQ(channel->GetState(false), ConnectivityState::kTransientFailure);
  }
}

TEST(ResolverPluginTest, ATargetTheFactoryRefusesIsInvalid) {
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:bad", InsecureChannelCredentials(), WithFactory(factory));
  const std::string outcome = Who(*channel);
  EXPECT_THAT(outcome, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(outcome, HasSubstr("no service named 'bad'"));
  EXPECT_EQ(factory->script->Count(&Script::created), 0);
}

TEST(ResolverPluginTest, TheChannelsFactoriesComeBeforeTheRegisteredOnes) {
  NamedServer a("a"), b("b");
  auto registered = std::make_shared<ScriptedFactory>("registered-test");
  registered->script->Answer({a.address()});
  ASSERT_TRUE(RegisterResolverFactory(registered).ok());
  EXPECT_EQ(FindResolverFactory("Registered-Test"), registered);

  std::shared_ptr<Channel> from_registry =
      CreateChannel("registered-test:greeter", InsecureChannelCredentials());
  EXPECT_EQ(Who(*from_registry), "a");

  auto own = std::make_shared<ScriptedFactory>("registered-test");
  own->script->Answer({b.address()});
  std::shared_ptr<Channel> from_options =
      CreateChannel("registered-test:greeter", InsecureChannelCredentials(),
                    WithFactory(own));
  EXPECT_EQ(Who(*from_options), "b");
}

TEST(ResolverPluginTest, AFactoryForDnsResolvesTargetsWithoutAScheme) {
  NamedServer a("a");
  auto dns = std::make_shared<ScriptedFactory>("dns");
  dns->script->Answer({a.address()});
  // Nothing listens on example.test; the factory answers for it.
  std::shared_ptr<Channel> channel = CreateChannel(
      "example.test:1", InsecureChannelCredentials(), WithFactory(dns));
  EXPECT_EQ(Who(*channel), "a");
  MutexLock lock(&dns->script->mu);
  ASSERT_EQ(dns->script->targets.size(), 1u);
  EXPECT_EQ(dns->script->targets[0].scheme, "dns");
  EXPECT_EQ(dns->script->targets[0].endpoint, "example.test:1");
}

TEST(ResolverPluginTest, CallsCarryTheFactorysDefaultAuthority) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({a.address()});
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  EXPECT_EQ(Who(*channel), "a");
  EXPECT_EQ(a.authority(), "greeter.svc");
}

TEST(ResolverPluginTest, TimersRunOnTheLoopAndCancelledOnesNever) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({a.address()});
  {
    MutexLock lock(&factory->script->mu);
    factory->script->delay = absl::Milliseconds(50);
  }
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  EXPECT_EQ(Who(*channel, /*wait_for_ready=*/true), "a");
  // The cancelled timer was due before the one that answered.
  MutexLock lock(&factory->script->mu);
  EXPECT_FALSE(factory->script->cancelled_timer_ran);
}

TEST(ResolverPluginTest, AnIdleChannelDropsItsResolverAndMakesAnotherLater) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({a.address()});
  ChannelOptions options = WithFactory(factory);
  options.idle_timeout = absl::Milliseconds(50);
  std::shared_ptr<Channel> channel =
      CreateChannel("scripted:greeter", InsecureChannelCredentials(), options);
  EXPECT_EQ(Who(*channel), "a");
  // The resolver goes as the channel turns IDLE, just before the state
  // says so: both are waited for.
  EXPECT_TRUE(WaitFor([&] {
    return factory->script->Count(&Script::destroyed) == 1 &&
           channel->GetState(false) == ConnectivityState::kIdle;
  })) << "the idle channel kept its resolver";
  EXPECT_EQ(Who(*channel), "a");
  EXPECT_EQ(factory->script->Count(&Script::created), 2);
}

// A request whose serialized size is `size` bytes.
SimpleRequest RequestOfSize(size_t size) {
  SimpleRequest request;
  for (size_t body = 0; request.ByteSizeLong() < size; ++body) {
    request.mutable_payload()->set_body(std::string(body, 'x'));
  }
  return request;
}

// A call of kWho with a request of `size` bytes: its status code.
StatusCode CallWithRequestOf(Channel& channel, size_t size) {
  ClientContext context;
  context.set_timeout(kHangTimeout);
  SimpleResponse response;
  return channel.UnaryCall(&context, kWho, RequestOfSize(size), &response)
      .code();
}

TEST(ResolverPluginTest, DistinctServiceConfigsAreKeptUpToTheirBound) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  // Config i lets requests of at most 2000 - 10 * i bytes through.
  auto config = [](int i) {
    return absl::StrCat(
        R"({"methodConfig": [{"name": [{}], "maxRequestMessageBytes": )",
        2000 - 10 * i, "}]}");
  };
  factory->script->Answer({a.address()}, config(1));
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  ASSERT_EQ(Who(*channel), "a");
  // The channel's own (empty) config and 15 of the resolver's: each one
  // applied.
  const int kept = static_cast<int>(internal::ChannelCore::kMaxServiceConfigs);
  for (int i = 1; i < kept; ++i) {
    factory->script->Answer({a.address()}, config(i));
    factory->script->PushToAll();
    const size_t over = 2000 - 10 * i + 1;
    EXPECT_TRUE(WaitFor([&] {
      return CallWithRequestOf(*channel, over) ==
             StatusCode::kResourceExhausted;
    })) << "config "
        << i << " was not applied";
  }
  EXPECT_EQ(factory->script->Count(&Script::resolve_now), 1);
  // One more distinct config counts as the resolver's error: the channel
  // asks again, and keeps the last config and its addresses.
  factory->script->Answer({a.address()}, config(kept));
  factory->script->PushToAll();
  EXPECT_TRUE(WaitFor(
      [&] { return factory->script->Count(&Script::resolve_now) >= 2; }));
  EXPECT_EQ(CallWithRequestOf(*channel, 2000 - 10 * (kept - 1)),
            StatusCode::kOk);
  EXPECT_EQ(CallWithRequestOf(*channel, 2000 - 10 * (kept - 1) + 1),
            StatusCode::kResourceExhausted);
}

TEST(ResolverPluginTest, PostedTasksRunOnTheChannelsLoop) {
  NamedServer a("a");
  auto factory = std::make_shared<ScriptedFactory>("scripted");
  factory->script->Answer({a.address()});
  std::shared_ptr<Channel> channel = CreateChannel(
      "scripted:greeter", InsecureChannelCredentials(), WithFactory(factory));
  ASSERT_EQ(Who(*channel), "a");
  Mutex mu;
  std::string thread_name;
  {
    MutexLock lock(&factory->script->mu);
    ASSERT_EQ(factory->script->channels.size(), 1u);
    // From the test's thread.
    (*factory->script->channels.begin())->Post([&] {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      MutexLock lock(&mu);
      thread_name = name;
    });
  }
  EXPECT_TRUE(WaitFor([&] {
    MutexLock lock(&mu);
    return !thread_name.empty();
  }));
  MutexLock lock(&mu);
  EXPECT_EQ(thread_name, "h2rpc-channel");
}

TEST(ResolverPluginTest, RegisteringChecksTheFactory) {
  EXPECT_EQ(RegisterResolverFactory(nullptr).code(),
            StatusCode::kInvalidArgument);
  const Status status =
      RegisterResolverFactory(std::make_shared<ScriptedFactory>("Not Valid"));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'Not Valid'"));
  EXPECT_EQ(FindResolverFactory("unregistered"), nullptr);
}

}  // namespace
}  // namespace h2rpc
