// A load-balancing policy plugin written against h2rpc's public headers
// alone (rpc/load_balancing.h; see docs/scaling-out.md): "zone_aware"
// sends calls round robin to the READY backends of its own zone (the
// service config names it: {"zone_aware": {"zone": "b"}}) and to the
// others only while none of its zone is READY. The zone of each backend is
// an attribute its resolver gives; here a small resolver for "zones:"
// targets ("zones:127.0.0.1:5001@a,127.0.0.1:5002@b"). Built and run by
// `tools/bazel test //docs/examples:all`: calls go to zone b once it is
// connected, and to zone a once zone b's server is gone.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "proto/grpc/testing/test.h2rpc.pb.h"
#include "rpc/channel.h"
#include "rpc/load_balancing.h"
#include "rpc/resolver.h"
#include "rpc/server.h"

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::TestService;

// --- The policy ---

class ZoneAwarePolicy final : public h2rpc::LbPolicy {
 public:
  ZoneAwarePolicy(Helper* helper, std::string zone)
      : helper_(helper), zone_(std::move(zone)) {}

  void UpdateAddresses(
      const std::vector<h2rpc::ResolvedAddress>& addresses) override {
    // Keeps the subchannels of addresses still listed; dropping the others
    // orphans them (their connections drain).
    std::vector<h2rpc::SubchannelPtr> old = std::move(subchannels_);
    subchannels_.clear();
    for (const h2rpc::ResolvedAddress& address : addresses) {
      h2rpc::SubchannelPtr subchannel;
      for (h2rpc::SubchannelPtr& candidate : old) {
        if (candidate != nullptr &&
            candidate->address().address == address.address) {
          subchannel = std::move(candidate);
        }
      }
      if (subchannel == nullptr) {
        subchannel = helper_->CreateSubchannel(address);
        if (!idle_) subchannel->RequestConnection();
      }
      subchannels_.push_back(std::move(subchannel));
    }
    Report();
  }

  void ExitIdle() override {
    idle_ = false;
    for (auto& subchannel : subchannels_) subchannel->RequestConnection();
    Report();
  }

  // Runs for every call: no allocation, no lock.
  h2rpc::LbSubchannel* Pick() override {
    std::vector<h2rpc::LbSubchannel*>& ready =
        local_.empty() ? remote_ : local_;
    if (ready.empty()) return nullptr;
    return ready[next_++ % ready.size()];
  }

  void OnSubchannelStateChange(h2rpc::LbSubchannel* subchannel) override {
    if (subchannel->state() == h2rpc::ConnectivityState::kIdle) {
      subchannel->RequestConnection();  // its connection ended: reconnect
    }
    if (subchannel->state() == h2rpc::ConnectivityState::kTransientFailure) {
      last_error_ = subchannel->last_error();
      helper_->RequestReresolution();
    }
    Report();
  }

 private:
  static std::string ZoneOf(const h2rpc::ResolvedAddress& address) {
    for (const auto& [key, value] : address.attributes) {
      if (key == "zone") return value;
    }
    return "";
  }

  // Sorts the READY subchannels by zone and tells the channel the state.
  void Report() {
    local_.clear();
    remote_.clear();
    bool connecting = false;
    for (const auto& subchannel : subchannels_) {
      switch (subchannel->state()) {
        case h2rpc::ConnectivityState::kReady:
          (ZoneOf(subchannel->address()) == zone_ ? local_ : remote_)
              .push_back(subchannel.get());
          break;
        case h2rpc::ConnectivityState::kConnecting:
        case h2rpc::ConnectivityState::kIdle:
          connecting = true;
          break;
        default:
          break;
      }
    }
    if (!local_.empty() || !remote_.empty()) {
      helper_->UpdateState(h2rpc::ConnectivityState::kReady, h2rpc::Status());
    } else if (idle_) {
      helper_->UpdateState(h2rpc::ConnectivityState::kIdle, h2rpc::Status());
    } else if (connecting) {
      helper_->UpdateState(h2rpc::ConnectivityState::kConnecting,
                           h2rpc::Status());
    } else {
      helper_->UpdateState(h2rpc::ConnectivityState::kTransientFailure,
                           last_error_);
    }
  }

  Helper* const helper_;
  const std::string zone_;
  std::vector<h2rpc::SubchannelPtr> subchannels_;
  std::vector<h2rpc::LbSubchannel*> local_;   // READY, in zone_
  std::vector<h2rpc::LbSubchannel*> remote_;  // READY, elsewhere
  size_t next_ = 0;
  bool idle_ = true;
  h2rpc::Status last_error_;
};

