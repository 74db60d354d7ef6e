// End-to-end load balancing against backend processes (//test/lb:lb_backend,
// one h2rpc server per process): round_robin's spread over TCP and
// unix-domain backends behind one resolved name, failover when a backend
// shuts down, client-side health checking, pick_first's order and
// failover, the channel's state when every backend is gone, and unix-domain
// targets.
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/client_context.h"
#include "rpc/connectivity_state.h"
#include "rpc/internal/name_resolver_impl.h"
#include "rpc/name_resolver.h"
#include "test/lb/call_runner.h"
#include "test/util/child_process.h"
#include "test/util/server_process.h"
#include "test/util/wait_for.h"
#include "transport/io/resolver.h"
#include "transport/io/socket.h"

namespace h2rpc {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::TestService;
using ::h2rpc::testing::AllAnswer;
using ::h2rpc::testing::CallRecord;
using ::h2rpc::testing::CallRunner;
using ::h2rpc::testing::CountByBackend;
using ::h2rpc::testing::Describe;
using ::h2rpc::testing::Failures;
using ::h2rpc::testing::kHangTimeout;
using ::h2rpc::testing::RunfilesPath;
using ::h2rpc::testing::ServerProcess;
using ::h2rpc::testing::WaitFor;
using ::testing::HasSubstr;
using transport::io::SocketAddress;

// Calls spread over three backends in
// RoundRobinSpreadsEvenlyOverTcpAndUnixBackends.
constexpr int64_t kSpreadCalls = 30000;
// Calls each phase of the failover and health tests runs (a phase takes
// well under a second, under the sanitizers too).
constexpr int64_t kPhaseCalls = 6000;
// How far from an even share a backend's count may be.
constexpr double kSpreadTolerance = 0.05;
// How soon a backend's health status change must take effect.
constexpr absl::Duration kHealthBound = absl::Seconds(1);

// Starts lb_backend on `address`, answering as `name`; null (with the test
// failed) if it does not start.
std::unique_ptr<ServerProcess> StartBackend(const std::string& address,
                                            const std::string& name) {
  std::string error;
  std::unique_ptr<ServerProcess> backend = ServerProcess::Start(
      name, {RunfilesPath("test/lb/lb_backend"), address, name}, kHangTimeout,
      &error);
  if (backend == nullptr) ADD_FAILURE() << error;
  return backend;
}

// Ends `backend` with SIGTERM (a graceful server shutdown) and checks that
// it exited with code 0.
void Terminate(ServerProcess& backend) {
  std::string how;
  EXPECT_TRUE(backend.Terminate(kHangTimeout, &how)) << how;
}

SocketAddress TcpAddress(int port) {
  std::vector<SocketAddress> addresses;
  EXPECT_TRUE(transport::io::ResolveNumericTarget(
                  absl::StrCat("127.0.0.1:", port), &addresses)
                  .ok());
  return addresses.empty() ? SocketAddress() : addresses.front();
}

SocketAddress UnixAddress(const std::string& path) {
  SocketAddress address;
  EXPECT_TRUE(transport::io::UnixSocketAddress(path, false, &address).ok());
  return address;
}

// "ipv4:127.0.0.1:<p1>,127.0.0.1:<p2>,..."
std::string Ipv4Target(const std::vector<int>& ports) {
  std::vector<std::string> entries;
  for (int port : ports) entries.push_back(absl::StrCat("127.0.0.1:", port));
  return absl::StrCat("ipv4:", absl::StrJoin(entries, ","));
}

// A resolver whose lookup of `host_port` answers `addresses` (and fails
// for any other name), on the resolver thread.
std::shared_ptr<NameResolver> FixedResolver(
    std::string host_port, std::vector<SocketAddress> addresses) {
  auto lookup = [host_port = std::move(host_port),
                 addresses = std::move(addresses)](
                    absl::string_view target, std::vector<SocketAddress>* out) {
    if (target != host_port) {
      return Status(
          StatusCode::kUnavailable,
          absl::StrCat("the test resolves only ", host_port, ", not ", target));
    }
    *out = addresses;
    return Status();
  };
  return std::make_shared<NameResolver>(
      std::make_unique<internal::NameResolverImpl>(internal::NameResolverImpl{
          std::make_shared<transport::io::Resolver>(std::move(lookup))}));
}

// The index of the first record started at or after `time`.
size_t FirstStartedAt(const std::vector<CallRecord>& records, absl::Time time) {
  size_t i = 0;
  while (i < records.size() && records[i].start < time) ++i;
  return i;
}

// Expects each of `names` to have within kSpreadTolerance of an even share
// of `total` calls in `counts`, and nobody else any.
void ExpectEvenSpread(const std::map<std::string, int64_t>& counts,
                      const std::set<std::string>& names, int64_t total) {
  const double share = static_cast<double>(total) / names.size();
  for (const std::string& name : names) {
    auto it = counts.find(name);
    const int64_t count = it == counts.end() ? 0 : it->second;
    EXPECT_GE(count, share * (1 - kSpreadTolerance))
        << name << " of " << Describe(counts);
    EXPECT_LE(count, share * (1 + kSpreadTolerance))
        << name << " of " << Describe(counts);
  }
  for (const auto& [name, count] : counts) {
    EXPECT_EQ(names.count(name), 1u)
        << name << " served " << count << " calls: " << Describe(counts);
  }
}

// A fresh directory under /tmp (Bazel's TEST_TMPDIR can be too long for
// sun_path), removed with the socket files the tests leave in it.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/h2rpc_lb_test_XXXXXX";
    if (mkdtemp(pattern) != nullptr) path_ = pattern;
    EXPECT_FALSE(path_.empty()) << "mkdtemp: " << strerror(errno);
  }
  ~TempDir() {
    for (const std::string& file : files_) unlink(file.c_str());
    rmdir(path_.c_str());
  }
  // A path in the directory, removed with it.
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// A TCP port on 127.0.0.1 bound and not listening: connecting to it is
// refused for as long as the object lives.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), size), 0)
        << strerror(errno);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size), 0)
        << strerror(errno);
    port_ = ntohs(address.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// (a) One channel, one name resolving to two TCP backends and a unix-domain
// one: round_robin gives each a third of the calls.
TEST(LoadBalancingTest, RoundRobinSpreadsEvenlyOverTcpAndUnixBackends) {
  TempDir dir;
  const std::string socket_path = dir.File("b2.sock");
  std::unique_ptr<ServerProcess> b0 = StartBackend("127.0.0.1:0", "b0");
  std::unique_ptr<ServerProcess> b1 = StartBackend("127.0.0.1:0", "b1");
  std::unique_ptr<ServerProcess> b2 =
      StartBackend(absl::StrCat("unix:", socket_path), "b2");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr && b2 != nullptr);

  ChannelOptions options;
  options.lb_policy = "round_robin";
  options.resolver = FixedResolver(
      "backends.test:443", {TcpAddress(b0->port()), TcpAddress(b1->port()),
                            UnixAddress(socket_path)});
  std::shared_ptr<Channel> channel =
      CreateChannel("dns:///backends.test", options);
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0", "b1", "b2"}, kHangTimeout, &seen))
      << "answered: " << seen;

  CallRunner::Options run;
  run.total = kSpreadCalls;
  CallRunner runner(channel, run);
  ASSERT_TRUE(runner.WaitAllDone(absl::Minutes(2)))
      << runner.completed() << " of " << kSpreadCalls << " calls completed";
  const std::vector<CallRecord> records = runner.Records();
  ASSERT_EQ(Failures(records), "");
  ExpectEvenSpread(CountByBackend(records, 0, records.size()),
                   {"b0", "b1", "b2"}, kSpreadCalls);
}

