#ifndef H2RPC_RPC_INTERNAL_LB_FAKE_LB_HELPER_H_
#define H2RPC_RPC_INTERNAL_LB_FAKE_LB_HELPER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rpc/connectivity_state.h"
#include "rpc/internal/lb/lb_policy.h"
#include "rpc/status.h"
#include "transport/io/socket.h"

namespace h2rpc::internal {

// For policy tests: subchannels whose state the test sets, and a helper
// that records what the policy reports.
class FakeLbHelper final : public LbPolicy::Helper {
 public:
  class FakeSubchannel final : public LbSubchannel {
   public:
    FakeSubchannel(FakeLbHelper* helper,
                   const transport::io::SocketAddress& address)
        : helper_(helper), address_(address) {}
    const transport::io::SocketAddress& address() const override {
      return address_;
    }
    ConnectivityState state() const override { return state_; }
    const Status& last_error() const override { return last_error_; }
    void RequestConnection() override {
      if (state_ == ConnectivityState::kIdle) ++connection_requests;
    }
    void StartCall(transport::http2::ClientStream*) override {}

    // Sets the state and reports it to `policy`, as a real subchannel does.
    void Set(LbPolicy* policy, ConnectivityState state,
             const std::string& error = "") {
      state_ = state;
      last_error_ = state == ConnectivityState::kTransientFailure
                        ? Status(StatusCode::kUnavailable, error)
                        : Status();
      policy->OnSubchannelStateChange(this);
    }

    int connection_requests = 0;
    bool orphaned = false;

   private:
    void Orphan() override { orphaned = true; }

    FakeLbHelper* const helper_;
    const transport::io::SocketAddress address_;
    ConnectivityState state_ = ConnectivityState::kIdle;
    Status last_error_;
  };

  SubchannelPtr CreateSubchannel(
      const transport::io::SocketAddress& address) override {
    subchannels.push_back(std::make_unique<FakeSubchannel>(this, address));
    return SubchannelPtr(subchannels.back().get());
  }
  void UpdateState(ConnectivityState state, const Status& error) override {
    this->state = state;
    this->error = error;
    ++updates;
  }
  void RequestReresolution() override { ++reresolution_requests; }

  // The last subchannel made for "127.0.0.1:<port>", null if none.
  FakeSubchannel* For(int port) {
    for (auto it = subchannels.rbegin(); it != subchannels.rend(); ++it) {
      if ((*it)->address().port() == port) return it->get();
    }
    return nullptr;
  }

  // Every subchannel ever made (orphaned ones stay, flagged).
  std::vector<std::unique_ptr<FakeSubchannel>> subchannels;
  ConnectivityState state = ConnectivityState::kIdle;
  Status error;
  int updates = 0;
  int reresolution_requests = 0;
};

// "127.0.0.1:<port>" for each port.
inline std::vector<transport::io::SocketAddress> LoopbackAddresses(
    std::vector<int> ports) {
  std::vector<transport::io::SocketAddress> out;
  for (int port : ports) {
    std::vector<transport::io::SocketAddress> one;
    if (!transport::io::ResolveNumericTarget(absl::StrCat("127.0.0.1:", port),
                                             &one)
             .ok()) {
      return {};
    }
    out.push_back(one.front());
  }
  return out;
}

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_FAKE_LB_HELPER_H_
