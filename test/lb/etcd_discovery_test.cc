// Service discovery through a real etcd (Debian's etcd-server, started by
// the test on 127.0.0.1): backends (//test/lb:lb_backend processes)
// register with EtcdRegistrar, a channel to "etcd://ENDPOINT/SERVICE"
// resolves them with EtcdResolverFactory, and the rotation follows
// registrations: a killed backend leaves when its lease expires, a new one
// joins, a graceful shutdown leaves at once; what etcdctl writes in etcd's
// naming/endpoints layout (as Go programs do) is found, and etcdctl sees
// what the registrar wrote.
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/etcd/etcd_registrar.h"
#include "rpc/etcd/etcd_resolver.h"
#include "rpc/resolver.h"
#include "test/lb/call_runner.h"
#include "test/util/child_process.h"
#include "test/util/etcd_process.h"
#include "test/util/server_process.h"
#include "test/util/tcp_proxy.h"
#include "test/util/wait_for.h"

namespace h2rpc {
namespace {

using ::h2rpc::testing::AllAnswer;
using ::h2rpc::testing::CallRecord;
using ::h2rpc::testing::CallRunner;
using ::h2rpc::testing::CountByBackend;
using ::h2rpc::testing::Describe;
using ::h2rpc::testing::EtcdProcess;
using ::h2rpc::testing::Failures;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::RunfilesPath;
using ::h2rpc::testing::ServerProcess;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;

// Short, so that a killed backend's lease expires soon.
constexpr int kTtlSeconds = 2;
// Calls each phase runs.
constexpr int64_t kPhaseCalls = 2000;
// round_robin, and retries of calls a killed backend leaves failed, so
// that no wait_for_ready call is lost.
constexpr char kServiceConfig[] = R"({
  "loadBalancingConfig": [{"round_robin": {}}],
  "methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s",
                    "maxBackoff": "0.5s", "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"]}}]})";

class EtcdDiscoveryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(
        RegisterResolverFactory(std::make_shared<EtcdResolverFactory>()).ok());
  }

  void SetUp() override {
    std::string error;
    etcd_ = EtcdProcess::Start(kHangTimeout, &error);
    ASSERT_NE(etcd_, nullptr) << error;
  }

  // Starts lb_backend `name`, registered under `service` (none if empty).
  std::unique_ptr<ServerProcess> StartBackend(const std::string& name,
                                              const std::string& service,
                                              int ttl_seconds = kTtlSeconds) {
    std::vector<std::string> argv = {RunfilesPath("test/lb/lb_backend"),
                                     "127.0.0.1:0", name};
    if (!service.empty()) {
      argv.insert(argv.end(),
                  {etcd_->endpoint(), service, absl::StrCat(ttl_seconds)});
    }
    std::string error;
    std::unique_ptr<ServerProcess> backend =
        ServerProcess::Start(name, argv, kHangTimeout, &error);
    if (backend == nullptr) ADD_FAILURE() << error;
    return backend;
  }

  std::shared_ptr<Channel> NewChannel(const std::string& service) {
    ChannelOptions options;
    options.service_config = kServiceConfig;
    return CreateChannel(
        absl::StrCat("etcd://", etcd_->endpoint(), "/", service),
        InsecureChannelCredentials(), options);
  }

  // `etcdctl get PREFIX --prefix`: keys and values, one per line each.
  std::vector<std::string> Get(const std::string& prefix) {
    std::string output, error;
    EXPECT_TRUE(etcd_->Etcdctl({"get", prefix, "--prefix"}, &output, &error))
        << error;
    return absl::StrSplit(output, '\n', absl::SkipEmpty());
  }
  // The keys under `prefix`.
  std::set<std::string> Keys(const std::string& prefix) {
    std::string output, error;
    EXPECT_TRUE(etcd_->Etcdctl({"get", prefix, "--prefix", "--keys-only"},
                               &output, &error))
        << error;
    std::vector<std::string> keys =
        absl::StrSplit(output, '\n', absl::SkipEmpty());
    return std::set<std::string>(keys.begin(), keys.end());
  }
  std::string KeyOf(const ServerProcess& backend, const std::string& service) {
    return absl::StrCat(service, "/127.0.0.1:", backend.port());
  }

  std::unique_ptr<EtcdProcess> etcd_;
};