// (b) A backend shut down gracefully (SIGTERM) while wait_for_ready calls
// run: no call fails, and the other two share its calls.
TEST(LoadBalancingTest, RoundRobinMovesCallsOffABackendThatShutsDown) {
  std::unique_ptr<ServerProcess> b0 = StartBackend("127.0.0.1:0", "b0");
  std::unique_ptr<ServerProcess> b1 = StartBackend("127.0.0.1:0", "b1");
  std::unique_ptr<ServerProcess> b2 = StartBackend("127.0.0.1:0", "b2");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr && b2 != nullptr);
  ChannelOptions options;
  options.lb_policy = "round_robin";
  std::shared_ptr<Channel> channel =
      CreateChannel(Ipv4Target({b0->port(), b1->port(), b2->port()}), options);
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0", "b1", "b2"}, kHangTimeout, &seen))
      << "answered: " << seen;

  CallRunner::Options run;
  run.wait_for_ready = true;
  CallRunner runner(channel, run);
  ASSERT_TRUE(runner.WaitForCompleted(kPhaseCalls, kHangTimeout));
  const absl::Time killed = absl::Now();
  Terminate(*b2);  // returns once it has exited
  const absl::Time exited = absl::Now();
  ASSERT_TRUE(
      runner.WaitForCompletedStartedAfter(exited, kPhaseCalls, kHangTimeout))
      << runner.completed() << " calls completed";
  runner.Stop();
  ASSERT_TRUE(runner.WaitAllDone(kHangTimeout));

  const std::vector<CallRecord> records = runner.Records();
  EXPECT_EQ(Failures(records), "");
  const size_t before = FirstStartedAt(records, killed);
  const size_t after = FirstStartedAt(records, exited);
  ExpectEvenSpread(CountByBackend(records, 0, before), {"b0", "b1", "b2"},
                   static_cast<int64_t>(before));
  ExpectEvenSpread(CountByBackend(records, after, records.size()), {"b0", "b1"},
                   static_cast<int64_t>(records.size() - after));
}