class ZoneAwareFactory final : public h2rpc::LbPolicyFactory {
 public:
  std::string name() const override { return "zone_aware"; }
  // {"zone": "b"}: a zone is required.
  h2rpc::Status CheckConfig(absl::string_view config) const override {
    if (Zone(config).empty()) {
      return h2rpc::Status(h2rpc::StatusCode::kInvalidArgument,
                           "zone: must be a non-empty string");
    }
    return h2rpc::Status();
  }
  std::unique_ptr<h2rpc::LbPolicy> Create(h2rpc::LbPolicy::Helper* helper,
                                          absl::string_view config) override {
    return std::make_unique<ZoneAwarePolicy>(helper, Zone(config));
  }

 private:
  static std::string Zone(absl::string_view config) {
    const nlohmann::json json =
        nlohmann::json::parse(config.begin(), config.end(), nullptr, false);
    if (!json.is_object()) return "";
    auto zone = json.find("zone");
    return zone != json.end() && zone->is_string() ? zone->get<std::string>()
                                                   : "";
  }
};

// --- A resolver that gives each address its zone ---

class ZonesResolver final : public h2rpc::Resolver {
 public:
  ZonesResolver(std::string list, h2rpc::ResolverChannel* channel)
      : list_(std::move(list)), channel_(channel) {}
  void ResolveNow() override {
    h2rpc::ResolverResult result;
    for (absl::string_view entry : absl::StrSplit(list_, ',')) {
      std::pair<std::string, std::string> address_zone =
          absl::StrSplit(entry, '@');
      result.addresses.push_back(
          {address_zone.first, {{"zone", address_zone.second}}});
    }
    channel_->Update(std::move(result));
  }

 private:
  const std::string list_;
  h2rpc::ResolverChannel* const channel_;
};

class ZonesResolverFactory final : public h2rpc::ResolverFactory {
 public:
  std::string scheme() const override { return "zones"; }
  std::string DefaultAuthority(const h2rpc::ResolverTarget&) const override {
    return "zones.example";
  }
  std::unique_ptr<h2rpc::Resolver> Create(
      const h2rpc::ResolverTarget& target,
      h2rpc::ResolverChannel* channel) override {
    return std::make_unique<ZonesResolver>(target.endpoint, channel);
  }
};

// --- Two servers, one per zone ---

class NamedService final : public TestService::Service {
 public:
  explicit NamedService(std::string name) : name_(std::move(name)) {}
  h2rpc::Status UnaryCall(h2rpc::ServerContext*, const SimpleRequest*,
                          SimpleResponse* response) override {
    response->set_hostname(name_);
    return h2rpc::Status();
  }

 private:
  const std::string name_;
};

std::unique_ptr<h2rpc::Server> Serve(NamedService* service, int* port) {
  h2rpc::Server::Builder builder;
  builder.AddListeningPort("127.0.0.1:0", port);
  service->AddTo(builder);
  h2rpc::Status status;
  return builder.BuildAndStart(&status);
}

// Who answers a call (waiting for a connection), or why nobody does.
std::string Who(TestService::Stub& stub) {
  h2rpc::ClientContext context;
  context.set_timeout(absl::Seconds(10));
  context.set_wait_for_ready(true);
  SimpleRequest request;
  SimpleResponse response;
  const h2rpc::Status status = stub.UnaryCall(&context, request, &response);
  return status.ok() ? response.hostname() : status.ToString();
}

int main() {
  NamedService in_a("server in a"), in_b("server in b");
  int port_a = 0, port_b = 0;
  std::unique_ptr<h2rpc::Server> server_a = Serve(&in_a, &port_a);
  std::unique_ptr<h2rpc::Server> server_b = Serve(&in_b, &port_b);
  if (server_a == nullptr || server_b == nullptr) return 1;

  // Once per process, before the channels that use them.
  if (!h2rpc::RegisterLbPolicyFactory(std::make_shared<ZoneAwareFactory>())
           .ok() ||
      !h2rpc::RegisterResolverFactory(std::make_shared<ZonesResolverFactory>())
           .ok()) {
    return 1;
  }
  h2rpc::ChannelOptions options;
  options.service_config =
      R"({"loadBalancingConfig": [{"zone_aware": {"zone": "b"}}]})";
  TestService::Stub stub(h2rpc::CreateChannel(
      absl::StrCat("zones:127.0.0.1:", port_a, "@a,127.0.0.1:", port_b, "@b"),
      h2rpc::InsecureChannelCredentials(), options));

  // Zone a may connect first and take the first calls; once zone b is
  // READY, every call goes there.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (Who(stub) != "server in b" && absl::Now() < give_up) {
  }
  bool all_in_b = true;
  for (int i = 0; i < 20; ++i)
    all_in_b = all_in_b && Who(stub) == "server in b";
  server_b->Shutdown(absl::Now());  // zone b goes away
  std::string after;
  while ((after = Who(stub)) != "server in a" && absl::Now() < give_up) {
  }
  std::printf("zone b answered all 20: %s; then: %s\n", all_in_b ? "yes" : "no",
              after.c_str());
  return all_in_b && after == "server in a" ? 0 : 1;
}