TEST_F(EtcdDiscoveryTest, RotationFollowsRegistrations) {
  std::unique_ptr<ServerProcess> b0 = StartBackend("b0", "greeter");
  std::unique_ptr<ServerProcess> b1 = StartBackend("b1", "greeter");
  std::unique_ptr<ServerProcess> b2 = StartBackend("b2", "greeter");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr && b2 != nullptr);

  // etcdctl sees the registrations in etcd's naming/endpoints layout.
  const std::vector<std::string> lines = Get("greeter/");
  ASSERT_EQ(lines.size(), 6u) << absl::StrJoin(lines, "\n");
  std::map<std::string, std::string> values;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    values[lines[i]] = lines[i + 1];
  }
  EXPECT_EQ(values[KeyOf(*b0, "greeter")],
            absl::StrCat(R"({"Addr":"127.0.0.1:)", b0->port(),
                         R"(","Metadata":{"name":"b0"},"Op":0})"));
  EXPECT_EQ(values.count(KeyOf(*b1, "greeter")), 1u);
  EXPECT_EQ(values.count(KeyOf(*b2, "greeter")), 1u);

  std::shared_ptr<Channel> channel = NewChannel("greeter");
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0", "b1", "b2"}, kHangTimeout, &seen))
      << "answered: " << seen;

  CallRunner::Options run;
  run.in_flight = 16;
  run.wait_for_ready = true;
  CallRunner runner(channel, run);
  ASSERT_TRUE(runner.WaitForCompleted(kPhaseCalls, kHangTimeout));

  // Killed: no deregistration. Its lease expires, etcd deletes its key and
  // the watch takes it out of the rotation.
  const std::string b2_key = KeyOf(*b2, "greeter");
  b2->Kill();
  ASSERT_TRUE(WaitFor([&] { return Keys("greeter/").count(b2_key) == 0; }))
      << "b2's lease did not expire";
  const absl::Time expired = absl::Now();
  ASSERT_TRUE(
      runner.WaitForCompletedStartedAfter(expired, kPhaseCalls, kHangTimeout));

  // A new backend joins.
  std::unique_ptr<ServerProcess> b3 = StartBackend("b3", "greeter");
  ASSERT_NE(b3, nullptr);
  const absl::Time joined = absl::Now();
  EXPECT_TRUE(runner.WaitForAnswerFrom("b3", joined, kHangTimeout))
      << "b3 never answered";
  runner.Stop();
  ASSERT_TRUE(runner.WaitAllDone(kHangTimeout));

  const std::vector<CallRecord> records = runner.Records();
  EXPECT_EQ(Failures(records), "") << "a wait_for_ready call was lost";
  size_t after = 0, joined_at = 0;
  while (after < records.size() && records[after].start < expired) ++after;
  while (joined_at < records.size() && records[joined_at].start < joined) {
    ++joined_at;
  }
  const std::map<std::string, int64_t> between =
      CountByBackend(records, after, joined_at);
  EXPECT_EQ(between.count("b2"), 0u) << Describe(between);
  EXPECT_GT(between.count("b0") + between.count("b1"), 0u) << Describe(between);
}

TEST_F(EtcdDiscoveryTest, AGracefulShutdownLeavesAtOnce) {
  // A lease far longer than the test: only the revocation removes the key.
  std::unique_ptr<ServerProcess> b0 = StartBackend("b0", "echo", 3600);
  std::unique_ptr<ServerProcess> b1 = StartBackend("b1", "echo", 3600);
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr);
  const std::string b1_key = KeyOf(*b1, "echo");
  EXPECT_EQ(Keys("echo/").count(b1_key), 1u);
  std::shared_ptr<Channel> channel = NewChannel("echo");
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0", "b1"}, kHangTimeout, &seen))
      << "answered: " << seen;

  std::string how;
  ASSERT_TRUE(b1->Terminate(kHangTimeout, &how)) << how;
  EXPECT_EQ(Keys("echo/"), std::set<std::string>{KeyOf(*b0, "echo")});
  // Calls keep working on the one left.
  ASSERT_TRUE(AllAnswer(*channel, {"b0"}, kHangTimeout, &seen)) << seen;
}