// (c) Client-side health checking: a backend whose TestService turns
// NOT_SERVING stops getting calls (within kHealthBound), and gets them
// again once it is SERVING.
TEST(LoadBalancingTest, HealthCheckingTakesANotServingBackendOutOfRotation) {
  std::unique_ptr<ServerProcess> b0 = StartBackend("127.0.0.1:0", "b0");
  std::unique_ptr<ServerProcess> b1 = StartBackend("127.0.0.1:0", "b1");
  std::unique_ptr<ServerProcess> b2 = StartBackend("127.0.0.1:0", "b2");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr && b2 != nullptr);
  ChannelOptions options;
  options.service_config =
      R"({"loadBalancingConfig": [{"round_robin": {}}],
          "healthCheckConfig": {"serviceName": "grpc.testing.TestService"}})";
  std::shared_ptr<Channel> channel =
      CreateChannel(Ipv4Target({b0->port(), b1->port(), b2->port()}), options);
  std::string seen;
  ASSERT_TRUE(AllAnswer(*channel, {"b0", "b1", "b2"}, kHangTimeout, &seen))
      << "answered: " << seen;

  CallRunner runner(channel, CallRunner::Options());
  ASSERT_TRUE(runner.WaitForCompleted(kPhaseCalls, kHangTimeout));
  std::string error;
  const absl::Time asked = absl::Now();
  ASSERT_TRUE(b1->Command("not_serving", kHangTimeout, &error)) << error;
  const absl::Time not_serving = absl::Now();
  // Calls run on past the bound.
  ASSERT_TRUE(runner.WaitForCompletedStartedAfter(not_serving + kHealthBound,
                                                  kPhaseCalls, kHangTimeout))
      << runner.completed() << " calls completed";

  // b1 may get calls again from the moment it is asked to serve.
  const absl::Time asked_to_serve = absl::Now();
  ASSERT_TRUE(b1->Command("serving", kHangTimeout, &error)) << error;
  const absl::Time serving = absl::Now();
  // b1 answers a call started after it serves again.
  EXPECT_TRUE(runner.WaitForAnswerFrom("b1", serving, kHangTimeout));
  runner.Stop();
  ASSERT_TRUE(runner.WaitAllDone(kHangTimeout));

  const std::vector<CallRecord> records = runner.Records();
  EXPECT_EQ(Failures(records), "");
  // No call started kHealthBound after b1 confirmed NOT_SERVING reaches it.
  absl::Time last_b1 = absl::InfinitePast();
  for (size_t i = FirstStartedAt(records, asked);
       i < records.size() && records[i].start < asked_to_serve; ++i) {
    if (records[i].backend == "b1") last_b1 = records[i].start;
  }
  EXPECT_LT(last_b1, not_serving + kHealthBound)
      << "b1's last call started " << (last_b1 - not_serving)
      << " after it confirmed NOT_SERVING";
  // From the bound on, b0 and b2 share every call.
  const size_t from = FirstStartedAt(records, not_serving + kHealthBound);
  const size_t to = FirstStartedAt(records, asked_to_serve);
  ExpectEvenSpread(CountByBackend(records, from, to), {"b0", "b2"},
                   static_cast<int64_t>(to - from));
}

