#ifndef H2RPC_RPC_INTERNAL_LB_FAKE_LB_HELPER_H_
#define H2RPC_RPC_INTERNAL_LB_FAKE_LB_HELPER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "rpc/connectivity_state.h"
#include "rpc/load_balancing.h"
#include "rpc/status.h"

namespace h2rpc::internal {

// For policy tests: subchannels whose state the test sets, timers the test
// fires, and a helper that records what the policy reports.
class FakeLbHelper final : public LbPolicy::Helper {
 public:
  class FakeSubchannel final : public LbSubchannel {
   public:
    explicit FakeSubchannel(const ResolvedAddress& address)
        : LbSubchannel(address) {}
    ConnectivityState state() const override { return state_; }
    const Status& last_error() const override { return last_error_; }
    void RequestConnection() override {
      if (state_ == ConnectivityState::kIdle) ++connection_requests;
    }

    // The port of "127.0.0.1:<port>".
    int port() const {
      int port = 0;
      const std::string& text = address().address;
      return absl::SimpleAtoi(text.substr(text.rfind(':') + 1), &port) ? port
                                                                       : -1;
    }
    // Sets the state and reports it to `policy`, as a real subchannel does.
    void Set(LbPolicy* policy, ConnectivityState state,
             const std::string& error = "") {
      state_ = state;
      last_error_ = state == ConnectivityState::kTransientFailure
                        ? Status(StatusCode::kUnavailable, error)
                        : Status();
      policy->OnSubchannelStateChange(this);
    }
    // A call on it ended, as the channel reports it.
    void EndCall(const Status& status, const Metadata& trailers = {}) {
      if (call_observer() != nullptr) {
        call_observer()->OnCallEnded(this, status, trailers);
      }
    }

    void WatchLoadReports(LbLoadReportWatcher* watcher,
                          absl::Duration interval) override {
      load_report_watcher = watcher;
      load_report_interval = interval;
    }
    // Its backend sent `report` out of band, as the channel reports it.
    void SendLoadReport(absl::string_view report) {
      if (load_report_watcher != nullptr) {
        load_report_watcher->OnLoadReport(this, report);
      }
    }

    int connection_requests = 0;
    bool orphaned = false;
    LbLoadReportWatcher* load_report_watcher = nullptr;
    absl::Duration load_report_interval;

   private:
    void Orphan() override { orphaned = true; }

    ConnectivityState state_ = ConnectivityState::kIdle;
    Status last_error_;
  };

  SubchannelPtr CreateSubchannel(const ResolvedAddress& address) override {
    subchannels.push_back(std::make_unique<FakeSubchannel>(address));
    return SubchannelPtr(subchannels.back().get());
  }
  void UpdateState(ConnectivityState state, const Status& error) override {
    this->state = state;
    this->error = error;
    ++updates;
  }
  void RequestReresolution() override { ++reresolution_requests; }
  uint64_t StartTimer(absl::Duration delay,
                      absl::AnyInvocable<void()> task) override {
    timers.emplace(next_timer_id, Timer{delay, std::move(task)});
    return next_timer_id++;
  }
  void CancelTimer(uint64_t id) override { timers.erase(id); }
  const std::string& target() const override { return target_; }

  // Runs the earliest-started pending timer; false if none is pending.
  bool FireTimer() {
    if (timers.empty()) return false;
    absl::AnyInvocable<void()> task = std::move(timers.begin()->second.task);
    timers.erase(timers.begin());
    task();
    return true;
  }

  // The last subchannel made for "127.0.0.1:<port>", null if none.
  FakeSubchannel* For(int port) {
    for (auto it = subchannels.rbegin(); it != subchannels.rend(); ++it) {
      if ((*it)->port() == port) return it->get();
    }
    return nullptr;
  }

  struct Timer {
    absl::Duration delay;
    absl::AnyInvocable<void()> task;
  };

  // Every subchannel ever made (orphaned ones stay, flagged).
  std::vector<std::unique_ptr<FakeSubchannel>> subchannels;
  ConnectivityState state = ConnectivityState::kIdle;
  Status error;
  int updates = 0;
  int reresolution_requests = 0;
  std::map<uint64_t, Timer> timers;  // pending, by id (start order)
  uint64_t next_timer_id = 1;

 private:
  const std::string target_ = "fake:target";
};

// "127.0.0.1:<port>" for each port.
inline std::vector<ResolvedAddress> LoopbackAddresses(std::vector<int> ports) {
  std::vector<ResolvedAddress> out;
  for (int port : ports) {
    out.push_back(ResolvedAddress{absl::StrCat("127.0.0.1:", port), {}});
  }
  return out;
}

// The port of a FakeSubchannel `picked`, 0 for null.
inline int PortOf(const LbSubchannel* picked) {
  return picked == nullptr
             ? 0
             : static_cast<const FakeLbHelper::FakeSubchannel*>(picked)->port();
}

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_LB_FAKE_LB_HELPER_H_