TEST_F(EtcdDiscoveryTest, FindsWhatEtcdctlRegistersAsGoProgramsDo) {
  std::unique_ptr<ServerProcess> b0 = StartBackend("b0", "");
  std::unique_ptr<ServerProcess> b1 = StartBackend("b1", "");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr);
  std::string error;
  // The layout etcd's Go endpoints.Manager writes; a value h2rpc cannot
  // use (a host name, not JSON) is skipped.
  ASSERT_TRUE(
      etcd_->Etcdctl({"put", "legacy/b0",
                      absl::StrCat(R"({"Op":0,"Addr":"127.0.0.1:)", b0->port(),
                                   R"(","Metadata":"rack-1"})")},
                     nullptr, &error))
      << error;
  ASSERT_TRUE(etcd_->Etcdctl(
      {"put", "legacy/named", R"({"Op":0,"Addr":"backend.internal:80"})"},
      nullptr, &error))
      << error;
  ASSERT_TRUE(
      etcd_->Etcdctl({"put", "legacy/garbage", "not json"}, nullptr, &error))
      << error;
  std::shared_ptr<Channel> channel = NewChannel("legacy");
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0"}, kHangTimeout, &seen)) << seen;

  // Changes arrive through the watch: b1 replaces b0.
  ASSERT_TRUE(etcd_->Etcdctl(
      {"put", "legacy/b1",
       absl::StrCat(R"({"Op":0,"Addr":"127.0.0.1:)", b1->port(), R"("})")},
      nullptr, &error))
      << error;
  ASSERT_TRUE(etcd_->Etcdctl({"del", "legacy/b0"}, nullptr, &error)) << error;
  EXPECT_TRUE(WaitFor([&] {
    return AllAnswer(*channel, {"b1"}, absl::Seconds(1), &seen);
  })) << seen;

  // Nothing left: calls fail with the resolver's reason... unless
  // wait_for_ready, which waits for a registration.
  ASSERT_TRUE(etcd_->Etcdctl({"del", "legacy/", "--prefix"}, nullptr, &error))
      << error;
  std::unique_ptr<ServerProcess> b2 = StartBackend("b2", "legacy");
  ASSERT_NE(b2, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    return AllAnswer(*channel, {"b2"}, absl::Seconds(1), &seen);
  })) << seen;
}

// Puts an endpoint for `backend` under `key` with etcdctl.
void PutEndpoint(EtcdProcess& etcd, const std::string& key,
                 const ServerProcess& backend) {
  std::string error;
  ASSERT_TRUE(etcd.Etcdctl(
      {"put", key,
       absl::StrCat(R"({"Op":0,"Addr":"127.0.0.1:)", backend.port(), R"("})")},
      nullptr, &error))
      << error;
}

// etcd's current store revision.
int64_t CurrentRevision(EtcdProcess& etcd) {
  std::string output, error;
  EXPECT_TRUE(etcd.Etcdctl({"get", "any", "-w", "json"}, &output, &error))
      << error;
  const size_t at = output.find("\"revision\":");
  int64_t revision = 0;
  if (at != std::string::npos) {
    const std::string digits = output.substr(at + 11);
    EXPECT_TRUE(absl::SimpleAtoi(
        digits.substr(0, digits.find_first_not_of("0123456789")), &revision))
        << output;
  }
  return revision;
}

// The watch breaks (the connection to etcd is reset) while a backend is
// added: resumed, it brings the change; and while etcd compacts its history
// past the watch's revision: the resolver starts over with a Range and
// finds the current registrations.
TEST_F(EtcdDiscoveryTest, AWatchBrokenOrCompactedCatchesUp) {
  std::unique_ptr<ServerProcess> b0 = StartBackend("b0", "");
  std::unique_ptr<ServerProcess> b1 = StartBackend("b1", "");
  std::unique_ptr<ServerProcess> b2 = StartBackend("b2", "");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr && b2 != nullptr);
  testing::TcpProxy proxy(etcd_->client_port());
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  PutEndpoint(*etcd_, "cut/b0", *b0);
  ChannelOptions options;
  options.service_config = kServiceConfig;
  options.initial_backoff = absl::Milliseconds(100);
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("etcd://", proxy.target(), "/cut"),
                    InsecureChannelCredentials(), options);
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0"}, kHangTimeout, &seen)) << seen;

  // Broken: b1 is added while the resolver cannot hear of it.
  proxy.Freeze();
  PutEndpoint(*etcd_, "cut/b1", *b1);
  proxy.ResetConnections();
  proxy.Thaw();
  EXPECT_TRUE(WaitFor([&] {
    return AllAnswer(*channel, {"b0", "b1"}, absl::Seconds(1), &seen);
  })) << "the resumed watch did not bring b1; answered: "
      << seen;

  // Compacted: b2 replaces b0 and etcd forgets the history in between.
  // (AllAnswer wants exactly the names given: b0 answering fails it.)
  proxy.Freeze();
  PutEndpoint(*etcd_, "cut/b2", *b2);
  std::string error;
  ASSERT_TRUE(etcd_->Etcdctl({"del", "cut/b0"}, nullptr, &error)) << error;
  ASSERT_TRUE(etcd_->Etcdctl({"compact", absl::StrCat(CurrentRevision(*etcd_))},
                             nullptr, &error))
      << error;
  proxy.ResetConnections();
  proxy.Thaw();
  EXPECT_TRUE(WaitFor([&] {
    return AllAnswer(*channel, {"b1", "b2"}, absl::Seconds(1), &seen);
  })) << "after the compaction: answered "
      << seen;
}