// (d) pick_first tries the addresses in order: past a refusing port, every
// call goes to the first backend; once it shuts down, to the second.
TEST(LoadBalancingTest, PickFirstUsesTheFirstReachableAndFailsOver) {
  RefusingPort closed;
  std::unique_ptr<ServerProcess> b1 = StartBackend("127.0.0.1:0", "b1");
  std::unique_ptr<ServerProcess> b2 = StartBackend("127.0.0.1:0", "b2");
  ASSERT_TRUE(b1 != nullptr && b2 != nullptr);
  std::shared_ptr<Channel> channel =
      CreateChannel(Ipv4Target({closed.port(), b1->port(), b2->port()}));

  CallRunner::Options run;
  run.in_flight = 16;
  run.wait_for_ready = true;
  CallRunner runner(channel, run);
  ASSERT_TRUE(runner.WaitForCompleted(kPhaseCalls, kHangTimeout));
  const absl::Time killed = absl::Now();
  Terminate(*b1);
  const absl::Time exited = absl::Now();
  ASSERT_TRUE(
      runner.WaitForCompletedStartedAfter(exited, kPhaseCalls, kHangTimeout))
      << runner.completed() << " calls completed";
  runner.Stop();
  ASSERT_TRUE(runner.WaitAllDone(kHangTimeout));

  const std::vector<CallRecord> records = runner.Records();
  EXPECT_EQ(Failures(records), "");
  const size_t before = FirstStartedAt(records, killed);
  const size_t after = FirstStartedAt(records, exited);
  EXPECT_EQ(Describe(CountByBackend(records, 0, before)),
            absl::StrCat("b1=", before));
  EXPECT_EQ(Describe(CountByBackend(records, after, records.size())),
            absl::StrCat("b2=", records.size() - after));
}

// (e) A round_robin channel is READY while its backends serve; with every
// backend gone it is in TRANSIENT_FAILURE (rpc/channel.h: round_robin's
// state is READY while any subchannel is, else CONNECTING while any
// connects, else TRANSIENT_FAILURE), and a call without wait_for_ready
// fails with UNAVAILABLE and the connect error.
TEST(LoadBalancingTest, RoundRobinChannelStateFollowsItsBackends) {
  std::unique_ptr<ServerProcess> b0 = StartBackend("127.0.0.1:0", "b0");
  std::unique_ptr<ServerProcess> b1 = StartBackend("127.0.0.1:0", "b1");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr);
  ChannelOptions options;
  options.lb_policy = "round_robin";
  std::shared_ptr<Channel> channel =
      CreateChannel(Ipv4Target({b0->port(), b1->port()}), options);
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kIdle);
  ASSERT_TRUE(channel->WaitForConnected(absl::Now() + kHangTimeout));
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);

  Terminate(*b0);
  Terminate(*b1);
  // Through CONNECTING (the subchannels reconnect at once) to
  // TRANSIENT_FAILURE.
  const absl::Time deadline = absl::Now() + kHangTimeout;
  std::vector<std::string> states;
  ConnectivityState state = channel->GetState(false);
  states.emplace_back(ConnectivityStateName(state));
  while (state != ConnectivityState::kTransientFailure &&
         channel->WaitForStateChange(state, deadline)) {
    state = channel->GetState(false);
    states.emplace_back(ConnectivityStateName(state));
  }
  ASSERT_EQ(state, ConnectivityState::kTransientFailure)
      << "states seen: " << absl::StrJoin(states, " ");
  for (const std::string& seen : states) {
    EXPECT_NE(seen, "IDLE") << absl::StrJoin(states, " ");
    EXPECT_NE(seen, "SHUTDOWN") << absl::StrJoin(states, " ");
  }

  ClientContext context;  // not wait_for_ready
  context.set_timeout(kHangTimeout);
  SimpleRequest request;
  SimpleResponse response;
  const Status status = channel->UnaryCall(
      &context, TestService::kUnaryCallPath, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr("connect to 127.0.0.1:"));
  EXPECT_THAT(status.message(), HasSubstr("Connection refused"));
}

// (f) "unix:/path", "unix:///path" and "unix-abstract:name" targets reach
// backends listening there.
TEST(LoadBalancingTest, UnixTargetsReachTheirBackends) {
  TempDir dir;
  const std::string path = dir.File("f.sock");
  const std::string abstract_name = absl::StrCat(
      "h2rpc_lb_test_", getpid(), "_", absl::ToUnixNanos(absl::Now()));
  std::unique_ptr<ServerProcess> by_path =
      StartBackend(absl::StrCat("unix:", path), "by_path");
  std::unique_ptr<ServerProcess> abstract =
      StartBackend(absl::StrCat("unix-abstract:", abstract_name), "abstract");
  ASSERT_TRUE(by_path != nullptr && abstract != nullptr);
  EXPECT_EQ(by_path->port(), 0);
  EXPECT_EQ(abstract->port(), 0);

  const std::pair<std::string, std::string> cases[] = {
      {absl::StrCat("unix:", path), "by_path"},
      {absl::StrCat("unix://", path), "by_path"},
      {absl::StrCat("unix-abstract:", abstract_name), "abstract"},
  };
  for (const auto& [target, name] : cases) {
    std::shared_ptr<Channel> channel = CreateChannel(target);
    ClientContext context;
    context.set_timeout(kHangTimeout);
    SimpleRequest request;
    SimpleResponse response;
    const Status status = channel->UnaryCall(
        &context, TestService::kUnaryCallPath, request, &response);
    EXPECT_TRUE(status.ok()) << target << ": " << status.ToString();
    EXPECT_EQ(response.hostname(), name) << target;
  }
}

// Failed calls among `records[from, to)`.
int64_t FailedIn(const std::vector<CallRecord>& records, size_t from,
                 size_t to) {
  int64_t failed = 0;
  for (size_t i = from; i < to && i < records.size(); ++i) {
    failed += records[i].done && records[i].code != StatusCode::kOk;
  }
  return failed;
}

// (g) Outlier detection (gRPC's A50): a backend that fails half its calls
// but passes its health checks leaves the rotation once an interval has
// counted them; under plain round_robin it keeps failing a sixth of all
// calls.
TEST(LoadBalancingTest, OutlierDetectionEjectsABackendFailingHalfItsCalls) {
  std::unique_ptr<ServerProcess> b0 = StartBackend("127.0.0.1:0", "b0");
  std::unique_ptr<ServerProcess> b1 = StartBackend("127.0.0.1:0", "b1");
  std::unique_ptr<ServerProcess> b2 = StartBackend("127.0.0.1:0", "b2");
  ASSERT_TRUE(b0 != nullptr && b1 != nullptr && b2 != nullptr);
  std::string error;
  ASSERT_TRUE(b2->Command("fail 50", kHangTimeout, &error)) << error;
  const std::string target = Ipv4Target({b0->port(), b1->port(), b2->port()});

  // Without outlier detection: b2's failures go on.
  {
    ChannelOptions options;
    options.lb_policy = "round_robin";
    std::shared_ptr<Channel> channel = CreateChannel(target, options);
    std::string seen;
    ASSERT_TRUE(AllAnswer(*channel, {"b0", "b1", "b2"}, kHangTimeout, &seen))
        << "answered: " << seen;
    CallRunner::Options run;
    run.in_flight = 16;
    run.total = 3000;
    CallRunner runner(channel, run);
    ASSERT_TRUE(runner.WaitAllDone(kHangTimeout));
    const std::vector<CallRecord> records = runner.Records();
    // A sixth of 3000 (b2's third, half of it failing), give or take.
    EXPECT_GT(FailedIn(records, 0, records.size()), 300)
        << Describe(CountByBackend(records, 0, records.size()));
  }

  ChannelOptions options;
  options.service_config = R"({"loadBalancingConfig": [
      {"outlier_detection_experimental": {
         "interval": "0.1s", "baseEjectionTime": "60s",
         "maxEjectionPercent": 34,
         "failurePercentageEjection": {"threshold": 30, "requestVolume": 20,
                                       "minimumHosts": 3},
         "childPolicy": [{"round_robin": {}}]}}]})";
  std::shared_ptr<Channel> channel = CreateChannel(target, options);
  CallRunner::Options run;
  run.in_flight = 16;
  CallRunner runner(channel, run);
  // Ejected: the latest 500 calls all succeeded.
  ASSERT_TRUE(WaitFor([&] {
    const std::vector<CallRecord> records = runner.Records();
    size_t done = 0;
    while (done < records.size() && records[done].done) ++done;
    return done >= 500 && FailedIn(records, done - 500, done) == 0;
  })) << "b2 was never ejected";
  const absl::Time ejected = absl::Now();
  ASSERT_TRUE(
      runner.WaitForCompletedStartedAfter(ejected, kPhaseCalls, kHangTimeout));
  runner.Stop();
  ASSERT_TRUE(runner.WaitAllDone(kHangTimeout));
  const std::vector<CallRecord> records = runner.Records();
  const size_t after = FirstStartedAt(records, ejected);
  EXPECT_EQ(FailedIn(records, after, records.size()), 0);
  const std::map<std::string, int64_t> counts =
      CountByBackend(records, after, records.size());
  EXPECT_EQ(counts.count("b2"), 0u) << Describe(counts);
  EXPECT_EQ(counts.size(), 2u) << Describe(counts);
}

}  // namespace
}  // namespace h2rpc