// With max_endpoints 2, the first two of three registered are used; a
// fourth arriving by the watch is left out, while a kept one's change
// still arrives (after the fourth: the watch is in order).
TEST_F(EtcdDiscoveryTest, EndpointsBeyondTheBoundAreLeftOut) {
  std::vector<std::unique_ptr<ServerProcess>> backends;
  for (int i = 0; i < 4; ++i) {
    backends.push_back(StartBackend(absl::StrCat("b", i), ""));
    ASSERT_NE(backends.back(), nullptr);
  }
  for (int i = 0; i < 3; ++i) {
    PutEndpoint(*etcd_, absl::StrCat("cap/b", i), *backends[i]);
  }
  EtcdResolverFactory::Options resolver_options;
  resolver_options.max_endpoints = 2;
  ChannelOptions options;
  options.service_config = kServiceConfig;
  options.resolver_factories.push_back(
      std::make_shared<EtcdResolverFactory>(resolver_options));
  std::shared_ptr<Channel> channel =
      CreateChannel(absl::StrCat("etcd://", etcd_->endpoint(), "/cap"),
                    InsecureChannelCredentials(), options);
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0", "b1"}, kHangTimeout, &seen)) << seen;

  PutEndpoint(*etcd_, "cap/b3", *backends[3]);
  PutEndpoint(*etcd_, "cap/b1", *backends[2]);
  EXPECT_TRUE(WaitFor([&] {
    return AllAnswer(*channel, {"b0", "b2"}, absl::Seconds(1), &seen);
  })) << seen;
}

TEST_F(EtcdDiscoveryTest, AnEmptyServiceFailsCallsWithTheReason) {
  std::shared_ptr<Channel> channel = NewChannel("nobody");
  ClientContext context;
  context.set_timeout(kHangTimeout);
  grpc::testing::SimpleRequest request;
  grpc::testing::SimpleResponse response;
  const Status status = channel->UnaryCall(
      &context, grpc::testing::TestService::kUnaryCallPath, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(status.message(),
              HasSubstr("no usable endpoint under 'nobody/'"));
}

TEST_F(EtcdDiscoveryTest, TheRegistrarRegistersAgainWhenItsLeaseIsGone) {
  std::unique_ptr<EtcdRegistrar> registrar;
  EtcdRegistrar::Options options;
  options.etcd = etcd_->endpoint();
  options.service = "lost";
  options.address = "127.0.0.1:1";
  options.ttl = absl::Seconds(kTtlSeconds);
  ASSERT_TRUE(EtcdRegistrar::Start(options, &registrar).ok());
  EXPECT_EQ(registrar->registrations(), 1);
  const int64_t lease = registrar->lease_id();
  ASSERT_NE(lease, 0);

  std::string error;
  ASSERT_TRUE(etcd_->Etcdctl(
      {"lease", "revoke", absl::StrCat(absl::Hex(lease))}, nullptr, &error))
      << error;
  EXPECT_TRUE(WaitFor([&] { return registrar->registrations() == 2; }))
      << registrar->last_error().ToString();
  EXPECT_NE(registrar->lease_id(), lease);
  EXPECT_EQ(Keys("lost/"), std::set<std::string>{"lost/127.0.0.1:1"});
  EXPECT_THAT(registrar->last_error().message(), HasSubstr("is gone"));

  ASSERT_TRUE(registrar->Stop().ok());
  EXPECT_TRUE(Keys("lost/").empty());
}

TEST_F(EtcdDiscoveryTest, BadTargetsAndOptionsAreRefused) {
  for (const char* target : {"etcd:///greeter", "etcd://127.0.0.1:2379/",
                             "etcd://a.test:1,b.test:2/greeter"}) {
    std::shared_ptr<Channel> channel =
        CreateChannel(target, InsecureChannelCredentials());
    ClientContext context;
    grpc::testing::SimpleRequest request;
    grpc::testing::SimpleResponse response;
    const Status status =
        channel->UnaryCall(&context, grpc::testing::TestService::kUnaryCallPath,
                           request, &response);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << target;
    EXPECT_THAT(status.message(), HasSubstr("'etcd' resolver")) << target;
  }
  std::unique_ptr<EtcdRegistrar> registrar;
  EtcdRegistrar::Options options;
  options.etcd = etcd_->endpoint();
  EXPECT_EQ(EtcdRegistrar::Start(options, &registrar).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(registrar, nullptr);
}

}  // namespace
}  // namespace h2rpc
